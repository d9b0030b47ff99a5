"""API database: cell, host and instance mappings.

Revision ID: b2d4f6a8c0e1
Revises:
Create Date: 2026-11-25 13:00:00

The tables as ``scheduler/db/api_models.py`` first defines them, with
Nova's names and columns. Types are spelled out here, not imported from
the models, so that this file keeps describing the same schema when the
models move on.
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = 'b2d4f6a8c0e1'
down_revision = None
branch_labels = None
depends_on = None

TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')
MYSQL_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def _common(table):
    return [sa.Column('id', sa.Integer(), nullable=False,
                      autoincrement=True),
            sa.Column('created_at', TIMESTAMP, nullable=False),
            sa.Column('updated_at', TIMESTAMP, nullable=True),
            sa.PrimaryKeyConstraint('id', name='pk_%s' % table)]


def _cell_id(table, nullable):
    return [sa.Column('cell_id', sa.Integer(), nullable=nullable),
            sa.ForeignKeyConstraint(
                ['cell_id'], ['cell_mappings.id'],
                name='fk_%s_cell_id_cell_mappings' % table)]


def upgrade():
    op.create_table(
        'cell_mappings',
        *_common('cell_mappings'),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('transport_url', sa.Text(), nullable=True),
        sa.Column('database_connection', sa.Text(), nullable=True),
        sa.Column('disabled', sa.Boolean(), nullable=False),
        sa.UniqueConstraint('uuid', name='uq_cell_mappings_uuid'),
        **MYSQL_OPTIONS)
    op.create_table(
        'host_mappings',
        *_common('host_mappings'),
        *_cell_id('host_mappings', nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.UniqueConstraint('host', name='uq_host_mappings_host'),
        **MYSQL_OPTIONS)
    op.create_index('ix_host_mappings_cell_id', 'host_mappings', ['cell_id'])
    op.create_table(
        'instance_mappings',
        *_common('instance_mappings'),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        *_cell_id('instance_mappings', nullable=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=True),
        sa.Column('queued_for_delete', sa.Boolean(), nullable=False),
        sa.UniqueConstraint('instance_uuid',
                            name='uq_instance_mappings_instance_uuid'),
        **MYSQL_OPTIONS)
    op.create_index('ix_instance_mappings_cell_id', 'instance_mappings',
                    ['cell_id'])
    op.create_index('ix_instance_mappings_project_id', 'instance_mappings',
                    ['project_id'])


def downgrade():
    op.drop_table('instance_mappings')
    op.drop_table('host_mappings')
    op.drop_table('cell_mappings')
