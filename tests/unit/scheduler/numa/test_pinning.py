"""Tests for scheduler.numa.pinning, on small hand-worked host cells."""

import pytest

from scheduler.numa import pinning
from scheduler.numa import topology


def smt_cell(pcpus=8, siblings=True):
    """A cell whose dedicated CPUs 0..pcpus-1 form 2-thread cores."""
    sibs = [[c, c + 1] for c in range(0, pcpus, 2)] if siblings else []
    return topology.parse_host_topology({'cells': [{
        'id': 0, 'cpuset': [], 'pcpuset': list(range(pcpus)),
        'memory_mb': 4096, 'siblings': sibs}]})[0]


@pytest.mark.parametrize('policy', [None, 'prefer'])
def test_prefer_packs_vcpus_onto_siblings(policy):
    assert pinning.pin_cell(smt_cell(), {0, 1, 2, 3}, set(), policy) == (
        {0: 0, 1: 1, 2: 2, 3: 3}, frozenset())


def test_prefer_skips_half_used_cores_while_whole_ones_fit():
    # Core (0, 1) has CPU 1 pinned: two vCPUs go on the whole core (2, 3).
    assert pinning.pin_cell(smt_cell(), {0, 1}, {1}, 'prefer') == (
        {0: 2, 1: 3}, frozenset())


def test_prefer_falls_back_to_single_threads():
    # Free: 0, 2, 4 alone and core (6, 7); three vCPUs need one thread
    # from three cores.
    assert pinning.pin_cell(smt_cell(), {0, 1, 2}, {1, 3, 5}, 'prefer') == (
        {0: 0, 1: 2, 2: 4}, frozenset())


def test_prefer_uses_any_free_cpus_as_a_last_resort():
    # Free: 1 and core (4, 5). Width 2 gives only two CPUs, width 1 gives
    # two cores; the fallback takes CPUs one by one: 1, 4, 5.
    cell = smt_cell(6)
    assert pinning.pin_cell(cell, {0, 1, 2}, {0, 2, 3}, None) == (
        {0: 1, 1: 4, 2: 5}, frozenset())


@pytest.mark.parametrize('pinned', [set(), {0}, {0, 1, 2, 3, 4, 5}])
def test_isolate_fails_on_a_cell_with_smt_siblings(pinned):
    # Nova since bug 1889633: a host that reports cpu_dedicated_set and
    # hyperthreads takes no 'isolate' guest, even on whole free cores.
    assert pinning.pin_cell(smt_cell(), {0, 1}, pinned, 'isolate') is None
    assert pinning.pin_cell(smt_cell(), {0, 1}, pinned, 'prefer')


def test_isolate_fails_without_enough_free_cores():
    cell = smt_cell(4, siblings=False)
    assert pinning.pin_cell(cell, {0, 1}, {0, 1, 2}, 'isolate') is None


def test_isolate_on_a_host_without_smt_is_plain_pinning():
    cell = smt_cell(4, siblings=False)
    assert pinning.pin_cell(cell, {0, 1}, {0}, 'isolate') == (
        {0: 1, 1: 2}, frozenset())


def test_require_uses_sibling_pairs():
    # Free: 1, 3, 5 alone and core (6, 7).
    assert pinning.pin_cell(smt_cell(), {0, 1}, {0, 2, 4}, 'require') == (
        {0: 6, 1: 7}, frozenset())


def test_require_refuses_lone_threads_where_prefer_takes_them():
    pinned = {0, 2, 4, 6}
    assert pinning.pin_cell(smt_cell(), {0, 1}, pinned, 'require') is None
    assert pinning.pin_cell(smt_cell(), {0, 1}, pinned, 'prefer') == (
        {0: 1, 1: 3}, frozenset())


def test_require_fails_on_a_host_without_siblings():
    cell = smt_cell(4, siblings=False)
    assert pinning.pin_cell(cell, {0, 1}, set(), 'require') is None
    assert pinning.pin_cell(cell, {0, 1}, set(), 'prefer') == (
        {0: 0, 1: 1}, frozenset())


def test_more_vcpus_than_free_cpus_fails():
    assert pinning.pin_cell(smt_cell(4), {0, 1, 2}, {3}, None) == (
        {0: 0, 1: 1, 2: 2}, frozenset())
    assert pinning.pin_cell(smt_cell(4), {0, 1, 2, 3}, {3}, None) is None
