import pytest

from scheduler.filters import compute_capabilities_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return compute_capabilities_filter.ComputeCapabilitiesFilter()


def _spec(**extra_specs):
    spec = fakes.spec()
    spec.flavor.extra_specs = extra_specs
    return spec


def _passes(filt, states, **extra_specs):
    return fakes.passes(filt, states, _spec(**extra_specs))


def test_no_extra_specs_passes_all(filt):
    assert _passes(filt, [fakes.host_state(), fakes.host_state(svc=None)]) \
        == [True, True]


def test_scoped_attribute(filt):
    states = [fakes.host_state('a', hypervisor_type='QEMU'),
              fakes.host_state('b', hypervisor_type='xen')]
    assert _passes(filt, states, **{
        'capabilities:hypervisor_type': 's== QEMU'}) == [True, False]


def test_numeric_attribute_column_and_operators(filt):
    states = [fakes.host_state('a', vcpus=8), fakes.host_state('b', vcpus=32)]
    assert _passes(filt, states, **{
        'capabilities:vcpus_total': '>= 16'}) == [False, True]
    assert _passes(filt, states, **{
        'capabilities:vcpus_total': '= 8'}) == [True, True]
    assert _passes(filt, states, **{
        'capabilities:vcpus_total': '<or> 8 <or> 9'}) == [True, False]


def test_stats_when_no_attribute(filt):
    states = [fakes.host_state('a', stats={'gpu': 'a100'}),
              fakes.host_state('b', stats={'gpu': 'k80'}),
              fakes.host_state('c')]
    assert _passes(filt, states, **{
        'capabilities:gpu': '<or> a100 <or> h100'}) == [True, False, False]


def test_nested_keys_into_dicts_and_json_strings(filt):
    states = [fakes.host_state('a', stats={'cpu': {'vendor': 'Intel'}}),
              fakes.host_state('b', stats={'cpu': '{"vendor": "AMD"}'}),
              fakes.host_state('c', stats={'cpu': 'not json'})]
    assert _passes(filt, states, **{
        'capabilities:stats:cpu:vendor': 'Intel'}) == [True, False, False]
    assert _passes(filt, states, **{
        'capabilities:cpu:vendor': 'AMD'}) == [False, True, False]


def test_unscoped_key_applies_only_to_hosts_that_have_it(filt):
    states = [fakes.host_state('a', stats={'ssd': 'true'}),
              fakes.host_state('b', stats={'ssd': 'false'}),
              fakes.host_state('c')]
    assert _passes(filt, states, ssd='true') == [True, False, True]
    # An attribute every host has: checked everywhere.
    assert _passes(filt, states, hypervisor_type='fake') == [True] * 3
    assert _passes(filt, states, hypervisor_type='kvm') == [False] * 3


def test_other_scopes_are_ignored(filt):
    states = [fakes.host_state()]
    assert _passes(filt, states, **{
        'hw:cpu_policy': 'dedicated',
        'aggregate_instance_extra_specs:ssd': 'true',
        'trait:HW_CPU_X86_AVX2': 'required'}) == [True]


def test_methods_and_private_names_are_not_capabilities(filt):
    states = [fakes.host_state()]
    assert _passes(filt, states, **{'capabilities:consumed': 'x'}) == [False]
    assert _passes(filt, states, **{'capabilities:__class__': 'x'}) == [
        False]
    assert _passes(filt, states, consumed='x') == [True]


def test_all_specs_must_hold(filt):
    states = [fakes.host_state('a', vcpus=32, hypervisor_type='kvm'),
              fakes.host_state('b', vcpus=32, hypervisor_type='xen')]
    assert _passes(filt, states, **{
        'capabilities:vcpus_total': '>= 16',
        'capabilities:hypervisor_type': 'kvm'}) == [True, False]


def test_flags_as_nova():
    cls = compute_capabilities_filter.ComputeCapabilitiesFilter
    assert cls.run_filter_once_per_request is True
    assert cls.RUN_ON_REBUILD is False
