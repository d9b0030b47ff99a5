"""The host cache carries the hardware the computes report (read in full
and incremental refreshes) and what claims use of it."""

import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import models

_NODE = models.ComputeNode.__table__
TOPOLOGY = {'cells': [{'id': 0, 'cpuset': [0, 1], 'pcpuset': [2, 3],
                       'memory_mb': 4096}]}
POOLS = [{'vendor_id': '8086', 'product_id': '154d', 'numa_node': 0,
          'count': 4}]


def _state(table, nodename):
    return table.states[int(table.rows_by_nodename[nodename][0])]


def _write_usage(node_id, **usage):
    # What a claim does: the usage, a new generation, a new updated_at.
    with db_api.writer() as session:
        session.execute(sa.update(_NODE).where(_NODE.c.id == node_id).values(
            generation=_NODE.c.generation + 1, updated_at=models.utcnow(),
            **usage))


def test_refreshes_carry_the_hardware_and_its_usage(cloud,
                                                    make_host_manager):
    pci_node = cloud.add_node('h1', numa_topology=TOPOLOGY,
                              pci_device_pools=POOLS,
                              cpu_info={'model': 'Haswell'},
                              disk_available_least=40)
    cloud.add_node('h2')
    manager = make_host_manager(auto_refresh=False)

    table = manager.snapshot()
    h1, h2 = _state(table, 'h1'), _state(table, 'h2')
    assert (h1.numa_topology, h1.pci_device_pools, h1.cpu_info) == (
        TOPOLOGY, POOLS, {'model': 'Haswell'})
    assert (h1.disk_available_least, h1.numa_usage, h1.pci_usage) == (
        40, None, {})
    assert (h2.numa_topology, h2.pci_device_pools, h2.cpu_info,
            h2.disk_available_least) == (None, [], {}, None)
    assert list(table.pci_free) == [4, 0]
    assert list(table.free_disk_mb) == [40 * 1024, 1000 * 1024]

    usage = {'cells': [{'id': 0, 'cpu_usage': 0, 'pinned_cpus': [2]}]}
    _write_usage(pci_node, numa_usage=usage, pci_usage={'pool': 3})
    table = manager.refresh()     # incremental

    h1 = _state(table, 'h1')
    assert (h1.numa_usage, h1.pci_usage) == (usage, {'pool': 3})
    assert list(table.pci_free) == [1, 0]
