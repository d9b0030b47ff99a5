"""Tests for scheduler.numa.fitting, on small hand-worked hosts."""

import pytest

from scheduler.numa import capacity
from scheduler.numa import fitting
from scheduler.numa import request
from tests.unit.scheduler.numa import hosts


def fit(host, req, usage=None, limits=None, **kwargs):
    return fitting.fit_instance(host, usage, req, limits, **kwargs)


def dedicated(vcpus, memory_mb, **specs):
    specs = {'hw:' + k: v for k, v in specs.items()}
    specs['hw:cpu_policy'] = 'dedicated'
    return request.get_request(vcpus, memory_mb, specs)


TWO_CELLS = hosts.host(hosts.cell(0, [0, 1], [2, 3]),
                       hosts.cell(1, [4, 5], [6, 7]))


def test_host_without_numa_topology_fits_nothing():
    assert fit(None, dedicated(1, 512)) is None


def test_two_node_split_lands_on_both_cells():
    where = fit(TWO_CELLS, dedicated(4, 4096, numa_nodes='2'))
    assert where.host_cells == (0, 1)
    assert [dict(c.cpu_pinning) for c in where.cells] == [
        {0: 2, 1: 3}, {2: 6, 3: 7}]
    assert [c.memory_mb for c in where.cells] == [2048, 2048]


def test_one_cell_cannot_take_more_than_its_dedicated_cpus():
    assert fit(TWO_CELLS, dedicated(4, 2048)) is None
    assert fit(TWO_CELLS, dedicated(2, 2048)).host_cells == (0,)


def test_more_guest_cells_than_host_cells_fails():
    assert fit(TWO_CELLS, request.get_request(
        3, 3072, {'hw:numa_nodes': '3'})) is None


def test_asymmetric_guest_cells_use_the_matching_host_cells():
    # Guest cell 0: vCPU 0, 1024 MiB; guest cell 1: vCPUs 1-2, 2048 MiB.
    # Host cell 0 is the big one, so guest cell 0 must go to host cell 1.
    req = request.get_request(3, 3072, {
        'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0',
        'hw:numa_cpus.1': '1-2', 'hw:numa_mem.0': '1024',
        'hw:numa_mem.1': '2048'})
    host = hosts.host(hosts.cell(0, [0, 1], memory_mb=2048),
                      hosts.cell(1, [2], memory_mb=1024))
    where = fit(host, req)
    assert where.host_cells == (1, 0)
    assert [sorted(c.shared_vcpus) for c in where.cells] == [[0], [1, 2]]


def test_shared_vcpus_limited_by_cpu_allocation_ratio():
    host = hosts.host(hosts.cell(0, [0, 1]))
    used = hosts.usage({'id': 0, 'cpu_usage': 3})
    one = request.get_request(1, 512, {'hw:numa_nodes': '1'})
    two = request.get_request(2, 512, {'hw:numa_nodes': '1'})
    limits = capacity.Limits(cpu_allocation_ratio=2.0)
    # Limit 2 CPUs * 2.0 = 4; 3 used.
    assert fit(host, one, used, limits) is not None
    assert fit(host, two, used, limits) is None
    # Without limits there is no ratio check (Nova), only the cell size.
    assert fit(host, two, used) is not None
    three = request.get_request(3, 512, {'hw:numa_nodes': '1'})
    assert fit(host, three, None, capacity.Limits(16.0)) is None


@pytest.mark.parametrize('memory_mb, fits', [(3072, True), (3073, False)])
def test_shared_memory_limited_by_ram_allocation_ratio(memory_mb, fits):
    host = hosts.host(hosts.cell(0, [0, 1], memory_mb=4096))
    used = hosts.usage({'id': 0, 'memory_usage_mb': 3072})
    req = request.get_request(1, memory_mb, {'hw:numa_nodes': '1'})
    limits = capacity.Limits(ram_allocation_ratio=1.5)   # limit 6144 MiB
    assert (fit(host, req, used, limits) is not None) is fits


def test_pinned_memory_never_overcommits():
    host = hosts.host(hosts.cell(0, [], [0, 1], memory_mb=4096))
    used = hosts.usage({'id': 0, 'memory_usage_mb': 3072})
    limits = capacity.Limits(ram_allocation_ratio=1.5)
    assert fit(host, dedicated(1, 1024), used, limits) is not None
    assert fit(host, dedicated(1, 1025), used, limits) is None


HUGE = hosts.host(hosts.cell(0, [0, 1], memory_mb=8192,
                             mempages={4: 262144, 2048: 1024,
                                       1048576: 1}))


def test_hugepages_that_do_not_fit():
    req = request.get_request(1, 2048, {'hw:mem_page_size': '2MB'})
    used = hosts.usage({'id': 0, 'mempages_used': {'2048': 513}})
    # 2048 MiB = 1024 pages of 2 MiB; 511 are free.
    assert fit(HUGE, req, used) is None
    where = fit(HUGE, req)
    assert where.cells[0].page_size_kb == 2048 and where.cells[0].pages == 1024


def test_memory_not_divisible_by_the_page_size():
    req = request.get_request(1, 1536, {'hw:mem_page_size': '1GB'})
    assert fit(HUGE, req) is None
    req = request.get_request(1, 1024, {'hw:mem_page_size': '1GB'})
    assert fit(HUGE, req).cells[0].page_size_kb == 1048576


