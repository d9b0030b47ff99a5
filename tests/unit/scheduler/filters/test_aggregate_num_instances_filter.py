import pytest

from scheduler.filters import aggregate_num_instances_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return aggregate_num_instances_filter.AggregateNumInstancesFilter()


def test_aggregate_limit_minimum_wins(filt):
    aggs = [fakes.aggregate('dense', ['a', 'b'],
                            max_instances_per_host='200'),
            fakes.aggregate('small', ['b'], max_instances_per_host='10')]
    states = [fakes.host_state('a', num_instances=100, aggregates=aggs[:1]),
              fakes.host_state('b', num_instances=10, aggregates=aggs),
              fakes.host_state('c', num_instances=50)]
    assert fakes.passes(filt, states, fakes.spec(), aggs) == [
        True, False, False]


def test_flags_as_nova():
    cls = aggregate_num_instances_filter.AggregateNumInstancesFilter
    assert cls.RUN_ON_REBUILD is False
