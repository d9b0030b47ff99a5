"""A Nova deployment for the mirror's tests: Nova's API and cell
databases as SQLite files whose tables are built from
:mod:`scheduler.nova.nova_schema` (the columns Nova mode reads, Nova's
names and types), and the real Placement in process
(``tests/functional/placement_harness.py``) for the providers.

The test writes Nova's rows here as Nova's services would (soft deletes
included) and Placement's through its REST API::

    cloud = NovaCloud(tmp_path, placement)
    node = cloud.add_compute('host1', vcpus=8)
    cloud.allocate(node, VCPU=2)
"""

import datetime
import hashlib
import uuid as uuid_mod

import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.nova import nova_schema as schema

PROJECT = 'a-project'
USER = 'a-user'

# The mirror's tables (mirror_rows).
MIRRORED = ('compute_nodes', 'compute_node_inventories',
            'compute_node_traits', 'services', 'instances', 'aggregates',
            'aggregate_hosts', 'aggregate_metadata')


def by_host(table):
    """``{host: HostState}`` of a HostTable."""
    return {state.host: state for state in table.states}


def mirror_rows():
    """Every row of the mirror's tables (``[database]``)."""
    with db_api.reader() as session:
        return {name: sorted(tuple(row) for row in session.execute(
            sa.text('SELECT * FROM %s' % name))) for name in MIRRORED}


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class NovaCloud:
    """Nova's databases (one API database, cell0 and cell1: SQLite files
    in ``directory``, or the empty databases at ``api_url`` and
    ``cell_url``) and providers in ``placement`` (a placement_harness
    Client)."""

    def __init__(self, directory, placement, api_url=None, cell_url=None):
        self.placement = placement
        self.api_path = directory / 'nova_api.sqlite'
        self.cell_path = directory / 'nova_cell1.sqlite'
        self.api_url = api_url or 'sqlite:///%s' % self.api_path
        self.cell_url = cell_url or 'sqlite:///%s' % self.cell_path
        self.api = sa.create_engine(self.api_url)
        self.cell = sa.create_engine(self.cell_url)
        schema.API_METADATA.create_all(self.api)
        schema.CELL_METADATA.create_all(self.cell)
        self.directory = directory
        self.cell1_uuid = str(uuid_mod.uuid4())
        with self.api.begin() as connection:
            connection.execute(sa.insert(schema.CELL_MAPPINGS), [
                {'id': 1, 'uuid': schema.CELL0_UUID, 'name': 'cell0',
                 'database_connection': 'sqlite:////nonexistent/cell0'},
                {'id': 2, 'uuid': self.cell1_uuid, 'name': 'cell1',
                 'database_connection': self.cell_url}])
        # {name: (cell mapping id, uuid, engine)}
        self.cells = {'cell1': (2, self.cell1_uuid, self.cell)}

    def add_cell(self, name, disabled=False):
        """Another cell database and its mapping; the cell's uuid."""
        url = 'sqlite:///%s' % (self.directory / ('nova_%s.sqlite' % name))
        engine = sa.create_engine(url)
        schema.CELL_METADATA.create_all(engine)
        cell_uuid = str(uuid_mod.uuid4())
        with self.api.begin() as connection:
            cell_id = connection.execute(sa.insert(
                schema.CELL_MAPPINGS).values(
                    uuid=cell_uuid, name=name, database_connection=url,
                    disabled=disabled)).inserted_primary_key[0]
        self.cells[name] = (cell_id, cell_uuid, engine)
        return cell_uuid

    def dispose(self):
        self.api.dispose()
        for _id, _uuid, engine in self.cells.values():
            engine.dispose()

    def digest(self):
        """A digest of both database files (nothing may change them but
        the test)."""
        self.dispose()
        return tuple(hashlib.sha256(path.read_bytes()).hexdigest()
                     for path in (self.api_path, self.cell_path))

    # -- Nova's rows ------------------------------------------------------

    def add_compute(self, host, vcpus=8, memory_mb=8192, disk_gb=100,
                    mapped=True, provider=True, heartbeat=None,
                    cell='cell1', node_uuid=None, **extra):
        """A compute host: its node, nova-compute service, host mapping
        and root provider with inventory; the node's uuid (``node_uuid``
        if given: a provider the test made itself, with ``provider``
        False)."""
        node_uuid = node_uuid or str(uuid_mod.uuid4())
        now = utcnow()
        cell_id, _uuid, engine = self.cells[cell]
        with engine.begin() as connection:
            connection.execute(sa.insert(schema.COMPUTE_NODES).values(
                uuid=node_uuid, host=host, hypervisor_hostname=host,
                hypervisor_type='QEMU', hypervisor_version=8002000,
                cpu_info='{"arch": "x86_64", "model": "Skylake"}',
                host_ip='192.0.2.1', running_vms=0, current_workload=0,
                deleted=0))
            connection.execute(sa.insert(schema.SERVICES).values(
                host=host, binary=schema.NOVA_COMPUTE, topic='compute',
                disabled=False, forced_down=False, created_at=now,
                updated_at=now, last_seen_up=heartbeat or now, deleted=0))
        if mapped:
            with self.api.begin() as connection:
                connection.execute(sa.insert(schema.HOST_MAPPINGS).values(
                    cell_id=cell_id, host=host))
        if provider:
            # max_unit the total, as Nova's virt drivers report them
            # (Placement's own default is 2**31 - 1).
            inventories = {'VCPU': {'total': vcpus, 'max_unit': vcpus,
                                    'allocation_ratio': 4.0},
                           'MEMORY_MB': {'total': memory_mb,
                                         'max_unit': memory_mb,
                                         'reserved': 512},
                           'DISK_GB': {'total': disk_gb,
                                       'max_unit': disk_gb}}
            inventories.update(extra)
            self.placement.post('/resource_providers',
                                {'uuid': node_uuid, 'name': host})
            self.placement.put(
                '/resource_providers/%s/inventories' % node_uuid,
                {'resource_provider_generation': 0,
                 'inventories': inventories})
        return node_uuid

    def update_service(self, host, **values):
        with self.cell.begin() as connection:
            connection.execute(sa.update(schema.SERVICES).where(
                schema.SERVICES.c.host == host).values(
                    updated_at=utcnow(), **values))

    def delete_compute(self, host):
        """Nova's soft delete of the host's node and service."""
        with self.cell.begin() as connection:
            for table in (schema.COMPUTE_NODES, schema.SERVICES):
                connection.execute(sa.update(table).where(
                    table.c.host == host, table.c.deleted == 0).values(
                        deleted=table.c.id))

    def add_instance(self, host, vm_state='active'):
        instance_uuid = str(uuid_mod.uuid4())
        with self.cell.begin() as connection:
            connection.execute(sa.insert(schema.INSTANCES).values(
                uuid=instance_uuid, host=host, node=host,
                vm_state=vm_state, project_id=PROJECT, user_id=USER,
                deleted=0))
        return instance_uuid

    def delete_instance(self, instance_uuid):
        with self.cell.begin() as connection:
            connection.execute(sa.update(schema.INSTANCES).where(
                schema.INSTANCES.c.uuid == instance_uuid).values(
                    deleted=schema.INSTANCES.c.id, vm_state='deleted'))

    def add_aggregate(self, name, hosts, **metadata):
        aggregate_uuid = str(uuid_mod.uuid4())
        with self.api.begin() as connection:
            aggregate_id = connection.execute(sa.insert(
                schema.AGGREGATES).values(
                    uuid=aggregate_uuid, name=name,
                    created_at=utcnow())).inserted_primary_key[0]
            for host in hosts:
                connection.execute(sa.insert(schema.AGGREGATE_HOSTS).values(
                    aggregate_id=aggregate_id, host=host))
            for key, value in metadata.items():
                connection.execute(sa.insert(
                    schema.AGGREGATE_METADATA).values(
                        aggregate_id=aggregate_id, key=key, value=value))
        return aggregate_uuid

    def set_metadata(self, aggregate_uuid, key, value):
        with self.api.begin() as connection:
            aggregate_id = connection.execute(sa.select(
                schema.AGGREGATES.c.id).where(
                    schema.AGGREGATES.c.uuid == aggregate_uuid)).scalar()
            connection.execute(sa.update(schema.AGGREGATE_METADATA).where(
                schema.AGGREGATE_METADATA.c.aggregate_id == aggregate_id,
                schema.AGGREGATE_METADATA.c.key == key).values(value=value))

    def set_cell_connection(self, url):
        with self.api.begin() as connection:
            connection.execute(sa.update(schema.CELL_MAPPINGS).where(
                schema.CELL_MAPPINGS.c.uuid == self.cell1_uuid).values(
                    database_connection=url))

    # -- Placement --------------------------------------------------------

    def generation(self, rp_uuid):
        return self.placement.get(
            '/resource_providers/%s' % rp_uuid)['generation']

    def set_traits(self, rp_uuid, *traits):
        for trait in traits:
            if trait.startswith('CUSTOM_'):
                self.placement.put('/traits/%s' % trait)
        self.placement.put('/resource_providers/%s/traits' % rp_uuid, {
            'traits': list(traits),
            'resource_provider_generation': self.generation(rp_uuid)})

    def set_aggregates(self, rp_uuid, *aggregates):
        self.placement.put('/resource_providers/%s/aggregates' % rp_uuid, {
            'aggregates': list(aggregates),
            'resource_provider_generation': self.generation(rp_uuid)})

    def add_child(self, parent_uuid, **inventories):
        child = str(uuid_mod.uuid4())
        self.placement.post('/resource_providers', {
            'uuid': child, 'name': 'child-' + child,
            'parent_provider_uuid': parent_uuid})
        self.placement.put('/resource_providers/%s/inventories' % child, {
            'resource_provider_generation': 0,
            'inventories': {name: {'total': total}
                            for name, total in inventories.items()}})
        return child

    def allocate(self, amounts_by_provider, consumer=None):
        """An allocation of ``{rp uuid: {class: amount}}``; its consumer."""
        consumer = consumer or str(uuid_mod.uuid4())
        self.placement.put('/allocations/%s' % consumer, {
            'allocations': {rp: {'resources': amounts}
                            for rp, amounts in amounts_by_provider.items()},
            'project_id': PROJECT, 'user_id': USER,
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        return consumer
