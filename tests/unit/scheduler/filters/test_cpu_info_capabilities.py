"""ComputeCapabilitiesFilter and ImagePropertiesFilter on the cpu_info a
compute reports: capability keys walk it, and maxphysaddr bits and mode
are checked as Nova checks them."""

import pytest

from scheduler import exception
from scheduler.filters import compute_capabilities_filter
from scheduler.filters import image_props_filter
from scheduler.objects import request_spec
from tests.unit.scheduler import fakes

SKYLAKE = {'arch': 'x86_64', 'model': 'Skylake-Client-IBRS',
           'vendor': 'Intel', 'features': ['sse4.2', 'avx2'],
           'topology': {'sockets': 1, 'cores': 4, 'threads': 2},
           'maxphysaddr': {'mode': 'emulate', 'bits': 46}}
EPYC = {'arch': 'x86_64', 'model': 'EPYC', 'vendor': 'AMD',
        'features': ['sse4.2'],
        'topology': {'sockets': 2, 'cores': 16, 'threads': 2},
        'maxphysaddr': {'mode': 'emulate', 'bits': 40}}


def _hosts():
    return [fakes.host_state('a', cpu_info=SKYLAKE),
            fakes.host_state('b', cpu_info=EPYC),
            fakes.host_state('c')]          # reports no cpu_info


def _flavor_passes(**extra_specs):
    spec = fakes.spec()
    spec.flavor.extra_specs = extra_specs
    filt = compute_capabilities_filter.ComputeCapabilitiesFilter()
    return fakes.passes(filt, _hosts(), spec)


def test_capability_keys_walk_cpu_info():
    assert _flavor_passes(**{'capabilities:cpu_info:vendor': 'Intel'}) == [
        True, False, False]
    assert _flavor_passes(**{
        'capabilities:cpu_info:topology:cores': '>= 8'}) == [
        False, True, False]
    assert _flavor_passes(**{
        'capabilities:cpu_info:features': '<in> avx2'}) == [
        True, False, False]
    assert _flavor_passes(**{
        'capabilities:cpu_info:features': '<all-in> sse4.2'}) == [
        True, True, False]


def test_flavor_bits_need_at_least_as_many_reported():
    # Nova: hw:maxphysaddr_bits=N is capabilities:cpu_info:maxphysaddr:bits
    # '>= N'; a host reporting no bits fails.
    assert _flavor_passes(**{'hw:maxphysaddr_bits': '42'}) == [
        True, False, False]
    assert _flavor_passes(**{'hw:maxphysaddr_bits': '40'}) == [
        True, True, False]
    # The translated spec replaces an explicit one, as in Nova.
    assert _flavor_passes(**{
        'hw:maxphysaddr_bits': '46',
        'capabilities:cpu_info:maxphysaddr:bits': '>= 1'}) == [
        True, False, False]


def test_flavor_mode_needs_a_host_that_reports_maxphysaddr():
    assert _flavor_passes(**{'hw:maxphysaddr_mode': 'passthrough'}) == [
        True, True, False]


@pytest.mark.parametrize('key,value,message', [
    ('hw:maxphysaddr_bits', 'many', "flavor extra spec hw:maxphysaddr_bits "
     "must be a number of bits from 1 to 64, not 'many'"),
    ('hw:maxphysaddr_mode', 'host', "flavor extra spec hw:maxphysaddr_mode "
     "must be one of passthrough, emulate, not 'host'"),
])
def test_a_bad_flavor_value_is_an_invalid_request(key, value, message):
    with pytest.raises(exception.InvalidRequest) as error:
        _flavor_passes(**{key: value})
    assert message in str(error.value)


def _image_passes(states, **properties):
    spec = fakes.spec(image=request_spec.ImageMeta(properties=properties))
    return fakes.passes(image_props_filter.ImagePropertiesFilter(), states,
                        spec)


def _x86_hosts():
    return [fakes.host_state(name, cpu_info=cpu_info,
                             supported_instances=[['x86_64', 'kvm', 'hvm']])
            for name, cpu_info in (('a', SKYLAKE), ('b', EPYC), ('c', {}))]


def test_image_bits_count_with_an_architecture_and_pass_unknown_hosts():
    # Nova: a host reporting no bits passes; one with fewer fails.
    assert _image_passes(_x86_hosts(), hw_architecture='x86_64',
                         hw_maxphysaddr_bits='42') == [True, False, True]
    # Without an architecture, hypervisor type or vm mode Nova does not
    # look at the bits.
    assert _image_passes(_x86_hosts(), hw_maxphysaddr_bits='42') == [
        True, True, True]


def test_image_mode_needs_a_host_that_reports_maxphysaddr():
    assert _image_passes(_x86_hosts(), hw_maxphysaddr_mode='emulate') == [
        True, True, False]


def test_a_bad_image_value_is_an_invalid_request():
    with pytest.raises(exception.InvalidRequest,
                       match='image property hw_maxphysaddr_bits must be'):
        _image_passes(_x86_hosts(), hw_architecture='x86_64',
                      hw_maxphysaddr_bits='0')
