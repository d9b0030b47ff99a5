"""Nova's documented edge cases of the filters, through the scheduler:
forced hosts skip them, rebuilds run only the RUN_ON_REBUILD ones, a
refused JsonFilter query leaves nothing claimed, and a multi-instance
request skips the once-per-request filters after the first instance."""

import json

import numpy as np
import pytest

from scheduler import exception
from scheduler import filters
from scheduler.drivers import filter_scheduler
from scheduler import loadables
from scheduler.objects import request_spec
from tests.unit.scheduler import fakes

ALL_FILTERS = loadables.entry_point_names(loadables.FILTER_NAMESPACE)


@pytest.fixture
def json_driver(cloud, make_driver, config):
    config.config(enabled_filters=['ComputeFilter', 'RamFilter',
                                   'JsonFilter'], group='filter_scheduler')
    return make_driver(filter_scheduler.FilterScheduler)


def _query_spec(query, **fields):
    return fakes.spec(scheduler_hints={'query': [json.dumps(query)]},
                      **fields)


def test_forced_host_skips_the_filters(cloud, json_driver):
    cloud.add_node('a')
    cloud.add_node('b')
    nobody = ['=', '$host', 'nobody']
    with pytest.raises(exception.NoValidHost):
        json_driver.select_destinations(None, _query_spec(nobody),
                                        fakes.uuids(1), False)
    selections = json_driver.select_destinations(
        None, _query_spec(nobody, force_hosts=['b']), fakes.uuids(1), False)
    assert selections[0][0].service_host == 'b'


def test_a_query_that_calls_something_is_refused_and_claims_nothing(
        cloud, json_driver):
    cloud.add_node('a')
    uuids = fakes.uuids(2)
    spec = _query_spec(['__import__', 'os'], num_instances=2)
    with pytest.raises(exception.InvalidRequest) as error:
        json_driver.select_destinations(None, spec, uuids, False)
    assert "unknown command '__import__'" in str(error.value)
    assert cloud.allocations(uuids[0]) == {}
    assert cloud.allocations(uuids[1]) == {}


def test_query_picks_hosts(cloud, json_driver):
    cloud.add_node('small', memory_mb=4096)
    cloud.add_node('big', memory_mb=65536)
    selections = json_driver.select_destinations(
        None, _query_spec(['<', '$total_usable_ram_mb', 8192]),
        fakes.uuids(1), False)
    assert selections[0][0].service_host == 'small'


def test_rebuild_runs_only_the_rebuild_filters():
    classes = loadables.load_filter_classes(['all_filters'], ALL_FILTERS)
    on_rebuild = sorted(cls.__name__ for cls in classes
                        if cls.RUN_ON_REBUILD)
    assert {'ImagePropertiesFilter', 'AggregateImagePropertiesIsolation',
            'IsolatedHostsFilter'} <= set(on_rebuild)
    image = request_spec.ImageMeta(properties={'hw_architecture': 'aarch64'})
    # This host fails the RamFilter, IoOpsFilter and JsonFilter, which a
    # rebuild skips, and the ImagePropertiesFilter, which it runs.
    state = fakes.host_state('a', memory_mb=0, io_workload=99,
                             supported_instances=[['x86_64', 'kvm', 'hvm']])
    hosts = fakes.table([state])
    spec = _query_spec(['=', 1, 2], image=image, is_rebuild=True,
                       memory_mb=4096)
    result = filters.HostFilterHandler().run_filters(
        [cls() for cls in classes], hosts, hosts.candidates, spec)
    assert {step.name for step in result.steps} <= set(on_rebuild)
    assert result.steps[-1] == ('ImagePropertiesFilter', 1, 0)
    spec.image = None
    result = filters.HostFilterHandler().run_filters(
        [cls() for cls in classes], hosts, hosts.candidates, spec)
    assert result.passed == 1


def test_once_per_request_filters_run_for_the_first_instance_only():
    classes = loadables.load_filter_classes(['all_filters'], ALL_FILTERS)
    once = {cls.__name__ for cls in classes
            if cls.run_filter_once_per_request}
    assert {'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
            'AggregateInstanceExtraSpecsFilter',
            'AggregateImagePropertiesIsolation',
            'AggregateMultiTenancyIsolation', 'AggregateTypeAffinityFilter',
            'SimpleCIDRAffinityFilter', 'IsolatedHostsFilter'} <= once
    assert not {'AggregateRamFilter', 'AggregateCoreFilter',
                'AggregateDiskFilter', 'IoOpsFilter', 'AggregateIoOpsFilter',
                'NumInstancesFilter', 'AggregateNumInstancesFilter',
                'JsonFilter', 'RetryFilter', 'MetricsFilter',
                'TypeAffinityFilter'} & once
    hosts = fakes.table([fakes.host_state('a')])
    spec = fakes.spec()
    spec.flavor.extra_specs = {'capabilities:hypervisor_type': 'xen'}
    capabilities = [cls() for cls in classes
                    if cls.__name__ == 'ComputeCapabilitiesFilter']
    handler = filters.HostFilterHandler()
    assert handler.run_filters(capabilities, hosts, hosts.candidates,
                               spec).passed == 0
    assert handler.run_filters(capabilities, hosts, hosts.candidates, spec,
                               index=1).passed == 1
    assert np.all(hosts.candidates)
