"""What the move-operation tests read back from SQL and the agents.

Each test asserts the state the conductor left: the instance's row, the
allocations per consumer (the instance's UUID vs a migration's), the
usage columns of each node, and that ``gantt-manage db check`` finds
nothing wrong. The plain SQL readers are :mod:`sql_state`'s, shared with
the rebuild and shelve tests.
"""

import sqlalchemy as sa

from compute import manager as compute_manager
from conductor import rpcapi as conductor_rpcapi
from scheduler.db import api as db_api
from scheduler.db import instances as db_instances
from scheduler.db import models
from tests.unit.conductor import sql_state

SMALL = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}
MEDIUM = {'vcpus': 8, 'memory_mb': 16384, 'local_gb': 200}
BIG = {'vcpus': 16, 'memory_mb': 65536, 'local_gb': 1000}

ctxt = sql_state.ctxt
instance = sql_state.instance
usage = sql_state.usage
migrations = sql_state.migrations
assert_consistent = sql_state.assert_consistent

# The flavor the tests boot: (vcpus, memory_mb, disk_gb) as claimed.
FLAVOR = {'vcpus': 1, 'memory_mb': 1024, 'root_gb': 10}
CLAIM = (1, 1024, 10)


def api(timeout=30):
    """The conductor's RPC client, waiting ``timeout`` seconds for answers
    (tests shorten ``rpc_response_timeout`` for calls to stopped agents)."""
    client = conductor_rpcapi.ComputeTaskAPI()
    client.client = client.client.prepare(timeout=timeout)
    return client


def boot_one(cluster, **kwargs):
    """Boot one instance of FLAVOR; its UUID, once it is ACTIVE."""
    [uuid] = cluster.boot(**FLAVOR, **kwargs)
    row = cluster.wait_built([uuid])[uuid]
    assert row.vm_state == db_instances.ACTIVE, row.fault
    return uuid


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


def snapshot(uuids):
    """The state a refused or failed operation must leave unchanged."""
    rows = {}
    for uuid in uuids:
        row = instance(uuid)
        rows[uuid] = (row.vm_state, row.task_state, row.host, row.node,
                      row.flavor, sql_state.canonical(row.request_spec),
                      row.fault)
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
