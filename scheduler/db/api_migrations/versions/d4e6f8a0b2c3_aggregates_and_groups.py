"""API database: host aggregates and server groups.

Revision ID: d4e6f8a0b2c3
Revises: c3e5a7b9d1f2
Create Date: 2026-11-28 10:00:00

``aggregates``, ``aggregate_hosts``, ``aggregate_metadata``,
``instance_groups`` and ``instance_group_members``, with the names,
columns and constraints the cell schema gives them (its initial
migration), so that the same queries run on either database. With
``[api_database]`` set, Gantt reads and writes them here; the cell
databases keep their own tables, unused then.

An API database may share one database with a cell's schema (each tree
keeps its revision in its own version table). The two schemas then share
these five tables, whose definitions are the same: a table the cell
schema already made is kept as it is, and going back to the previous
revision leaves the cell schema's tables in place.
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = 'd4e6f8a0b2c3'
down_revision = 'c3e5a7b9d1f2'
branch_labels = None
depends_on = None

TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')
MYSQL_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}
# The version table of the cell schema's tree (scheduler/db/migrations).
CELL_VERSION_TABLE = 'alembic_version'
TABLES = ('aggregates', 'aggregate_hosts', 'aggregate_metadata',
          'instance_groups', 'instance_group_members')


def _id():
    return sa.Column('id', sa.Integer(), nullable=False, autoincrement=True)


def _timestamps():
    return [sa.Column('created_at', TIMESTAMP, nullable=False),
            sa.Column('updated_at', TIMESTAMP, nullable=True)]


def _string(name, length=255, nullable=True):
    return sa.Column(name, sa.String(length), nullable=nullable)


def _create_aggregates():
    op.create_table(
        'aggregates',
        _id(),
        _string('uuid', 36, nullable=False),
        _string('name', nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_aggregates'),
        sa.UniqueConstraint('uuid', name='uq_aggregates_uuid'),
        sa.UniqueConstraint('name', name='uq_aggregates_name'),
        **MYSQL_OPTIONS)
    op.create_table(
        'aggregate_hosts',
        _id(),
        sa.Column('aggregate_id', sa.Integer(), nullable=False),
        _string('host', nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_aggregate_hosts'),
        sa.UniqueConstraint('aggregate_id', 'host',
                            name='uq_aggregate_hosts_aggregate_id_host'),
        sa.ForeignKeyConstraint(
            ['aggregate_id'], ['aggregates.id'], ondelete='CASCADE',
            name='fk_aggregate_hosts_aggregate_id_aggregates'),
        **MYSQL_OPTIONS)
    op.create_index('ix_aggregate_hosts_host', 'aggregate_hosts', ['host'])
    op.create_table(
        'aggregate_metadata',
        _id(),
        sa.Column('aggregate_id', sa.Integer(), nullable=False),
        _string('key', nullable=False),
        _string('value', nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_aggregate_metadata'),
        sa.UniqueConstraint('aggregate_id', 'key',
                            name='uq_aggregate_metadata_aggregate_id_key'),
        sa.ForeignKeyConstraint(
            ['aggregate_id'], ['aggregates.id'], ondelete='CASCADE',
            name='fk_aggregate_metadata_aggregate_id_aggregates'),
        **MYSQL_OPTIONS)


def _create_instance_groups():
    op.create_table(
        'instance_groups',
        _id(),
        _string('uuid', 36, nullable=False),
        _string('name'),
        _string('project_id'),
        _string('user_id'),
        _string('policy', nullable=False),
        sa.Column('rules', sa.Text(), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_instance_groups'),
        sa.UniqueConstraint('uuid', name='uq_instance_groups_uuid'),
        **MYSQL_OPTIONS)
    op.create_table(
        'instance_group_members',
        _id(),
        sa.Column('group_id', sa.Integer(), nullable=False),
        _string('instance_uuid', 36, nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_instance_group_members'),
        sa.UniqueConstraint(
            'group_id', 'instance_uuid',
            name='uq_instance_group_members_group_id_instance_uuid'),
        sa.ForeignKeyConstraint(
            ['group_id'], ['instance_groups.id'], ondelete='CASCADE',
            name='fk_instance_group_members_group_id_instance_groups'),
        **MYSQL_OPTIONS)
    op.create_index('ix_instance_group_members_instance_uuid',
                    'instance_group_members', ['instance_uuid'])


def _shares_a_cell_schema():
    """Whether this database also holds a cell's schema."""
    return sa.inspect(op.get_bind()).has_table(CELL_VERSION_TABLE)


def upgrade():
    inspector = sa.inspect(op.get_bind())
    shared = _shares_a_cell_schema()
    if not (shared and inspector.has_table('aggregates')):
        _create_aggregates()
    if not (shared and inspector.has_table('instance_groups')):
        _create_instance_groups()


def downgrade():
    if _shares_a_cell_schema():
        return
    for table in reversed(TABLES):
        op.drop_table(table)
