"""``[scheduler] host_manager`` and the filter list it chooses: loaded by
entry point name, refused when unknown, and Nova's baremetal filters."""

import pytest

from scheduler import conf
from scheduler.conf import baremetal as baremetal_conf
from scheduler.drivers import caching_scheduler
from scheduler.drivers import chance_scheduler
from scheduler.drivers import filter_scheduler
from scheduler import exception
from scheduler import host_cache
from scheduler import ironic_host_manager
from scheduler import loadables


def _filter_names(driver):
    return [type(filt).__name__ for filt in driver.enabled_filters]


def test_host_managers_load_by_name():
    assert loadables.load_host_manager('host_manager') is (
        host_cache.HostManager)
    assert loadables.load_host_manager('ironic_host_manager') is (
        ironic_host_manager.IronicHostManager)


def test_an_unknown_host_manager_lists_the_installed_ones():
    with pytest.raises(exception.PluginNotFound) as error:
        loadables.load_host_manager('baremetal_host_manager')
    assert str(error.value) == (
        "Unknown host manager 'baremetal_host_manager'. Available host "
        'managers: host_manager, ironic_host_manager')


def test_the_option_refuses_an_unknown_value(config):
    with pytest.raises(ValueError, match='baremetal_host_manager'):
        config.config(host_manager='baremetal_host_manager',
                      group='scheduler')


def test_defaults_as_nova(config):
    options = conf.CONF
    assert options.scheduler.host_manager == 'host_manager'
    assert options.filter_scheduler.use_baremetal_filters is False
    assert options.filter_scheduler.baremetal_enabled_filters == [
        'RetryFilter', 'AvailabilityZoneFilter', 'ComputeFilter',
        'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
        'ExactRamFilter', 'ExactDiskFilter', 'ExactCoreFilter']
    deprecated = {opt.name for opt in baremetal_conf.filter_scheduler_opts
                  if opt.deprecated_for_removal}
    assert deprecated == {'baremetal_enabled_filters',
                          'use_baremetal_filters'}


@pytest.mark.parametrize('driver_cls, auto_refresh', [
    (filter_scheduler.FilterScheduler, True),
    (caching_scheduler.CachingScheduler, False),
    (chance_scheduler.ChanceScheduler, True),
])
def test_every_driver_builds_the_configured_host_manager(
        config, make_driver, driver_cls, auto_refresh):
    driver = make_driver(driver_cls)
    assert type(driver.host_manager) is host_cache.HostManager
    config.config(host_manager='ironic_host_manager', group='scheduler')
    driver = make_driver(driver_cls)
    assert type(driver.host_manager) is (
        ironic_host_manager.IronicHostManager)
    assert driver.host_manager.auto_refresh is auto_refresh


def test_baremetal_filters_replace_the_enabled_ones(config, make_driver):
    config.config(host_manager='ironic_host_manager', group='scheduler')
    config.config(enabled_filters=['RamFilter'],
                  baremetal_enabled_filters=['ComputeFilter',
                                             'ExactRamFilter'],
                  group='filter_scheduler')
    assert _filter_names(make_driver(filter_scheduler.FilterScheduler)) == [
        'RamFilter']
    config.config(use_baremetal_filters=True, group='filter_scheduler')
    driver = make_driver(filter_scheduler.FilterScheduler)
    assert _filter_names(driver) == ['ComputeFilter', 'ExactRamFilter']
    # SIGHUP reads them again.
    config.config(baremetal_enabled_filters=['ExactCoreFilter'],
                  group='filter_scheduler')
    assert driver.reload_plugins() is True
    assert _filter_names(driver) == ['ExactCoreFilter']


def test_without_the_ironic_host_manager_the_switch_does_nothing(
        config, make_driver):
    config.config(enabled_filters=['RamFilter'], use_baremetal_filters=True,
                  baremetal_enabled_filters=['ExactRamFilter'],
                  group='filter_scheduler')
    assert _filter_names(make_driver(filter_scheduler.FilterScheduler)) == [
        'RamFilter']


def test_an_unknown_baremetal_filter_stops_the_start(config, make_driver):
    config.config(host_manager='ironic_host_manager', group='scheduler')
    config.config(baremetal_enabled_filters=['ComputeFilter', 'ExactFilter'],
                  group='filter_scheduler')
    # Unused, the list is not checked (as in Nova).
    make_driver(filter_scheduler.FilterScheduler)
    config.config(use_baremetal_filters=True, group='filter_scheduler')
    with pytest.raises(exception.PluginNotFound) as error:
        filter_scheduler.FilterScheduler()
    message = str(error.value)
    assert message.startswith("Unknown filter 'ExactFilter'. Available")
    assert message.endswith(
        '(in [filter_scheduler] baremetal_enabled_filters)')


def test_an_unknown_value_in_the_config_file_is_a_config_error(
        config, tmp_path):
    # What a daemon reports in one line at start (not a traceback).
    conf_file = tmp_path / 'gantt.conf'
    conf_file.write_text('[scheduler]\nhost_manager = baremetal\n')
    config.set_config_files([str(conf_file)])
    with pytest.raises(exception.ConfigError) as error:
        filter_scheduler.FilterScheduler()
    message = str(error.value)
    assert message.startswith('Configuration error: [scheduler] '
                              'host_manager: ')
    assert "Valid values are [host_manager, ironic_host_manager], but " \
        "found 'baremetal'" in message
