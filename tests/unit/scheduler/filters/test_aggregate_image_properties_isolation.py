import pytest

from scheduler.filters import aggregate_image_properties_isolation as aipi
from scheduler.objects import request_spec
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return aipi.AggregateImagePropertiesIsolation()


def _spec(**properties):
    return fakes.spec(image=request_spec.ImageMeta(properties=properties))


def _cloud():
    windows = fakes.aggregate('windows', ['a'], os_type='windows')
    linux = fakes.aggregate('linux', ['b'], os_type='linux, bsd',
                            availability_zone='az1')
    states = [fakes.host_state('a', aggregates=[windows]),
              fakes.host_state('b', aggregates=[linux]),
              fakes.host_state('c')]
    return states, [windows, linux]


def test_property_must_be_one_of_the_values(filt):
    states, aggs = _cloud()
    assert fakes.passes(filt, states, _spec(os_type='windows'), aggs) == [
        True, False, True]
    assert fakes.passes(filt, states, _spec(os_type='bsd'), aggs) == [
        False, True, True]


def test_keys_the_image_does_not_set_are_ignored(filt):
    states, aggs = _cloud()
    assert fakes.passes(filt, states, _spec(hw_disk_bus='scsi'), aggs) == [
        True, True, True]
    assert fakes.passes(filt, states, fakes.spec(), aggs) == [True] * 3


def test_namespace(filt, config):
    config.config(aggregate_image_properties_isolation_namespace='iso',
                  aggregate_image_properties_isolation_separator='/',
                  group='filter_scheduler')
    agg = fakes.aggregate('ns', ['a'], **{'iso/os': 'linux',
                                          'os_type': 'windows'})
    states = [fakes.host_state('a', aggregates=[agg])]
    assert fakes.passes(filt, states, _spec(os_type='linux'), [agg]) == [
        True]
    assert fakes.passes(filt, states, _spec(**{'iso/os': 'bsd'}),
                        [agg]) == [False]


def test_flags_as_nova():
    assert aipi.AggregateImagePropertiesIsolation.RUN_ON_REBUILD is True
    assert aipi.AggregateImagePropertiesIsolation.\
        run_filter_once_per_request is True
