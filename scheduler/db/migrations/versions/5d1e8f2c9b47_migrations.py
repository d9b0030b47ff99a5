"""Migrations: the record of each move of an instance.

Revision ID: 5d1e8f2c9b47
Revises: a4c31360552f
Create Date: 2026-11-21 10:00:00

Types are spelled out, as in the initial schema, so that this file keeps
describing the same table when the models move on.
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '5d1e8f2c9b47'
down_revision = 'a4c31360552f'
branch_labels = None
depends_on = None

TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')
MYSQL_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def upgrade():
    op.create_table(
        'migrations',
        sa.Column('id', sa.Integer(), nullable=False, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('migration_type', sa.String(32), nullable=False),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('source_host', sa.String(255), nullable=True),
        sa.Column('source_node', sa.String(255), nullable=True),
        sa.Column('dest_host', sa.String(255), nullable=True),
        sa.Column('dest_node', sa.String(255), nullable=True),
        sa.Column('old_flavor', sa.Text(), nullable=True),
        sa.Column('new_flavor', sa.Text(), nullable=True),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('created_at', TIMESTAMP, nullable=False),
        sa.Column('updated_at', TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_migrations'),
        sa.UniqueConstraint('uuid', name='uq_migrations_uuid'),
        **MYSQL_OPTIONS)
    op.create_index('ix_migrations_instance_uuid', 'migrations',
                    ['instance_uuid'])


def downgrade():
    op.drop_table('migrations')
