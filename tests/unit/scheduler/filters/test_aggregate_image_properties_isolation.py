import pytest

from scheduler.drivers import explain
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
    """Nova compares only the keys that start with namespace + separator,
    and of those only the ones that name an image property: with ``hw``
    and ``_``, ``hw_disk_bus`` counts, ``os_type`` does not."""
    config.config(aggregate_image_properties_isolation_namespace='hw',
                  aggregate_image_properties_isolation_separator='_',
                  group='filter_scheduler')
    agg = fakes.aggregate('ns', ['a'], hw_disk_bus='virtio',
                          os_type='windows')
    states = [fakes.host_state('a', aggregates=[agg])]
    assert fakes.passes(filt, states, _spec(os_type='linux'), [agg]) == [
        True]
    assert fakes.passes(filt, states, _spec(hw_disk_bus='scsi'),
                        [agg]) == [False]
    assert fakes.passes(filt, states, _spec(hw_disk_bus='virtio'),
                        [agg]) == [True]


def test_keys_that_name_no_image_property_are_ignored(filt, config):
    """Nova reads the image through its model, which has no ``iso.os``
    nor legacy ``architecture`` field: such aggregate keys never fail a
    host, even with a namespace that selects them."""
    agg = fakes.aggregate('odd', ['a'], **{'iso.os': 'linux',
                                           'architecture': 'aarch64'})
    states = [fakes.host_state('a', aggregates=[agg])]
    spec = _spec(**{'iso.os': 'bsd', 'architecture': 'x86_64'})
    assert fakes.passes(filt, states, spec, [agg]) == [True]
    config.config(aggregate_image_properties_isolation_namespace='iso',
                  group='filter_scheduler')
    assert fakes.passes(filt, states, spec, [agg]) == [True]


def test_legacy_names_and_canonical_values(filt):
    """Nova reads ``architecture=AMD64`` as ``hw_architecture`` ``x86_64``
    and ``vm_mode=pv`` as ``hw_vm_mode`` ``xen``, then compares those with
    the aggregate's values."""
    agg = fakes.aggregate('x86', ['a'], hw_architecture='x86_64',
                          hw_vm_mode='hvm, xen')
    states = [fakes.host_state('a', aggregates=[agg])]
    assert fakes.passes(filt, states, _spec(architecture='AMD64'),
                        [agg]) == [True]
    assert fakes.passes(filt, states, _spec(architecture='aarch64'),
                        [agg]) == [False]
    assert fakes.passes(filt, states, _spec(vm_mode='pv'), [agg]) == [True]
    assert fakes.passes(filt, states, _spec(hw_vm_mode='exe'),
                        [agg]) == [False]
    # The current name wins over the legacy one.
    assert fakes.passes(filt, states, _spec(architecture='x86_64',
                                            hw_architecture='aarch64'),
                        [agg]) == [False]


def test_typed_values_compare_as_python_text(filt):
    """Nova compares ``str()`` of the typed value: ``hw_qemu_guest_agent=
    yes`` is ``True``, so an aggregate must say ``True``; a false value
    is not compared at all (``if prop and ...``); integers lose their
    padding (``' 2'`` is ``2``)."""
    agg = fakes.aggregate('agent', ['a'], hw_qemu_guest_agent='True',
                          hw_cpu_cores='2')
    states = [fakes.host_state('a', aggregates=[agg])]
    assert fakes.passes(filt, states, _spec(hw_qemu_guest_agent='yes'),
                        [agg]) == [True]
    assert fakes.passes(filt, states, _spec(hw_qemu_guest_agent='no'),
                        [agg]) == [True]
    assert fakes.passes(filt, states, _spec(hw_cpu_cores=' 2'),
                        [agg]) == [True]
    assert fakes.passes(filt, states, _spec(hw_cpu_cores='4'),
                        [agg]) == [False]
    other = fakes.aggregate('agent', ['a'], hw_qemu_guest_agent='yes')
    states = [fakes.host_state('a', aggregates=[other])]
    assert fakes.passes(filt, states, _spec(hw_qemu_guest_agent='yes'),
                        [other]) == [False]


def test_flags_as_nova():
    assert aipi.AggregateImagePropertiesIsolation.RUN_ON_REBUILD is True
    assert aipi.AggregateImagePropertiesIsolation.\
        run_filter_once_per_request is True


def test_reason_names_the_value_and_what_is_allowed(filt):
    agg = fakes.aggregate('arm', ['a'], hw_architecture='aarch64, armv7l')
    state = fakes.host_state('a', aggregates=[agg])
    reason = explain.reject_reason(filt, state, _spec(architecture='AMD64'))
    assert reason.endswith('do not allow hw_architecture=x86_64 (only '
                           'aarch64, armv7l)')
