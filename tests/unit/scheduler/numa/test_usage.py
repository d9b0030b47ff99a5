"""Tests for applying and releasing placements, and their JSON form."""

import dataclasses
import json

import pytest

from scheduler.numa import capacity
from scheduler.numa import errors
from scheduler.numa import fitting
from scheduler.numa import placement
from scheduler.numa import request
from scheduler.numa import topology
from scheduler.numa import usage
from tests.unit.scheduler.numa import hosts

HOST = hosts.host(hosts.cell(0, [0, 1, 2, 3], [4, 5, 6, 7],
                             memory_mb=16384,
                             siblings=[[0, 1], [2, 3], [4, 5], [6, 7]],
                             mempages={4: 3670016, 2048: 1024}))


def fitted(specs, vcpus=2, memory_mb=2048, used=None, limits=None):
    req = request.get_request(vcpus, memory_mb, specs)
    where = fitting.fit_instance(HOST, used, req, limits)
    assert where is not None
    return where


def test_apply_counts_the_cpus_set_aside_as_pinned():
    # A placement that set siblings aside (Nova's legacy 'isolate', kept
    # in claims made before bug 1889633's rule) pins them too.
    where = fitted({'hw:cpu_policy': 'dedicated',
                    'hw:mem_page_size': '2MB'})
    where = dataclasses.replace(where, cells=(dataclasses.replace(
        where.cells[0], cpu_pinning=((0, 4), (1, 6)),
        reserved_cpus=frozenset({5, 7})),))
    assert usage.apply_placement(HOST, None, where) == {'cells': [{
        'id': 0, 'cpu_usage': 0, 'memory_usage_mb': 2048,
        'pinned_cpus': [4, 5, 6, 7], 'mempages_used': {'2048': 1024}}]}
    assert usage.release_placement(
        HOST, usage.apply_placement(HOST, None, where), where) == \
        topology.normalize_usage(topology.parse_host_topology(HOST), None)


def test_apply_shared_charges_small_pages_and_cpu_usage():
    where = fitted({'hw:numa_nodes': '1'}, vcpus=3, memory_mb=1024)
    assert usage.apply_placement(HOST, json.dumps(hosts.usage(
        {'id': 0, 'cpu_usage': 1})), where) == {'cells': [{
            'id': 0, 'cpu_usage': 4, 'memory_usage_mb': 1024,
            'pinned_cpus': [], 'mempages_used': {'4': 262144}}]}


def test_apply_then_release_is_the_identity():
    before = hosts.usage({'id': 0, 'cpu_usage': 2, 'memory_usage_mb': 512,
                          'pinned_cpus': [7],
                          'mempages_used': {'4': 131072}})
    where = fitted({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '1'},
                   used=before)
    after = usage.apply_placement(HOST, before, where)
    assert after['cells'][0]['pinned_cpus'] == [4, 7]
    assert usage.release_placement(HOST, after, where) == \
        topology.normalize_usage(topology.parse_host_topology(HOST), before)


def test_applying_twice_is_a_conflict_naming_the_cpus():
    where = fitted({'hw:cpu_policy': 'dedicated'})
    once = usage.apply_placement(HOST, None, where)
    with pytest.raises(errors.NUMAUsageConflict,
                       match=r'cell 0: CPUs \[4, 5\] are already pinned'):
        usage.apply_placement(HOST, once, where)


def test_applying_when_pages_ran_out_is_a_conflict():
    where = fitted({'hw:mem_page_size': 'large'})
    full = hosts.usage({'id': 0, 'mempages_used': {'2048': 1}})
    with pytest.raises(errors.NUMAUsageConflict,
                       match='needs 1024 pages of 2048 KiB, 1023 free'):
        usage.apply_placement(HOST, full, where)


def test_applying_over_the_cpu_ratio_is_a_conflict_with_limits_only():
    where = fitted({'hw:numa_nodes': '1'})
    busy = hosts.usage({'id': 0, 'cpu_usage': 7})
    usage.apply_placement(HOST, busy, where)
    with pytest.raises(errors.NUMAUsageConflict, match='limit 8'):
        usage.apply_placement(HOST, busy, where, capacity.Limits(2.0))


def test_releasing_what_was_never_applied_is_a_conflict():
    where = fitted({'hw:cpu_policy': 'dedicated'})
    with pytest.raises(errors.NUMAUsageConflict,
                       match=r'cannot release: CPUs \[4, 5\] are not pinned'):
        usage.release_placement(HOST, None, where)


def test_placement_on_a_missing_cell_is_a_conflict():
    where = fitted({'hw:numa_nodes': '1'})
    other = hosts.host(hosts.cell(3, [0, 1]))
    with pytest.raises(errors.NUMAUsageConflict, match='no such cell'):
        usage.apply_placement(other, None, where)


def test_placement_json_round_trip():
    where = fitted({'hw:cpu_policy': 'dedicated',
                    'hw:cpu_thread_policy': 'require',
                    'hw:cpu_realtime': 'yes',
                    'hw:cpu_realtime_mask': '^0',
                    'hw:mem_page_size': 'any'})
    text = json.dumps(where.to_dict())
    assert placement.Placement.from_dict(json.loads(text)) == where
    assert json.loads(text)['cells'][0]['cpu_pinning'] == {'0': 4, '1': 5}


@pytest.mark.parametrize('data', [
    {}, {'cells': [{'id': 0}]}, {'cells': [{'id': 'x', 'host_cell': 0,
                                            'memory_mb': 1}]},
    {'cells': [], 'pagesize_request': 'huge'}])
def test_bad_placement_json_is_a_clear_error(data):
    with pytest.raises(errors.InvalidNUMAPlacement, match='Invalid NUMA'):
        placement.Placement.from_dict(data)


@pytest.mark.parametrize('topo, match', [
    ('{', 'not JSON'),
    ({'cells': [{'id': 0, 'cpuset': [1], 'pcpuset': [1],
                 'memory_mb': 1}]}, r'share CPUs \[1\]'),
    ({'cells': [{'id': 0, 'cpuset': 'x', 'memory_mb': 1}]},
     "'cpuset' must be a list"),
    ({'cells': [{'id': 0, 'memory_mb': -1}]}, "'memory_mb' must be"),
    ({'cells': [{'id': 0, 'memory_mb': 1}, {'id': 0, 'memory_mb': 1}]},
     'duplicate cell ids'),
])
def test_bad_host_topology_names_the_problem(topo, match):
    with pytest.raises(errors.InvalidHostNUMATopology, match=match):
        topology.parse_host_topology(topo)


def test_usage_for_an_unknown_cell_is_an_error():
    cells = topology.parse_host_topology(HOST)
    with pytest.raises(errors.InvalidHostNUMATopology, match='cell 2'):
        topology.parse_usage(cells, hosts.usage({'id': 2}))


def test_socket_defaults_to_cell_id_and_cores_cover_lone_pcpus():
    cells = topology.parse_host_topology(hosts.host(
        hosts.cell(1, [0], [1, 2, 3], siblings=[[0, 1], [2, 3]])))
    assert cells[0].socket == 1
    assert cells[0].cores() == [frozenset({1}), frozenset({2, 3})]
