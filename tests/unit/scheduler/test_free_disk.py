"""Nova's free disk: ``disk_available_least`` bounds ``free_disk_mb``, and
DiskFilter, AggregateDiskFilter and DiskWeigher see it."""

import numpy as np

from scheduler.filters import aggregate_disk_filter
from scheduler.filters import disk_filter
from scheduler import placement_types
from scheduler.weights import disk
from tests.unit.scheduler import fakes


def _host(least, used=10, disk_ratio=1.0, **kwargs):
    # 100 GB, 10 used, 5 reserved: 85 GB free by the sizes.
    return fakes.host_state(local_gb=100, local_gb_used=used,
                            reserved_disk_gb=5, disk_ratio=disk_ratio,
                            disk_available_least=least, **kwargs)


def test_free_disk_is_the_smaller_of_sizes_and_least():
    states = [_host(None), _host(30), _host(200), _host(-4)]
    expected = [85 * 1024, 30 * 1024, 85 * 1024, -4 * 1024]
    assert [state.free_disk_mb for state in states] == expected
    assert list(fakes.table(states).free_disk_mb) == expected


def test_a_claim_takes_its_disk_from_the_least_too():
    state = _host(30).consumed(placement_types.Resources(1, 512, 20))
    # Nova subtracts the 20 GB from its free disk: min(65, 10).
    assert state.disk_available_least == 10
    assert state.free_disk_mb == 10 * 1024
    table = fakes.table([_host(30), _host(None)]).consumed(
        0, placement_types.Resources(1, 512, 20))
    assert list(table.free_disk_mb) == [10 * 1024, 85 * 1024]


def test_disk_filter_allows_no_more_than_nova_finds_in_the_least():
    # Room by the least: 100 * 1.0 - (100 - 30) = 30 GB; by the sizes 85.
    states = [_host(30), _host(None), _host(-1)]
    filt = disk_filter.DiskFilter()
    assert fakes.passes(filt, states, fakes.spec(root_gb=30)) == [
        True, True, False]
    assert fakes.passes(filt, states, fakes.spec(root_gb=31)) == [
        False, True, False]
    assert fakes.passes(filt, states, fakes.spec(root_gb=0)) == [
        True, True, True]


def test_overcommit_adds_to_the_room_in_the_least():
    # Ratio 2.0: 100 * 2 - (100 - 30) = 130 GB by the least, and
    # 200 - 5 - 10 = 185 by the sizes.
    state = _host(30, disk_ratio=2.0)
    filt = disk_filter.DiskFilter()
    assert fakes.passes(filt, [state], fakes.spec(root_gb=130)) == [True]
    assert fakes.passes(filt, [state], fakes.spec(root_gb=131)) == [False]


def test_aggregate_disk_filter_uses_the_aggregate_ratio_with_the_least():
    # Node ratio 2.0, aggregate 1.5: 100 * 1.5 - 70 = 80 GB by the least.
    agg = fakes.aggregate('a', ['h1'], disk_allocation_ratio='1.5')
    state = _host(30, host='h1', disk_ratio=2.0, aggregates=[agg])
    filt = aggregate_disk_filter.AggregateDiskFilter()
    assert fakes.passes(filt, [state], fakes.spec(root_gb=80), [agg]) == [
        True]
    assert fakes.passes(filt, [state], fakes.spec(root_gb=81), [agg]) == [
        False]


def test_disk_weigher_weighs_the_least_bound_free_disk():
    states = [_host(None), _host(30), _host(60)]
    weights = fakes.raw_weights(disk.DiskWeigher(), states)
    assert weights == [85 * 1024, 30 * 1024, 60 * 1024]
    totals = fakes.weigh([disk.DiskWeigher()], states)
    assert int(np.argmax(totals)) == 0
