"""The [filter_scheduler] and [metrics] options of the filters and
weighers have Nova's names and defaults, and are read per request."""

import pytest

from scheduler import conf

CONF = conf.CONF


def test_default_filters_are_novas():
    assert CONF.filter_scheduler.enabled_filters == [
        'AvailabilityZoneFilter', 'ComputeFilter', 'RamFilter', 'CoreFilter',
        'DiskFilter', 'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
        'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter']


@pytest.mark.parametrize('name, default', [
    ('max_io_ops_per_host', 8), ('max_instances_per_host', 50),
    ('isolated_images', []), ('isolated_hosts', []),
    ('restrict_isolated_hosts_to_isolated_images', True),
    ('aggregate_image_properties_isolation_namespace', None),
    ('aggregate_image_properties_isolation_separator', '.'),
    ('image_properties_default_architecture', None),
    ('io_ops_weight_multiplier', -1.0),
    ('build_failure_weight_multiplier', 1000000.0),
    ('num_instances_weight_multiplier', 0.0),
    ('hypervisor_version_weight_multiplier', 1.0),
    ('image_props_weight_multiplier', 0.0),
    ('image_props_weight_setting', []),
    ('pci_weight_multiplier', 1.0),
])
def test_filter_scheduler_defaults(name, default):
    assert getattr(CONF.filter_scheduler, name) == default
    assert CONF._get_opt_info(name, 'filter_scheduler')['opt'].mutable


@pytest.mark.parametrize('name, default', [
    ('weight_multiplier', 1.0), ('weight_setting', []), ('required', True),
    ('weight_of_unavailable', -10000.0)])
def test_metrics_defaults(name, default):
    assert getattr(CONF.metrics, name) == default
    assert CONF._get_opt_info(name, 'metrics')['opt'].mutable


@pytest.mark.parametrize('name, value', [
    ('max_io_ops_per_host', -1), ('max_instances_per_host', 0),
    ('pci_weight_multiplier', -0.5),
    ('image_properties_default_architecture', 'x86')])
def test_out_of_range_values_are_refused(config, name, value):
    with pytest.raises(ValueError):
        config.config(**{name: value, 'group': 'filter_scheduler'})
