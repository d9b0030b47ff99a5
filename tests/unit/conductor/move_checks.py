"""What the move-operation tests read back from SQL and the agents.

Each test asserts the state the conductor left: the instance's row, the
allocations per consumer (the instance's UUID vs a migration's), the
usage columns of each node, and that ``gantt-manage db check`` finds the
usage and the allocations in agreement.
"""

import sqlalchemy as sa

from compute import manager as compute_manager
from conductor import rpcapi as conductor_rpcapi
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler.db import moves as db_moves

SMALL = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}
MEDIUM = {'vcpus': 8, 'memory_mb': 16384, 'local_gb': 200}
BIG = {'vcpus': 16, 'memory_mb': 65536, 'local_gb': 1000}

# The flavor the tests boot: (vcpus, memory_mb, disk_gb) as claimed.
FLAVOR = {'vcpus': 1, 'memory_mb': 1024, 'root_gb': 10}
CLAIM = (1, 1024, 10)


def api(timeout=30):
    """The conductor's RPC client, waiting ``timeout`` seconds for answers
    (tests shorten ``rpc_response_timeout`` for calls to stopped agents)."""
    client = conductor_rpcapi.ComputeTaskAPI()
    client.client = client.client.prepare(timeout=timeout)
    return client


def ctxt():
    return gantt_context.get_admin_context()


def boot_one(cluster, **kwargs):
    """Boot one instance of FLAVOR; its UUID, once it is ACTIVE."""
    [uuid] = cluster.boot(**FLAVOR, **kwargs)
    row = cluster.wait_built([uuid])[uuid]
    assert row.vm_state == db_instances.ACTIVE, row.fault
    return uuid


def instance(uuid):
    with db_api.reader() as session:
        return db_instances.get(session, uuid)


def allocations():
    """``{consumer uuid: (host, vcpus, memory_mb, disk_gb)}``."""
    alloc, node = models.Allocation, models.ComputeNode
    with db_api.reader() as session:
        rows = session.execute(
            sa.select(alloc.consumer_uuid, node.host, alloc.vcpus,
                      alloc.memory_mb, alloc.disk_gb)
            .join(node, node.id == alloc.compute_node_id)).all()
    found = {}
    for row in rows:
        assert row.consumer_uuid not in found, 'two allocations of one ' \
            'consumer: %s' % row.consumer_uuid
        found[row.consumer_uuid] = (row.host, row.vcpus, row.memory_mb,
                                    row.disk_gb)
    return found


def usage():
    """``{host: (vcpus_used, memory_mb_used, local_gb_used)}``."""
    node = models.ComputeNode
    with db_api.reader() as session:
        rows = session.execute(sa.select(
            node.host, node.vcpus_used, node.memory_mb_used,
            node.local_gb_used)).all()
    return {row.host: (row.vcpus_used, row.memory_mb_used,
                       row.local_gb_used) for row in rows}


def migrations(instance_uuid):
    with db_api.reader() as session:
        return db_moves.list_migrations(session, instance_uuid)


def assert_consistent():
    """What ``gantt-manage db check`` verifies: usage = allocations."""
    with db_api.reader() as session:
        problems = claims.find_inconsistent_nodes(session)
    assert [(row.host, found) for row, found in problems] == []


def snapshot(uuids):
    """The state a refused or failed operation must leave unchanged."""
    rows = {}
    for uuid in uuids:
        row = instance(uuid)
        rows[uuid] = (row.vm_state, row.task_state, row.host, row.node,
                      row.flavor, row.request_spec, row.fault)
    return rows, allocations(), usage()


def agent(cluster, host):
    """The ComputeManager of ``host`` in the in-process cluster."""
    [service] = [s for s in cluster.services
                 if s.binary == compute_manager.BINARY and s.host == host]
    return service.manager


def stop_agent(cluster, host, binary=compute_manager.BINARY):
    """Stop ``host``'s compute agent (or service ``binary``): calls to it
    time out from now."""
    [service] = [s for s in cluster.services
                 if s.binary == binary and s.host == host]
    service.stop()
    cluster.services.remove(service)


def tracked_by(cluster, host):
    """The instances ``host``'s agent runs."""
    return set(agent(cluster, host)._instances)
