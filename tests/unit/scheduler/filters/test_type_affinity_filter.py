import pytest

from scheduler import host_cache
from scheduler.filters import type_affinity_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return type_affinity_filter.TypeAffinityFilter()


def _host(name, *flavors):
    state = fakes.host_state(name)
    state.instances = {
        'uuid-%s-%d' % (name, number): host_cache.InstanceInfo(flavor, {})
        for number, flavor in enumerate(flavors)}
    return state


def _spec(flavorid=None, name=None):
    spec = fakes.spec()
    spec.flavor.flavorid = flavorid
    spec.flavor.name = name
    return spec


def test_empty_hosts_and_hosts_of_the_same_flavor_pass(filt):
    states = [_host('empty'), _host('same', 'f1', 'f1'),
              _host('mixed', 'f1', 'f2'), _host('other', 'f2')]
    assert fakes.passes(filt, states, _spec('f1')) == [
        True, True, False, False]
    assert fakes.passes(filt, states, _spec('f2')) == [
        True, False, False, True]


def test_flavor_without_id_is_known_by_name(filt):
    states = [_host('a', 'm1.small'), _host('b', 'm1.large')]
    assert fakes.passes(filt, states, _spec(name='m1.small')) == [
        True, False]


def test_instances_placed_since_count(filt):
    hosts = fakes.table([_host('a'), _host('b', 'f2')])
    hosts = host_cache.with_instance(
        hosts, 0, 'new', host_cache.InstanceInfo('f3', {}))
    assert list(filt.filter_all(hosts, hosts.candidates, _spec('f1'))) == [
        False, False]
    assert list(filt.filter_all(hosts, hosts.candidates, _spec('f3'))) == [
        True, False]


def test_flags_as_nova():
    assert type_affinity_filter.TypeAffinityFilter.RUN_ON_REBUILD is False
    assert not type_affinity_filter.TypeAffinityFilter.\
        run_filter_once_per_request