@pytest.mark.parametrize('pagesize, memory_mb, expected', [
    ('large', 1024, 1048576),   # one 1 GiB page is free
    ('large', 2048, 2048),      # two 1 GiB pages are not: 2 MiB pages
    ('any', 1024, 1048576),
    ('small', 1024, 4),
    ('large', 4096, None),      # 2048 pages of 2 MiB, only 1024
])
def test_large_and_any_pick_the_largest_page_that_fits(pagesize, memory_mb,
                                                       expected):
    req = request.get_request(1, memory_mb, {'hw:mem_page_size': pagesize})
    where = fit(HUGE, req)
    assert (where and where.cells[0].page_size_kb) == expected


def test_page_size_the_host_lacks_fails():
    req = request.get_request(1, 1024, {'hw:mem_page_size': '64KB'})
    assert fit(HUGE, req) is None
    host = hosts.host(hosts.cell(0, [0, 1], memory_mb=8192))
    assert fit(host, request.get_request(
        1, 1024, {'hw:mem_page_size': 'large'})) is None


def test_no_page_size_charges_the_smallest_page():
    where = fit(HUGE, request.get_request(1, 1024, {'hw:numa_nodes': '1'}))
    assert where.cells[0].page_size_kb == 4 and where.cells[0].pages == 262144


def test_mixed_policy_pins_part_and_shares_the_rest():
    host = hosts.host(hosts.cell(0, [0, 1], [2, 3, 4, 5],
                                 siblings=[[2, 3], [4, 5]]))
    req = request.get_request(4, 2048, {'hw:cpu_policy': 'mixed',
                                        'hw:cpu_dedicated_mask': '^0-1'})
    where = fit(host, req)
    (placed,) = where.cells
    assert sorted(placed.shared_vcpus) == [0, 1]
    assert dict(placed.cpu_pinning) == {2: 2, 3: 3}
    # The shared part still needs room in cpuset under the ratio.
    used = hosts.usage({'id': 0, 'cpu_usage': 1})
    assert fit(host, req, used, capacity.Limits(1.0)) is None


def test_isolate_needs_a_cell_without_smt():
    # Nova (bug 1889633): cell 0 has hyperthread siblings, so two
    # isolated vCPUs go to cell 1, which has none, although cell 0 has
    # more free cores; once cell 1 is short, nothing fits.
    host = hosts.host(
        hosts.cell(0, [], [0, 1, 2, 3], siblings=[[0, 1], [2, 3]]),
        hosts.cell(1, [], [4, 5, 6, 7]))
    req = dedicated(2, 1024, cpu_thread_policy='isolate')
    used = hosts.usage({'id': 1, 'pinned_cpus': [4]})
    where = fit(host, req, used)
    assert where.host_cells == (1,)
    assert dict(where.cells[0].cpu_pinning) == {0: 5, 1: 6}
    assert where.cells[0].reserved_cpus == frozenset()
    used = hosts.usage({'id': 1, 'pinned_cpus': [4, 5, 6]})
    assert fit(host, req, used) is None
    assert fit(host, dedicated(2, 1024), used).host_cells == (0,)


def test_cells_allowed_veto_forces_another_cell():
    req = request.get_request(1, 1024, {'hw:numa_nodes': '1'})
    assert fit(TWO_CELLS, req).host_cells == (0,)
    seen = []

    def allowed(ids):
        seen.append(ids)
        return ids != (0,)

    assert fit(TWO_CELLS, req, cells_allowed=allowed).host_cells == (1,)
    assert seen == [(0,), (1,)]
    assert fit(TWO_CELLS, req, cells_allowed=lambda ids: False) is None


def test_spread_prefers_the_emptier_cell_and_pack_the_fuller():
    used = hosts.usage({'id': 0, 'cpu_usage': 1, 'memory_usage_mb': 1024})
    req = request.get_request(1, 1024, {'hw:numa_nodes': '1'})
    assert fit(TWO_CELLS, req, used).host_cells == (1,)
    assert fit(TWO_CELLS, req, used, pack=True).host_cells == (0,)


def test_emulator_threads_isolate_takes_one_more_cpu_on_the_first_cell():
    host = hosts.host(hosts.cell(0, [], [0, 1, 2]),
                      hosts.cell(1, [], [3, 4, 5]))
    req = dedicated(4, 2048, numa_nodes='2', emulator_threads_policy='isolate')
    where = fit(host, req)
    first, second = where.cells
    assert dict(first.cpu_pinning) == {0: 0, 1: 1}
    assert first.emulator_cpus == {2} and second.emulator_cpus == set()
    assert dict(second.cpu_pinning) == {2: 3, 3: 4}
    # Three guest CPUs on a three-CPU cell leave no room for the emulator.
    req = dedicated(3, 1024, emulator_threads_policy='isolate')
    assert fit(host, req) is None
    assert fit(host, dedicated(3, 1024, emulator_threads_policy='share'))


def test_emulator_threads_with_isolate_thread_policy_take_a_core():
    host = hosts.host(hosts.cell(0, [], range(4)))
    req = dedicated(2, 1024, emulator_threads_policy='isolate',
                    cpu_thread_policy='isolate')
    (placed,) = fit(host, req).cells
    assert dict(placed.cpu_pinning) == {0: 0, 1: 1}
    assert placed.reserved_cpus == frozenset()
    assert placed.emulator_cpus == {2}
    used = hosts.usage({'id': 0, 'pinned_cpus': [2, 3]})
    assert fit(host, req, used) is None
