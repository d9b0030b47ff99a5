"""Builders shared by the scheduler tests: host states, specs, a cloud.

``host_state(...)`` and ``spec(...)`` build objects in memory;
:class:`Cloud` writes compute nodes, services and aggregates into the real
test database through the same query functions the services use.
"""

import datetime
import itertools
import threading
import uuid

import numpy as np
import sqlalchemy as sa

from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes
from scheduler.db import models
from scheduler.db import services
from scheduler import host_cache
from scheduler.objects import request_spec
from scheduler import weights

_ids = itertools.count(1)


def now():
    return models.utcnow()


def service(host='host1', disabled=False, forced_down=False,
            seen_ago=0.0, reason=None, when=None, created_ago=None):
    """A ServiceInfo heard from ``seen_ago`` seconds before ``when`` (None:
    never), created ``created_ago`` seconds before it (None: unknown)."""
    when = when or now()
    last = (None if seen_ago is None
            else when - datetime.timedelta(seconds=seen_ago))
    created = (None if created_ago is None
               else when - datetime.timedelta(seconds=created_ago))
    return host_cache.ServiceInfo(next(_ids), host, 'gantt-compute',
                                  disabled, reason, forced_down, last,
                                  created_at=created)


def host_state(host='host1', nodename=None, vcpus=16, vcpus_used=0,
               memory_mb=32768, memory_mb_used=0, local_gb=1000,
               local_gb_used=0, reserved_vcpus=0, reserved_memory_mb=0,
               reserved_disk_gb=0, cpu_ratio=16.0, ram_ratio=1.5,
               disk_ratio=1.0, svc='up', aggregates=(), zones=('nova',),
               mapped=True, node_id=None, **extra):
    """A HostState; ``svc`` is 'up', None (no service) or a ServiceInfo."""
    if svc == 'up':
        svc = service(host)
    fields = dict(
        id=node_id or next(_ids), uuid=str(uuid.uuid4()), host=host,
        nodename=nodename or host, vcpus_total=vcpus, vcpus_used=vcpus_used,
        reserved_vcpus=reserved_vcpus, total_usable_ram_mb=memory_mb,
        memory_mb_used=memory_mb_used, reserved_memory_mb=reserved_memory_mb,
        total_usable_disk_gb=local_gb, local_gb_used=local_gb_used,
        reserved_disk_gb=reserved_disk_gb, cpu_allocation_ratio=cpu_ratio,
        ram_allocation_ratio=ram_ratio, disk_allocation_ratio=disk_ratio,
        hypervisor_type='fake', hypervisor_version=1000, host_ip='10.0.0.1',
        supported_instances=[], stats={}, metrics=[], num_instances=0,
        io_workload=0, mapped=mapped, generation=1, updated=None)
    fields.update(extra)
    return host_cache.HostState(service=svc, aggregates=aggregates,
                                availability_zones=frozenset(zones),
                                **fields)


def aggregate(name, hosts, **metadata):
    return db_aggregates.Aggregate(id=next(_ids), uuid=str(uuid.uuid4()),
                                   name=name, hosts=frozenset(hosts),
                                   metadata=dict(metadata))


def table(states, aggregates=()):
    return host_cache.HostTable.build(states, aggregates)


def spec(vcpus=1, memory_mb=512, root_gb=0, ephemeral_gb=0, swap=0,
         **fields):
    flavor = request_spec.Flavor(vcpus=vcpus, memory_mb=memory_mb,
                                 root_gb=root_gb, ephemeral_gb=ephemeral_gb,
                                 swap=swap)
    return request_spec.RequestSpec(flavor=flavor, **fields)


def uuids(count):
    return [str(uuid.uuid4()) for _ in range(count)]


def place_together(driver, instance_uuids, around):
    """One single-instance request (1 vCPU, 512 MB) per uuid, from as
    many threads released at once, within the context manager
    ``around``: ``(selections, errors)``."""
    placed, errors = [], []
    start = threading.Barrier(len(instance_uuids))

    def request(instance_uuid):
        start.wait()
        try:
            placed.append(driver.select_destinations(
                None, spec(vcpus=1, memory_mb=512), [instance_uuid],
                False))
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=request, args=(instance_uuid,))
               for instance_uuid in instance_uuids]
    with around:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    return placed, errors


