"""The part of Nova's schema that Nova mode reads, as SQLAlchemy Core.

Only the tables and columns :mod:`scheduler.nova.nova_reader` reads, with
Nova's names and types (``nova/db/api/models.py`` and
``nova/db/main/models.py`` of Nova 34); nothing here is ever created,
altered or written in Nova's databases. Nova's other columns are simply
not named. The tests build these tables in scratch SQLite files to stand
in for Nova's databases::

    rows = connection.execute(sa.select(COMPUTE_NODES.c.uuid).where(
        COMPUTE_NODES.c.deleted == 0)).all()

Nova soft-deletes the rows of its cell databases: ``deleted`` is 0 while
a row exists, its id once deleted. The API database's tables here are
hard-deleted.
"""

import sqlalchemy as sa

# -- the API database ([api_database] connection) ----------------------------

API_METADATA = sa.MetaData()

CELL_MAPPINGS = sa.Table(
    'cell_mappings', API_METADATA,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.String(255)),
    sa.Column('database_connection', sa.Text),
    sa.Column('disabled', sa.Boolean, default=False))

HOST_MAPPINGS = sa.Table(
    'host_mappings', API_METADATA,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('cell_id', sa.Integer, sa.ForeignKey('cell_mappings.id'),
              nullable=False),
    sa.Column('host', sa.String(255), nullable=False))

AGGREGATES = sa.Table(
    'aggregates', API_METADATA,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('uuid', sa.String(36)),
    sa.Column('name', sa.String(255)),
    sa.Column('created_at', sa.DateTime),
    sa.Column('updated_at', sa.DateTime))

AGGREGATE_HOSTS = sa.Table(
    'aggregate_hosts', API_METADATA,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('host', sa.String(255)),
    sa.Column('aggregate_id', sa.Integer, sa.ForeignKey('aggregates.id'),
              nullable=False))

AGGREGATE_METADATA = sa.Table(
    'aggregate_metadata', API_METADATA,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('key', sa.String(255), nullable=False),
    sa.Column('value', sa.String(255), nullable=False),
    sa.Column('aggregate_id', sa.Integer, sa.ForeignKey('aggregates.id'),
              nullable=False))

# Nova's cell0: where instances that failed to schedule go; it has no
# hosts.
CELL0_UUID = '00000000-0000-0000-0000-000000000000'

# -- a cell database (cell_mappings.database_connection) ----------------------

CELL_METADATA = sa.MetaData()

COMPUTE_NODES = sa.Table(
    'compute_nodes', CELL_METADATA,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('uuid', sa.String(36)),
    sa.Column('host', sa.String(255)),
    sa.Column('hypervisor_hostname', sa.String(255)),
    sa.Column('hypervisor_type', sa.Text, nullable=False),
    sa.Column('hypervisor_version', sa.Integer, nullable=False),
    sa.Column('host_ip', sa.String(39)),
    sa.Column('cpu_info', sa.Text, nullable=False),
    sa.Column('disk_available_least', sa.Integer),
    sa.Column('current_workload', sa.Integer),
    sa.Column('running_vms', sa.Integer),
    sa.Column('deleted', sa.Integer, default=0))

SERVICES = sa.Table(
    'services', CELL_METADATA,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('host', sa.String(255)),
    sa.Column('binary', sa.String(255)),
    sa.Column('topic', sa.String(255)),
    sa.Column('disabled', sa.Boolean, default=False),
    sa.Column('disabled_reason', sa.String(255)),
    sa.Column('forced_down', sa.Boolean, default=False),
    sa.Column('last_seen_up', sa.DateTime),
    sa.Column('version', sa.Integer, default=0),
    sa.Column('created_at', sa.DateTime),
    sa.Column('updated_at', sa.DateTime),
    sa.Column('deleted', sa.Integer, default=0))

INSTANCES = sa.Table(
    'instances', CELL_METADATA,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('display_name', sa.String(255)),
    sa.Column('project_id', sa.String(255)),
    sa.Column('user_id', sa.String(255)),
    sa.Column('host', sa.String(255)),
    sa.Column('node', sa.String(255)),
    sa.Column('vm_state', sa.String(255)),
    sa.Column('task_state', sa.String(255)),
    sa.Column('availability_zone', sa.String(255)),
    sa.Column('deleted', sa.Integer, default=0))

# The binary of Nova's compute services.
NOVA_COMPUTE = 'nova-compute'
