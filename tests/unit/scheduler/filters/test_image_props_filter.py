import pytest

from scheduler.filters import image_props_filter
from scheduler.objects import request_spec
from tests.unit.scheduler import fakes

X86_QEMU = ['x86_64', 'qemu', 'hvm']


@pytest.fixture
def filt():
    return image_props_filter.ImagePropertiesFilter()


def _spec(**properties):
    return fakes.spec(image=request_spec.ImageMeta(properties=properties))


def _host(supported=(X86_QEMU,), version=6000000, **kwargs):
    return fakes.host_state(supported_instances=[list(s) for s in supported],
                            hypervisor_version=version, **kwargs)


def test_image_without_properties_passes_all(filt):
    states = [_host(), _host(supported=())]
    assert fakes.passes(filt, states, _spec()) == [True, True]
    assert fakes.passes(filt, states, fakes.spec()) == [True, True]


def test_architecture_hv_type_and_vm_mode(filt):
    states = [_host(), _host(supported=[['aarch64', 'qemu', 'hvm']]),
              _host(supported=[['x86_64', 'xen', 'xen']])]
    assert fakes.passes(filt, states, _spec(hw_architecture='x86_64')) == [
        True, False, True]
    assert fakes.passes(filt, states, _spec(img_hv_type='qemu')) == [
        True, True, False]
    assert fakes.passes(filt, states, _spec(hw_vm_mode='xen')) == [
        False, False, True]
    assert fakes.passes(filt, states, _spec(
        hw_architecture='x86_64', img_hv_type='qemu',
        hw_vm_mode='hvm')) == [True, False, False]


def test_one_supported_entry_must_hold_them_all(filt):
    state = _host(supported=[['x86_64', 'xen', 'hvm'],
                             ['aarch64', 'qemu', 'hvm']])
    assert fakes.passes(filt, [state], _spec(
        hw_architecture='x86_64', img_hv_type='qemu')) == [False]


def test_names_are_canonicalised(filt):
    states = [_host(), _host(supported=[['i686', 'xen', 'xen']])]
    assert fakes.passes(filt, states, _spec(hw_architecture='AMD64')) == [
        True, False]
    assert fakes.passes(filt, states, _spec(hw_architecture='i386')) == [
        False, True]
    assert fakes.passes(filt, states, _spec(img_hv_type='xapi',
                                            hw_vm_mode='pv')) == [
        False, True]
    assert fakes.passes(filt, states, _spec(hw_vm_mode='HV')) == [
        True, False]


def test_legacy_property_names(filt):
    states = [_host(), _host(supported=[['aarch64', 'qemu', 'hvm']])]
    assert fakes.passes(filt, states, _spec(architecture='aarch64')) == [
        False, True]


def test_host_without_supported_instances_fails_a_demanding_image(filt):
    assert fakes.passes(filt, [_host(supported=())],
                        _spec(hw_architecture='x86_64')) == [False]


def test_default_architecture(filt, config):
    config.config(image_properties_default_architecture='aarch64',
                  group='filter_scheduler')
    states = [_host(), _host(supported=[['aarch64', 'qemu', 'hvm']])]
    assert fakes.passes(filt, states, _spec()) == [False, True]
    assert fakes.passes(filt, states, _spec(hw_architecture='x86_64')) == [
        True, False]


def test_requested_hypervisor_version(filt):
    states = [_host(version=6000000), _host(version=7002001),
              _host(version=0)]
    assert fakes.passes(filt, states, _spec(
        img_hv_type='qemu', img_hv_requested_version='>=6.0, <7.0')) == [
            True, False, True]
    assert fakes.passes(filt, states, _spec(
        img_hv_type='qemu', img_hv_requested_version='>= 7.2.1')) == [
            False, True, True]
    assert fakes.passes(filt, states, _spec(
        img_hv_type='qemu', img_hv_requested_version='== 6')) == [
            True, False, True]


def test_unreadable_version_requirement_is_met_by_no_version(filt, caplog):
    assert fakes.passes(filt, [_host()], _spec(
        img_hv_type='qemu', img_hv_requested_version='about 6')) == [False]
    assert 'Cannot read the hypervisor version requirement' in caplog.text


def test_version_parts():
    assert image_props_filter.version_parts(6002001) == (6, 2, 1)
    assert image_props_filter.version_parts(1000) == (1, 0)
    assert image_props_filter.version_parts(0) == ()


def test_flags_as_nova():
    cls = image_props_filter.ImagePropertiesFilter
    assert cls.RUN_ON_REBUILD is True
    assert cls.run_filter_once_per_request is True
