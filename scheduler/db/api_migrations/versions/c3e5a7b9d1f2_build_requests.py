"""API database: build requests.

Revision ID: c3e5a7b9d1f2
Revises: b2d4f6a8c0e1
Create Date: 2026-11-26 13:50:00

The builds the super-conductor accepted and has not yet created in a
cell: one row per instance with its request spec (a JSON document in a
TEXT column), deleted when the instance lands in its cell or cell0.
``fault`` says why one was left behind.
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = 'c3e5a7b9d1f2'
down_revision = 'b2d4f6a8c0e1'
branch_labels = None
depends_on = None

TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')


def upgrade():
    op.create_table(
        'build_requests',
        sa.Column('id', sa.Integer(), nullable=False, autoincrement=True),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('request_spec', sa.Text(), nullable=False),
        sa.Column('fault', sa.Text(), nullable=True),
        sa.Column('created_at', TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_build_requests'),
        sa.UniqueConstraint('instance_uuid',
                            name='uq_build_requests_instance_uuid'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('ix_build_requests_project_id', 'build_requests',
                    ['project_id'])


def downgrade():
    op.drop_table('build_requests')
