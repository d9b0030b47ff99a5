import pytest

from scheduler.filters import aggregate_disk_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return aggregate_disk_filter.AggregateDiskFilter()


def test_aggregate_ratio_and_swap_rounding(filt):
    agg = fakes.aggregate('thin', ['a'], disk_allocation_ratio='0.5')
    states = [fakes.host_state('a', local_gb=100, aggregates=[agg]),
              fakes.host_state('b', local_gb=100)]
    # 49 GB root + 1 MB of swap = 50 GB.
    spec = fakes.spec(root_gb=49, swap=1)
    assert fakes.passes(filt, states, spec, [agg]) == [True, True]
    spec = fakes.spec(root_gb=50, swap=1)
    assert fakes.passes(filt, states, spec, [agg]) == [False, True]


def test_not_finite_ratio_is_ignored(filt):
    agg = fakes.aggregate('odd', ['a'], disk_allocation_ratio='inf')
    state = fakes.host_state('a', local_gb=100, aggregates=[agg])
    assert filt.host_ratio(state) == 1.0
    assert fakes.passes(filt, [state], fakes.spec(root_gb=101), [agg]) == [
        False]


def test_flags_as_nova():
    assert aggregate_disk_filter.AggregateDiskFilter.RUN_ON_REBUILD is False
