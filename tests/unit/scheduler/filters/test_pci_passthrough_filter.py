"""PciPassthroughFilter: hosts with free devices for the flavor's aliases,
on both paths; requests without an alias pass every host."""

import json
import logging

import hypothesis
from hypothesis import strategies as st
import pytest

from scheduler.drivers import filter_scheduler
from scheduler import exception
from scheduler.filters import pci_passthrough_filter
from scheduler import loadables
from scheduler.pci import errors
from scheduler.pci import pools
from scheduler.pci import request
from tests.unit.scheduler import fakes

QAT = json.dumps({'name': 'qat', 'vendor_id': '8086', 'product_id': '0443',
                  'device_type': 'type-PCI'})


def _state(name, device_pools=None, usage=None):
    return fakes.host_state(name, pci_device_pools=device_pools or [],
                            pci_usage=usage or {})


def _pool(count, product_id='0443', numa_node=0):
    return {'vendor_id': '8086', 'product_id': product_id,
            'numa_node': numa_node, 'count': count,
            'tags': {'dev_type': 'type-PCI'}}


def _spec(value):
    spec = fakes.spec()
    spec.flavor.extra_specs = {request.ALIAS_EXTRA_SPEC: value}
    return spec


@pytest.fixture
def filt(config):
    config.config(alias=[QAT], group='pci')
    return pci_passthrough_filter.PciPassthroughFilter()


def test_hosts_need_enough_free_matching_devices(filt):
    two = _pool(2)
    states = [_state('two-free', [two]),
              _state('one-free', [two], {pools.pool_key(two): 1}),
              _state('none'),
              _state('other-product', [_pool(4, product_id='0442')]),
              _state('spread', [_pool(1, numa_node=0), _pool(1, numa_node=1)]),
              _state('used-up', [_pool(2), _pool(5, product_id='0442')],
                     {pools.pool_key(two): 2})]
    assert fakes.passes(filt, states, _spec('qat:2')) == [
        True, False, False, False, True, False]
    assert fakes.passes(filt, states, _spec('qat')) == [
        True, True, False, False, True, False]


def test_equal_hosts_are_decided_alike(filt):
    states = [_state('a%d' % index, [_pool(index % 3)]) for index in range(9)]
    assert fakes.passes(filt, states, _spec('qat:2')) == [
        index % 3 == 2 for index in range(9)]


def test_no_alias_passes_every_host_without_reading_aliases(config):
    config.config(alias=['not JSON'], group='pci')
    filt = pci_passthrough_filter.PciPassthroughFilter()
    states = [_state('a'), _state('b', [_pool(1)]),
              fakes.host_state('plain')]
    assert fakes.passes(filt, states, fakes.spec()) == [True, True, True]


def test_a_host_without_pci_attributes_fails_pci_requests(filt):
    assert fakes.passes(filt, [fakes.host_state('plain')],
                        _spec('qat')) == [False]


def test_unknown_alias_is_invalid_input_on_both_paths(filt):
    states = [_state('a', [_pool(1)])]
    with pytest.raises(errors.PciRequestAliasNotDefined):
        filt.host_passes(states[0], _spec('nic:1'))
    hosts = fakes.table(states)
    with pytest.raises(errors.PciRequestAliasNotDefined):
        filt.filter_all(hosts, hosts.candidates | True, _spec('nic:1'))


def test_unreadable_pools_fail_the_host_with_a_warning(filt, caplog):
    caplog.set_level(logging.WARNING)
    states = [_state('broken', [dict(_pool(3), count=-1)]),
              _state('fine', [_pool(3)])]
    assert fakes.passes(filt, states, _spec('qat')) == [False, True]
    assert "'count' must be a non-negative integer" in caplog.text


def test_registered_and_flags_as_nova():
    classes = loadables.load_filter_classes(['all_filters'],
                                            ['PciPassthroughFilter'])
    assert classes == [pci_passthrough_filter.PciPassthroughFilter]
    assert pci_passthrough_filter.PciPassthroughFilter.RUN_ON_REBUILD is False
    assert not (pci_passthrough_filter.PciPassthroughFilter
                .run_filter_once_per_request)


@hypothesis.settings(max_examples=100, deadline=None,
                     suppress_health_check=[
                         hypothesis.HealthCheck.too_slow,
                         hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(
    st.lists(st.tuples(st.lists(st.tuples(st.sampled_from(('0443', '0442')),
                                          st.integers(0, 3)), max_size=3),
                       st.integers(0, 3)), min_size=1, max_size=8),
    st.sampled_from(('qat', 'qat:2', 'qat:3,qat', 'qat:5')))
def test_both_paths_agree_and_count_the_free_qat_devices(filt, hosts, value):
    states = []
    for index, (found, used) in enumerate(hosts):
        device_pools = [_pool(count, product_id=product, numa_node=node)
                        for node, (product, count) in enumerate(found)]
        usage = {}
        if device_pools:
            key = pools.pool_key(device_pools[0])
            usage[key] = min(used, device_pools[0]['count'])
        states.append(_state('h%d' % index, device_pools, usage))
    spec = _spec(value)
    passed = fakes.passes(filt, states, spec)
    needed = request.devices_needed(request.requests_from_spec(spec))
    for state, ok in zip(states, passed):
        free = pools.free_counts(state.pci_device_pools, state.pci_usage)
        matching = sum(free[pools.pool_key(pool)]
                       for pool in state.pci_device_pools
                       if pool['product_id'] == '0443')
        assert ok == (matching >= needed)
        assert pci_passthrough_filter.free_devices(state) >= (
            needed if ok else 0)


@pytest.fixture
def pci_driver(cloud, make_driver, config):
    config.config(alias=[QAT], group='pci')
    config.config(enabled_filters=['ComputeFilter', 'PciPassthroughFilter'],
                  group='filter_scheduler')
    return make_driver(filter_scheduler.FilterScheduler)


def test_in_the_scheduler_hosts_without_devices_fail_pci_requests(
        cloud, pci_driver):
    cloud.add_node('a')
    selections = pci_driver.select_destinations(None, fakes.spec(),
                                                fakes.uuids(1), False)
    assert selections[0][0].service_host == 'a'
    with pytest.raises(exception.NoValidHost) as error:
        pci_driver.select_destinations(None, _spec('qat'), fakes.uuids(1),
                                       False)
    assert 'PciPassthroughFilter 1 -> 0' in str(error.value)


def test_in_the_scheduler_an_unknown_alias_claims_nothing(cloud, pci_driver):
    cloud.add_node('a')
    uuids = fakes.uuids(1)
    with pytest.raises(exception.InvalidRequest) as error:
        pci_driver.select_destinations(None, _spec('nic:2'), uuids, False)
    assert "PCI alias 'nic'" in str(error.value)
    assert cloud.allocations(uuids[0]) == {}
