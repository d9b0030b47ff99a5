"""The hardware documents a compute reports: their checks, and how the
scheduler parses them (shared values, empty defaults, free PCI devices)."""

import collections
import json
import copy

import pytest

from scheduler import exception
from scheduler.host_cache import host_inputs

TOPOLOGY = {'cells': [
    {'id': 0, 'socket': 0, 'cpuset': [0, 1], 'pcpuset': [2, 3],
     'memory_mb': 4096, 'siblings': [[0, 1], [2, 3]],
     'mempages': [{'size_kb': 4, 'total': 1048576, 'reserved': 0},
                  {'size_kb': 2048, 'total': 512}]},
    {'id': 1, 'cpuset': [4, 5], 'memory_mb': 4096}]}
POOLS = [{'vendor_id': '8086', 'product_id': '154d', 'numa_node': 0,
          'count': 4, 'tags': {'dev_type': 'type-PF'}},
         {'vendor_id': '10de', 'product_id': '20B0', 'numa_node': None,
          'count': 2}]
CPU_INFO = {'arch': 'x86_64', 'model': 'Skylake-Client-IBRS',
            'vendor': 'Intel', 'features': ['sse4.2', 'avx2'],
            'topology': {'sockets': 1, 'cores': 4, 'threads': 2},
            'maxphysaddr': {'mode': 'emulate', 'bits': 46}}


def test_good_documents_pass_unchanged():
    assert host_inputs.check_numa_topology('t', TOPOLOGY) == TOPOLOGY
    assert host_inputs.check_pci_device_pools('p', POOLS) == POOLS
    assert host_inputs.check_cpu_info('c', CPU_INFO) == CPU_INFO
    assert host_inputs.check_disk_available_least('d', -20) == -20
    for check in host_inputs.CHECKS.values():
        assert check('x', None) is None


def _broken_topology(change):
    topology = copy.deepcopy(TOPOLOGY)
    change(topology['cells'])
    return topology


@pytest.mark.parametrize('change,message', [
    (lambda cells: cells[1].update(pcpuset=[1]),
     "t.cells[1].pcpuset lists CPU(s) [1] that another set or cell"),
    (lambda cells: cells[0].update(pcpuset=[1, 7]),
     't.cells[0].pcpuset lists CPU(s) [1]'),
    (lambda cells: cells[1].update(id=0), 't.cells[1].id repeats cell id 0'),
    (lambda cells: cells[0].pop('memory_mb'), "('memory_mb')"),
    (lambda cells: cells[0].update(siblings=[[0, 9]]),
     "t.cells[0].siblings[0] names CPU(s) [9]"),
    (lambda cells: cells[0]['mempages'].append({'size_kb': 4, 'total': 1}),
     't.cells[0].mempages[2] repeats the page size 4 kB'),
    (lambda cells: cells[0]['mempages'][1].update(reserved=513),
     't.cells[0].mempages[1].reserved must be at most 512'),
    (lambda cells: cells[0].update(cpuset='0-1'),
     't.cells[0].cpuset must be a list, not str'),
])
def test_a_topology_out_of_shape_is_refused_naming_the_field(change,
                                                             message):
    with pytest.raises(exception.InvalidRequest) as error:
        host_inputs.check_numa_topology('t', _broken_topology(change))
    assert message in str(error.value)


def test_a_topology_must_be_a_dict_of_cells():
    with pytest.raises(exception.InvalidRequest, match='must be '):
        host_inputs.check_numa_topology('t', {'cells': [], 'extra': 1})
    with pytest.raises(exception.InvalidRequest, match='must be a dict'):
        host_inputs.check_numa_topology('t', [TOPOLOGY])


@pytest.mark.parametrize('pool,message', [
    (dict(POOLS[0], vendor_id='80861'), 'at most 4'),
    (dict(POOLS[0], product_id='zz4d'), 'p[0].product_id must be 4 hex'),
    (dict(POOLS[0], count=-1), 'p[0].count must be at least 0'),
    (dict(POOLS[0], tags={'dev_type': 3}), "p[0].tags['dev_type'] must be"),
    ({'vendor_id': '8086', 'product_id': '154d'}, "('count')"),
])
def test_a_pool_out_of_shape_is_refused(pool, message):
    with pytest.raises(exception.InvalidRequest) as error:
        host_inputs.check_pci_device_pools('p', [pool])
    assert message in str(error.value)


@pytest.mark.parametrize('cpu_info,message', [
    (dict(CPU_INFO, features='avx2'), 'c.features must be a list'),
    (dict(CPU_INFO, maxphysaddr={'mode': 'host', 'bits': 46}),
     "c.maxphysaddr.mode must be one of 'passthrough', 'emulate'"),
    (dict(CPU_INFO, topology={'cores': '4'}),
     'c.topology.cores must be an integer'),
])
def test_cpu_info_out_of_shape_is_refused(cpu_info, message):
    with pytest.raises(exception.InvalidRequest) as error:
        host_inputs.check_cpu_info('c', cpu_info)
    assert message in str(error.value)


Row = collections.namedtuple(
    'Row', 'cpu_info disk_available_least numa_topology numa_usage '
    'pci_device_pools pci_usage')


def test_a_host_reporting_nothing_gets_the_shared_empty_values():
    values = host_inputs.from_row(Row(None, None, None, None, None, None))
    assert values == ({}, None, None, None, [], {})
    assert values[0] is host_inputs.NO_CPU_INFO
    assert values[4] is host_inputs.NO_POOLS
    assert values[5] is host_inputs.NO_PCI_USAGE


def test_equal_documents_are_one_object_between_hosts():
    usage = {'cells': [{'id': 0, 'cpu_usage': 2}]}
    first = host_inputs.from_row(Row(copy.deepcopy(CPU_INFO), 30,
                                     copy.deepcopy(TOPOLOGY), usage,
                                     copy.deepcopy(POOLS), {'k': 1}))
    second = host_inputs.from_row(Row(copy.deepcopy(CPU_INFO), 10,
                                      copy.deepcopy(TOPOLOGY), None,
                                      copy.deepcopy(POOLS), None))
    assert first[0] is second[0] and first[0] == CPU_INFO
    assert first[2] is second[2] and first[2] == TOPOLOGY
    assert first[4] is second[4] and first[4] == POOLS
    assert (first[1], first[3], first[5]) == (30, usage, {'k': 1})
    assert (second[1], second[3], second[5]) == (10, None, {})


def test_free_pci_devices_are_the_counts_minus_the_usage():
    # 4 + 2 devices, 3 used in one pool and 1 in the other.
    assert host_inputs.free_pci_devices(POOLS, {'a': 3, 'b': 1}) == 2
    assert host_inputs.free_pci_devices(POOLS, {}) == 6
    assert host_inputs.free_pci_devices([], {}) == 0


def test_stored_text_is_parsed_once_per_distinct_text():
    text = json.dumps(TOPOLOGY)
    first = host_inputs.from_row(Row(None, None, text, None, '[]', None))
    second = host_inputs.from_row(Row(None, None, text, None, None, None))
    assert first[2] == TOPOLOGY and first[2] is second[2]
    # Empty documents are "not reported".
    assert first[4] is host_inputs.NO_POOLS


def test_stored_text_that_is_not_json_reads_as_not_reported(caplog):
    values = host_inputs.from_row(Row('{"model": ', None, None, None, None,
                                      None))
    assert values[0] is host_inputs.NO_CPU_INFO
    assert 'not JSON' in caplog.text
