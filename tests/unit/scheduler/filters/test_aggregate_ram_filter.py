import pytest

from scheduler.filters import aggregate_ram_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return aggregate_ram_filter.AggregateRamFilter()


def test_without_aggregates_it_is_the_ram_filter(filt):
    state = fakes.host_state(memory_mb=1000, ram_ratio=2.0)
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=2000)) == [True]
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=2001)) == [False]


def test_aggregate_lowers_the_ratio(filt):
    agg = fakes.aggregate('strict', ['a'], ram_allocation_ratio='1.0')
    states = [fakes.host_state('a', memory_mb=1000, ram_ratio=2.0,
                               aggregates=[agg]),
              fakes.host_state('b', memory_mb=1000, ram_ratio=2.0)]
    assert fakes.passes(filt, states, fakes.spec(memory_mb=1500),
                        [agg]) == [False, True]
    assert fakes.passes(filt, states, fakes.spec(memory_mb=1000),
                        [agg]) == [True, True]


def test_several_aggregates_the_minimum_wins(filt):
    aggs = [fakes.aggregate('one', ['a'], ram_allocation_ratio='1.5'),
            fakes.aggregate('two', ['a'], ram_allocation_ratio='1.2'),
            fakes.aggregate('three', ['a'], ram_allocation_ratio='1.8')]
    state = fakes.host_state('a', memory_mb=1000, ram_ratio=2.0,
                             aggregates=aggs)
    assert filt.host_ratio(state) == 1.2
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=1200),
                        aggs) == [True]
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=1201),
                        aggs) == [False]


def test_value_that_is_no_number_uses_the_node_ratio(filt, caplog):
    aggs = [fakes.aggregate('bad', ['a'], ram_allocation_ratio='lots'),
            fakes.aggregate('good', ['a'], ram_allocation_ratio='0.5')]
    state = fakes.host_state('a', memory_mb=1000, ram_ratio=2.0,
                             aggregates=aggs)
    assert filt.host_ratio(state) == 2.0
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=2000),
                        aggs) == [True]
    assert 'Could not decode' in caplog.text


def test_a_higher_aggregate_ratio_cannot_beat_the_claim(filt):
    # The claim in SQL checks the node's own ratio.
    agg = fakes.aggregate('loose', ['a'], ram_allocation_ratio='4.0')
    state = fakes.host_state('a', memory_mb=1000, ram_ratio=1.0,
                             aggregates=[agg])
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=1001),
                        [agg]) == [False]


def test_reserved_and_used_count(filt):
    agg = fakes.aggregate('x', ['a'], ram_allocation_ratio='1.0')
    state = fakes.host_state('a', memory_mb=1000, ram_ratio=3.0,
                             reserved_memory_mb=100, memory_mb_used=400,
                             aggregates=[agg])
    # 1000 * 1.0 - 100 - 400 = 500 MB of room.
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=500),
                        [agg]) == [True]
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=501),
                        [agg]) == [False]


def test_flags_as_nova():
    assert aggregate_ram_filter.AggregateRamFilter.RUN_ON_REBUILD is False
    assert not aggregate_ram_filter.AggregateRamFilter.\
        run_filter_once_per_request