class Cloud:
    """Compute nodes, services and aggregates in the test database."""

    def __init__(self):
        self.nodes = {}

    def add_node(self, host, nodename=None, vcpus=16, memory_mb=32768,
                 local_gb=1000, mapped=True, up=True, **inventory):
        """Report a node (and, if ``up``, heartbeat its service); its id."""
        nodename = nodename or host
        inventory.update(vcpus=vcpus, memory_mb=memory_mb,
                         local_gb=local_gb)
        with db_api.writer() as session:
            node_id = compute_nodes.report_inventory(
                session, str(uuid.uuid4()), host, nodename, inventory)
            if mapped:
                session.execute(
                    sa.update(models.ComputeNode.__table__)
                    .where(models.ComputeNode.__table__.c.id == node_id)
                    .values(mapped=True))
            if up:
                services.report_alive(session, host, 'gantt-compute',
                                      'compute')
        self.nodes[nodename] = node_id
        return node_id

    def heartbeat(self, host):
        with db_api.writer() as session:
            services.report_alive(session, host, 'gantt-compute', 'compute')

    def set_last_seen(self, host, seconds_ago):
        table = models.Service.__table__
        with db_api.writer() as session:
            session.execute(
                sa.update(table).where(table.c.host == host).values(
                    last_seen_up=now() - datetime.timedelta(
                        seconds=seconds_ago)))

    def disable(self, host, reason='maintenance'):
        with db_api.writer() as session:
            services.set_disabled(session, host, 'gantt-compute', True,
                                  reason)

    def node_row(self, nodename):
        with db_api.reader() as session:
            return compute_nodes.get_nodes(
                session, ids=[self.nodes[nodename]])[0]

    def allocations(self, consumer_uuid):
        """``{nodename: Resources}`` the consumer holds."""
        names = {node_id: name for name, node_id in self.nodes.items()}
        with db_api.reader() as session:
            return {names[node_id]: resources for node_id, resources
                    in claims.get_allocations(session, consumer_uuid)}

    def take(self, nodename, resources, consumer_uuid=None):
        """Claim behind the scheduler's back (another scheduler did)."""
        with db_api.writer() as session:
            assert claims.claim_resources(
                session, self.nodes[nodename],
                consumer_uuid or str(uuid.uuid4()),
                claims.Resources(*resources))

    @staticmethod
    def add_many(count):
        """``count`` nodes ``host-0000``... of 16 vCPUs, 1000 MB and 100
        GB, with live services, in one transaction (as ``add_node``
        would take seconds for hundreds)."""
        when = now()
        with db_api.writer() as session:
            session.execute(sa.insert(models.ComputeNode.__table__), [{
                'uuid': '00000000-0000-0000-0000-%012d' % number,
                'host': 'host-%04d' % number,
                'hypervisor_hostname': 'host-%04d' % number,
                'vcpus': 16, 'memory_mb': 1000, 'local_gb': 100,
                'mapped': True, 'generation': 1, 'created_at': when,
                'updated_at': when} for number in range(count)])
            session.execute(sa.insert(models.Service.__table__), [{
                'host': 'host-%04d' % number, 'binary': 'gantt-compute',
                'topic': 'compute', 'disabled': False,
                'forced_down': False, 'last_seen_up': when,
                'report_count': 1, 'created_at': when,
                'updated_at': when} for number in range(count)])

    def aggregate(self, name, hosts, **metadata):
        # Where aggregates live: the API database ([database] in one cell).
        with db_api.api_writer() as session:
            agg = db_aggregates.create(session, name, metadata=metadata)
            if hosts:
                db_aggregates.add_hosts(session, agg.id, hosts)


def passes(filter_obj, states, spec_obj, aggregates=()):
    """Which of ``states`` pass, checking that the per-host and the batch
    paths of the filter agree."""
    one_by_one = [filter_obj.host_passes(state, spec_obj) for state in states]
    hosts = table(states, aggregates)
    batch = filter_obj.filter_all(hosts, hosts.candidates | True, spec_obj)
    assert list(batch) == one_by_one
    return one_by_one


def raw_weights(weigher, states, spec_obj=None, aggregates=()):
    """Raw weights of ``states``, checking that the per-host and the batch
    paths of the weigher agree."""
    spec_obj = spec_obj or spec()
    one_by_one = [weigher._weigh_object(state, spec_obj) for state in states]
    hosts = table(states, aggregates)
    batch = weigher.weigh_all(hosts, np.arange(len(states)), spec_obj)
    assert list(batch) == [float(value) for value in one_by_one]
    return one_by_one


def weigh(weighers, states, spec_obj=None, aggregates=()):
    """Total weights from HostWeightHandler."""
    hosts = table(states, aggregates)
    return list(weights.HostWeightHandler().weigh(
        weighers, hosts, np.arange(len(states)), spec_obj or spec()))
