"""Soft delete of instances, as Nova keeps it.

Revision ID: 8b3f6d0e2a91
Revises: 5d1e8f2c9b47
Create Date: 2026-12-02 10:00:00

A deleted instance keeps its row: ``deleted_at`` says when it was deleted
and ``deleted`` holds the row's own id (0 while it exists), Nova's
convention, so that a unique key over ``(..., deleted)`` would allow one
live row and any number of deleted ones.
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '8b3f6d0e2a91'
down_revision = '5d1e8f2c9b47'
branch_labels = None
depends_on = None

TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')


def upgrade():
    with op.batch_alter_table('instances') as batch:
        batch.add_column(sa.Column('deleted_at', TIMESTAMP, nullable=True))
        batch.add_column(sa.Column('deleted', sa.Integer(), nullable=False,
                                   server_default='0'))


def downgrade():
    with op.batch_alter_table('instances') as batch:
        batch.drop_column('deleted')
        batch.drop_column('deleted_at')
