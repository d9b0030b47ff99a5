import numpy as np
import pytest
from stevedore import extension

from scheduler import exception
from scheduler import filters
from scheduler import loadables
from scheduler.drivers import filter_scheduler
from scheduler.filters import ram_filter
from scheduler.weights import ram
from tests.unit.scheduler import fakes

DEFAULT_FILTERS = ['AvailabilityZoneFilter', 'ComputeFilter', 'RamFilter',
                   'CoreFilter', 'DiskFilter', 'ComputeCapabilitiesFilter',
                   'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                   'ServerGroupAffinityFilter']


class OnlyHostPasses:
    """A third-party filter: just host_passes, no Gantt base class."""

    def host_passes(self, host_state, spec):
        return host_state.host.startswith('gpu')


class NotAFilter:
    pass


@pytest.fixture
def broken_plugins(tmp_path, monkeypatch):
    """Install a distribution whose entry points fail to import."""
    dist = tmp_path / 'broken_gantt_plugin-1.0.dist-info'
    dist.mkdir()
    (dist / 'METADATA').write_text(
        'Metadata-Version: 2.1\nName: broken-gantt-plugin\nVersion: 1.0\n')
    (dist / 'entry_points.txt').write_text(
        '[gantt.scheduler.filters]\n'
        'BrokenFilter = broken_gantt_plugin_module:BrokenFilter\n'
        '[gantt.scheduler.driver]\n'
        'broken_scheduler = broken_gantt_plugin_module:Broken\n')
    (tmp_path / 'broken_gantt_plugin_module.py').write_text(
        'import a_module_that_does_not_exist\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    # stevedore remembers each namespace's entry points for the process.
    monkeypatch.setattr(extension.ExtensionManager, 'ENTRY_POINT_CACHE', {})


def test_load_driver():
    assert loadables.load_driver('filter_scheduler') is (
        filter_scheduler.FilterScheduler)


def test_unknown_driver_lists_the_drivers():
    with pytest.raises(exception.PluginNotFound) as error:
        loadables.load_driver('fast_scheduler')
    assert str(error.value) == (
        "Unknown scheduler driver 'fast_scheduler'. "
        'Available scheduler drivers: caching_scheduler, chance_scheduler, '
        'filter_scheduler')


def test_load_filters_in_enabled_order():
    classes = loadables.load_filter_classes(['all_filters'],
                                            list(reversed(DEFAULT_FILTERS)))
    assert [cls.__name__ for cls in classes] == list(
        reversed(DEFAULT_FILTERS))


def test_unknown_filter_lists_the_available_filters():
    with pytest.raises(exception.PluginNotFound) as error:
        loadables.load_filter_classes(['all_filters'], ['RamFiltre'])
    message = str(error.value)
    assert "Unknown filter 'RamFiltre'" in message
    listed = message.split('Available filters: ')[1].split(', ')
    assert listed == sorted(listed)
    assert {'AllHostsFilter', 'AvailabilityZoneFilter', 'ComputeFilter',
            'CoreFilter', 'DiskFilter', 'RamFilter'} <= set(listed)


def test_enabled_filter_must_be_available():
    with pytest.raises(exception.PluginNotFound) as error:
        loadables.load_filter_classes(['RamFilter'], ['CoreFilter'])
    assert 'Available filters: RamFilter' in str(error.value)


def test_dotted_path_filter_is_known_by_its_class_name():
    path = __name__ + '.OnlyHostPasses'
    assert loadables.load_filter_classes(
        ['all_filters', path], ['OnlyHostPasses', 'RamFilter']) == [
            OnlyHostPasses, ram_filter.RamFilter]
    assert loadables.load_filter_classes([path], [path]) == [OnlyHostPasses]


def test_unknown_dotted_path():
    for path in ('no_such_package.mod.Filter', __name__ + '.NoSuchClass'):
        with pytest.raises(exception.PluginNotFound):
            loadables.load_filter_classes([path], ['Filter'])


def test_class_without_host_passes_is_refused():
    with pytest.raises(exception.PluginLoadFailed) as error:
        loadables.load_filter_classes([__name__ + '.NotAFilter'],
                                      ['NotAFilter'])
    assert 'no host_passes' in str(error.value)


def test_weighers():
    names = [cls.__name__ for cls in loadables.load_weigher_classes(
        ['all_weighers'])]
    assert names == sorted(names)
    assert {'CPUWeigher', 'DiskWeigher', 'RAMWeigher'} <= set(names)
    assert loadables.load_weigher_classes(
        ['RAMWeigher', 'all_weighers'])[0] is ram.RAMWeigher
    assert len(loadables.load_weigher_classes(
        ['RAMWeigher', 'all_weighers'])) == len(names)


def test_unknown_weigher_lists_the_weighers():
    with pytest.raises(exception.PluginNotFound) as error:
        loadables.load_weigher_classes(['RamWeigher'])
    assert "Unknown weigher 'RamWeigher'" in str(error.value)
    listed = str(error.value).split('Available weighers: ')[1].split(', ')
    assert listed == sorted(listed)
    assert {'CPUWeigher', 'DiskWeigher', 'RAMWeigher'} <= set(listed)


def test_broken_entry_point_fails_clearly(broken_plugins):
    assert 'BrokenFilter' in loadables.entry_point_names(
        loadables.FILTER_NAMESPACE)
    with pytest.raises(exception.PluginLoadFailed) as error:
        loadables.load_filter_classes(['all_filters'], ['BrokenFilter'])
    assert 'a_module_that_does_not_exist' in str(error.value)
    with pytest.raises(exception.PluginLoadFailed):
        loadables.load_driver('broken_scheduler')


def test_broken_plugin_nobody_enables_is_harmless(broken_plugins):
    classes = loadables.load_filter_classes(['all_filters'], ['RamFilter'])
    assert classes == [ram_filter.RamFilter]


def test_third_party_filter_works_through_the_handler():
    [cls] = loadables.load_filter_classes(
        [__name__ + '.OnlyHostPasses'], ['OnlyHostPasses'])
    hosts = fakes.table([fakes.host_state('gpu1'), fakes.host_state('cpu1'),
                         fakes.host_state('gpu2')])
    result = filters.HostFilterHandler().run_filters(
        [cls(), ram_filter.RamFilter()], hosts, hosts.candidates,
        fakes.spec())
    assert list(np.flatnonzero(result.mask)) == [0, 2]
    assert result.explain() == ('2/3 hosts available: OnlyHostPasses 3 -> 2, '
                                'RamFilter 2 -> 2')
