"""What a claim takes on a node given to the conductor (no scheduler)."""

from scheduler.objects import request_spec
from scheduler.resources import amounts


def _spec(extra_specs, vcpus=2):
    return request_spec.RequestSpec(flavor=request_spec.Flavor(
        vcpus=vcpus, memory_mb=1024, root_gb=10, extra_specs=extra_specs))


CLASSIC = {'VCPU', 'MEMORY_MB', 'DISK_GB'}


def test_a_plain_flavor_takes_its_sizes():
    assert amounts.forced_amounts(_spec({}), CLASSIC) == ((2, 1024, 10),
                                                          None)


def test_dedicated_cpus_take_pcpu_where_the_node_has_it(config):
    spec = _spec({'hw:cpu_policy': 'dedicated'})
    assert amounts.forced_amounts(spec, CLASSIC | {'PCPU'}) == (
        (0, 1024, 10), {'PCPU': 2})
    # Nova's fallback: VCPU on a node without PCPU.
    assert amounts.forced_amounts(spec, CLASSIC) == ((2, 1024, 10), None)
    config.config(disable_fallback_pcpu_query=True, group='workarounds')
    assert amounts.forced_amounts(spec, CLASSIC) == (
        (0, 1024, 10), {'PCPU': 2})


def test_an_ironic_flavor_takes_its_class_only():
    spec = _spec({'resources:CUSTOM_GOLD': '1', 'resources:VCPU': '0',
                  'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'})
    assert amounts.forced_amounts(spec, {'CUSTOM_GOLD'}) == (
        (0, 0, 0), {'CUSTOM_GOLD': 1})
