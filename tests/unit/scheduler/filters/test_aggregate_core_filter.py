import pytest

from scheduler.filters import aggregate_core_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return aggregate_core_filter.AggregateCoreFilter()


def test_aggregate_ratio_with_minimum(filt):
    aggs = [fakes.aggregate('pinned', ['a'], cpu_allocation_ratio='1.0'),
            fakes.aggregate('rack', ['a', 'b'], cpu_allocation_ratio='4')]
    states = [fakes.host_state('a', vcpus=4, aggregates=aggs),
              fakes.host_state('b', vcpus=4, aggregates=aggs[1:]),
              fakes.host_state('c', vcpus=4)]
    assert fakes.passes(filt, states, fakes.spec(vcpus=4), aggs) == [
        True, True, True]
    assert fakes.passes(filt, states, fakes.spec(vcpus=5), aggs) == [
        False, True, True]
    assert fakes.passes(filt, states, fakes.spec(vcpus=17), aggs) == [
        False, False, True]


def test_nothing_requested_fits(filt):
    agg = fakes.aggregate('zero', ['a'], cpu_allocation_ratio='0')
    state = fakes.host_state('a', vcpus=4, aggregates=[agg])
    assert fakes.passes(filt, [state], fakes.spec(vcpus=0), [agg]) == [True]
    assert fakes.passes(filt, [state], fakes.spec(vcpus=1), [agg]) == [
        False]


def test_flags_as_nova():
    assert aggregate_core_filter.AggregateCoreFilter.RUN_ON_REBUILD is False
