import pytest

from scheduler.filters import aggregate_type_affinity_filter as atf
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return atf.AggregateTypeAffinityFilter()


def _spec(name):
    spec = fakes.spec()
    spec.flavor.name = name
    return spec


def test_flavor_names_of_the_aggregates(filt):
    aggs = [fakes.aggregate('big', ['a'], instance_type='m1.xl, m1.2xl'),
            fakes.aggregate('tiny', ['a', 'b'], instance_type='m1.tiny')]
    states = [fakes.host_state('a', aggregates=aggs),
              fakes.host_state('b', aggregates=aggs[1:]),
              fakes.host_state('c')]
    assert fakes.passes(filt, states, _spec('m1.2xl'), aggs) == [
        True, False, True]
    assert fakes.passes(filt, states, _spec('m1.tiny'), aggs) == [
        True, True, True]
    assert fakes.passes(filt, states, _spec('m1.small'), aggs) == [
        False, False, True]
    assert fakes.passes(filt, states, _spec(None), aggs) == [
        False, False, True]


def test_flags_as_nova():
    assert atf.AggregateTypeAffinityFilter.RUN_ON_REBUILD is False
    assert atf.AggregateTypeAffinityFilter.run_filter_once_per_request
