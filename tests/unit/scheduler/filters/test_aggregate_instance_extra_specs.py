import pytest

from scheduler.filters import aggregate_instance_extra_specs
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return aggregate_instance_extra_specs.AggregateInstanceExtraSpecsFilter()


def _spec(**extra_specs):
    spec = fakes.spec()
    spec.flavor.extra_specs = extra_specs
    return spec


def _cloud():
    fast = fakes.aggregate('fast', ['a', 'b'], ssd='true', speed='10')
    slow = fakes.aggregate('slow', ['b'], speed='1, 100')
    states = [fakes.host_state('a', aggregates=[fast]),
              fakes.host_state('b', aggregates=[fast, slow]),
              fakes.host_state('c')]
    return states, [fast, slow]


def test_no_extra_specs_passes_all(filt):
    states, aggs = _cloud()
    assert fakes.passes(filt, states, _spec(), aggs) == [True] * 3


def test_scoped_and_unscoped_keys_read_the_metadata(filt):
    states, aggs = _cloud()
    for key in ('ssd', 'aggregate_instance_extra_specs:ssd'):
        assert fakes.passes(filt, states, _spec(**{key: 'true'}),
                            aggs) == [True, True, False]


def test_values_of_all_aggregates_split_at_commas(filt):
    states, aggs = _cloud()
    spec = _spec(**{'aggregate_instance_extra_specs:speed': '>= 50'})
    assert fakes.passes(filt, states, spec, aggs) == [False, True, False]
    spec = _spec(speed='1')
    assert fakes.passes(filt, states, spec, aggs) == [False, True, False]


def test_other_scopes_are_ignored(filt):
    states, aggs = _cloud()
    spec = _spec(**{'capabilities:ssd': 'true', 'hw:mem_page_size': 'large'})
    assert fakes.passes(filt, states, spec, aggs) == [True] * 3


def test_host_without_the_key_fails(filt):
    states, aggs = _cloud()
    assert fakes.passes(filt, states, _spec(gpu='yes'), aggs) == [False] * 3


def test_flags_as_nova():
    cls = aggregate_instance_extra_specs.AggregateInstanceExtraSpecsFilter
    assert cls.run_filter_once_per_request is True
    assert cls.RUN_ON_REBUILD is False
