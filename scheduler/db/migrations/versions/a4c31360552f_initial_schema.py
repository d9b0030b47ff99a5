"""Initial schema: services, compute nodes, aggregates, instances, server
groups and allocations.

Revision ID: a4c31360552f
Revises:
Create Date: 2026-11-21 09:00:00

The tables as ``scheduler/db/models.py`` first defines them. Types are
spelled out here rather than imported from the models, so that this file
keeps describing the same schema when the models move on.
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = 'a4c31360552f'
down_revision = None
branch_labels = None
depends_on = None

# Microsecond precision on MariaDB/MySQL, whose DATETIME keeps seconds only.
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')
# JSON documents are stored as TEXT on every backend (models.JSONText).
JSON_TEXT = sa.Text()
# InnoDB for row locks and foreign keys; utf8mb4 whatever the database's
# default character set is.
MYSQL_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def _id():
    return sa.Column('id', sa.Integer(), nullable=False, autoincrement=True)


def _timestamps():
    return [sa.Column('created_at', TIMESTAMP, nullable=False),
            sa.Column('updated_at', TIMESTAMP, nullable=True)]


def _int(name):
    return sa.Column(name, sa.Integer(), nullable=False)


def _string(name, length=255, nullable=True):
    return sa.Column(name, sa.String(length), nullable=nullable)


def _create_services():
    op.create_table(
        'services',
        _id(),
        _string('host', nullable=False),
        _string('binary', nullable=False),
        _string('topic', nullable=False),
        sa.Column('disabled', sa.Boolean(), nullable=False),
        _string('disabled_reason'),
        sa.Column('forced_down', sa.Boolean(), nullable=False),
        sa.Column('last_seen_up', TIMESTAMP, nullable=True),
        _int('report_count'),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_services'),
        sa.UniqueConstraint('host', 'binary',
                            name='uq_services_host_binary'),
        **MYSQL_OPTIONS)


def _create_compute_nodes():
    op.create_table(
        'compute_nodes',
        _id(),
        _string('uuid', 36, nullable=False),
        _string('host', nullable=False),
        _string('hypervisor_hostname', nullable=False),
        _int('vcpus'),
        _int('memory_mb'),
        _int('local_gb'),
        _int('vcpus_used'),
        _int('memory_mb_used'),
        _int('local_gb_used'),
        _int('reserved_vcpus'),
        _int('reserved_memory_mb'),
        _int('reserved_disk_gb'),
        sa.Column('cpu_allocation_ratio', sa.Double(), nullable=True),
        sa.Column('ram_allocation_ratio', sa.Double(), nullable=True),
        sa.Column('disk_allocation_ratio', sa.Double(), nullable=True),
        _string('hypervisor_type'),
        _int('hypervisor_version'),
        _string('host_ip', 39),
        sa.Column('supported_instances', JSON_TEXT, nullable=True),
        sa.Column('stats', JSON_TEXT, nullable=True),
        sa.Column('metrics', JSON_TEXT, nullable=True),
        _int('num_instances'),
        _int('io_workload'),
        sa.Column('mapped', sa.Boolean(), nullable=False),
        _int('generation'),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_compute_nodes'),
        sa.UniqueConstraint('uuid', name='uq_compute_nodes_uuid'),
        sa.UniqueConstraint(
            'host', 'hypervisor_hostname',
            name='uq_compute_nodes_host_hypervisor_hostname'),
        **MYSQL_OPTIONS)
    op.create_index('ix_compute_nodes_host', 'compute_nodes', ['host'])


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
        _int('aggregate_id'),
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
        _int('aggregate_id'),
        _string('key', nullable=False),
        _string('value', nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_aggregate_metadata'),
        sa.UniqueConstraint('aggregate_id', 'key',
                            name='uq_aggregate_metadata_aggregate_id_key'),
        sa.ForeignKeyConstraint(
            ['aggregate_id'], ['aggregates.id'], ondelete='CASCADE',
            name='fk_aggregate_metadata_aggregate_id_aggregates'),
        **MYSQL_OPTIONS)


def _create_instances():
    op.create_table(
        'instances',
        _id(),
        _string('uuid', 36, nullable=False),
        _string('display_name'),
        _string('project_id'),
        _string('user_id'),
        _string('host'),
        _string('node'),
        _string('vm_state', 32, nullable=False),
        _string('task_state', 32),
        _string('availability_zone'),
        sa.Column('flavor', JSON_TEXT, nullable=True),
        sa.Column('request_spec', JSON_TEXT, nullable=True),
        sa.Column('fault', sa.Text(), nullable=True),
        sa.Column('launched_at', TIMESTAMP, nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_instances'),
        sa.UniqueConstraint('uuid', name='uq_instances_uuid'),
        **MYSQL_OPTIONS)
    op.create_index('ix_instances_host', 'instances', ['host'])
    op.create_index('ix_instances_vm_state', 'instances', ['vm_state'])


def _create_instance_groups():
    op.create_table(
        'instance_groups',
        _id(),
        _string('uuid', 36, nullable=False),
        _string('name'),
        _string('project_id'),
        _string('user_id'),
        _string('policy', nullable=False),
        sa.Column('rules', JSON_TEXT, nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_instance_groups'),
        sa.UniqueConstraint('uuid', name='uq_instance_groups_uuid'),
        **MYSQL_OPTIONS)
    op.create_table(
        'instance_group_members',
        _id(),
        _int('group_id'),
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


def _create_allocations():
    op.create_table(
        'allocations',
        _id(),
        _string('consumer_uuid', 36, nullable=False),
        _int('compute_node_id'),
        _int('vcpus'),
        _int('memory_mb'),
        _int('disk_gb'),
        sa.Column('created_at', TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_allocations'),
        sa.UniqueConstraint(
            'consumer_uuid', 'compute_node_id',
            name='uq_allocations_consumer_uuid_compute_node_id'),
        sa.ForeignKeyConstraint(
            ['compute_node_id'], ['compute_nodes.id'], ondelete='CASCADE',
            name='fk_allocations_compute_node_id_compute_nodes'),
        **MYSQL_OPTIONS)
    op.create_index('ix_allocations_consumer_uuid', 'allocations',
                    ['consumer_uuid'])
    op.create_index('ix_allocations_compute_node_id', 'allocations',
                    ['compute_node_id'])


# The API schema's version table: a database that has it shares the
# aggregate and server-group tables (same definitions) with the API
# schema, whichever tree made them first (see the API database's
# revision d4e6f8a0b2c3).
API_VERSION_TABLE = 'alembic_version_api'
SHARED_TABLES = ('aggregates', 'aggregate_hosts', 'aggregate_metadata',
                 'instance_groups', 'instance_group_members')


def _shares_the_api_schema():
    return sa.inspect(op.get_bind()).has_table(API_VERSION_TABLE)


def upgrade():
    inspector = sa.inspect(op.get_bind())
    shared = _shares_the_api_schema()
    _create_services()
    _create_compute_nodes()
    if not (shared and inspector.has_table('aggregates')):
        _create_aggregates()
    _create_instances()
    if not (shared and inspector.has_table('instance_groups')):
        _create_instance_groups()
    _create_allocations()


def downgrade():
    shared = _shares_the_api_schema()
    for table in ('allocations', 'instance_group_members', 'instance_groups',
                  'instances', 'aggregate_metadata', 'aggregate_hosts',
                  'aggregates', 'compute_nodes', 'services'):
        if not (shared and table in SHARED_TABLES):
            op.drop_table(table)
