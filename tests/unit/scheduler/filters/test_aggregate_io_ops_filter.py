import pytest

from scheduler.filters import aggregate_io_ops_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return aggregate_io_ops_filter.AggregateIoOpsFilter()


def test_aggregate_limit_minimum_wins(filt):
    aggs = [fakes.aggregate('one', ['a', 'b'], max_io_ops_per_host='4'),
            fakes.aggregate('two', ['a'], max_io_ops_per_host='2')]
    states = [fakes.host_state('a', io_workload=3, aggregates=aggs),
              fakes.host_state('b', io_workload=3, aggregates=aggs[:1]),
              fakes.host_state('c', io_workload=7)]
    assert fakes.passes(filt, states, fakes.spec(), aggs) == [
        False, True, True]


def test_value_that_is_no_integer_uses_the_option(filt, caplog):
    agg = fakes.aggregate('bad', ['a'], max_io_ops_per_host='2.5')
    states = [fakes.host_state('a', io_workload=7, aggregates=[agg])]
    assert fakes.passes(filt, states, fakes.spec(), [agg]) == [True]
    assert 'Could not decode' in caplog.text


def test_flags_as_nova():
    assert aggregate_io_ops_filter.AggregateIoOpsFilter.RUN_ON_REBUILD is \
        False
