"""``gantt-manage host show``: CPU, disk, NUMA cells and PCI pools of a
host's nodes, with what claims use of them."""

import sqlalchemy as sa

from scheduler.cmd import manage_host
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import models
from scheduler.pci import pools as pci_pools
from tests.unit.cmd import output

NODE_UUID = '11111111-2222-3333-4444-555555555555'
_NODE = models.ComputeNode.__table__
TOPOLOGY = {'cells': [
    {'id': 0, 'socket': 0, 'cpuset': [0, 1, 2, 3], 'pcpuset': [4, 5, 6, 7],
     'memory_mb': 16384, 'siblings': [[0, 1], [2, 3], [4, 5], [6, 7]],
     'mempages': [{'size_kb': 4, 'total': 3670016, 'reserved': 0},
                  {'size_kb': 2048, 'total': 1024, 'reserved': 2}]},
    {'id': 1, 'cpuset': [8, 9], 'memory_mb': 8192}]}
USAGE = {'cells': [{'id': 0, 'cpu_usage': 3, 'memory_usage_mb': 2048,
                    'pinned_cpus': [4, 5], 'mempages_used': {'2048': 512}}]}
POOLS = [{'vendor_id': '8086', 'product_id': '154d', 'numa_node': 0,
          'count': 4, 'tags': {'dev_type': 'type-PF',
                               'physical_network': 'physnet1'}},
         {'vendor_id': '10de', 'product_id': '20b0', 'numa_node': None,
          'count': 2}]
CPU_INFO = {'arch': 'x86_64', 'model': 'Skylake-Client-IBRS',
            'vendor': 'Intel', 'features': ['sse4.2', 'avx2'],
            'topology': {'sockets': 1, 'cores': 4, 'threads': 2},
            'maxphysaddr': {'mode': 'emulate', 'bits': 46}}


def _add_node(**hardware):
    inventory = dict(vcpus=4, memory_mb=8192, local_gb=100, **hardware)
    with db_api.writer() as session:
        return db_compute_nodes.report_inventory(
            session, NODE_UUID, 'compute1', 'compute1', inventory)


def _tables(out):
    """Every table of ``out``, as rows of cells."""
    blocks = out.split('\n\n')
    return [output.table(block) for block in blocks if '\n--' in block]


def test_cpu_ranges():
    assert manage_host.cpu_ranges([7, 0, 1, 2, 5, 8]) == '0-2,5,7-8'
    assert manage_host.cpu_ranges([]) == '-'


def test_show_prints_cpu_disk_numa_and_pci_with_their_usage(database, run):
    node_id = _add_node(cpu_info=CPU_INFO, disk_available_least=60,
                        numa_topology=TOPOLOGY, pci_device_pools=POOLS)
    with db_api.writer() as session:
        session.execute(sa.update(_NODE).where(_NODE.c.id == node_id).values(
            numa_usage=USAGE,
            pci_usage={pci_pools.pool_key(POOLS[0]): 3}))

    result = run('host', 'show', 'compute1')

    assert result.code == 0, result.err
    assert result.out.startswith('Node compute1 (%s)' % NODE_UUID)
    fields, cells, pools = _tables(result.out)
    assert fields == [
        ['host', 'compute1'], ['mapped', 'no'],
        ['cpu_info', 'Skylake-Client-IBRS (Intel, x86_64)'],
        ['cpu_features', 'avx2 sse4.2'],
        ['cpu_topology', '1 sockets, 4 cores, 2 threads'],
        ['maxphysaddr', 'emulate, 46 bits'],
        ['disk_available_least', '60 GB']]
    assert cells == [
        ['0', '0', '0-3', '4-7', '4-5', '3', '2048/16384', '4K: 0/3670016'],
        ['2048K: 512/1024 (2 reserved)'],
        ['1', '1', '8-9', '-', '-', '0', '0/8192', '-']]
    assert pools == [
        ['8086', '154d', '0', '3/4',
         'dev_type=type-PF physical_network=physnet1'],
        ['10de', '20b0', '-', '0/2', '-']]


def test_show_a_host_that_reports_no_hardware(database, run):
    _add_node()
    result = run('host', 'show', 'compute1')
    assert result.code == 0, result.err
    [fields] = _tables(result.out)
    assert ['cpu_info', '-'] in fields
    assert ['disk_available_least', '-'] in fields
    assert 'No NUMA topology.' in result.out
    assert 'No PCI devices.' in result.out


def test_show_an_unknown_host_fails_in_one_line(database, run):
    result = run('host', 'show', 'compute9')
    assert result.code == 1
    assert result.err.strip().endswith(
        'Compute node on host compute9 could not be found.')
