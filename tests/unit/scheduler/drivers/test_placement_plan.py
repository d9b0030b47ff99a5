"""placement_stage.Plan on its own: when the stage runs, the PCPU
fallback, the limit, and what a claim on a row takes."""

import types

import numpy as np

from scheduler.drivers import placement_stage
from scheduler.objects import request_spec
from scheduler.resources import candidates
from scheduler.resources import provider_columns as pc


def _spec(extra_specs=None, vcpus=2, **fields):
    return request_spec.RequestSpec(flavor=request_spec.Flavor(
        vcpus=vcpus, memory_mb=1024, root_gb=10,
        extra_specs=extra_specs or {}), **fields)


def _table(*providers):
    return types.SimpleNamespace(
        placement=candidates.ProviderTable(list(providers)))


def _host(uuid, pcpu=0, vcpu=8, traits=()):
    inventories = {'VCPU': pc.Inventory(vcpu),
                   'MEMORY_MB': pc.Inventory(8192),
                   'DISK_GB': pc.Inventory(100)}
    if pcpu:
        inventories['PCPU'] = pc.Inventory(pcpu)
    return pc.Provider(uuid, inventories=inventories,
                       traits=frozenset(traits))


def test_a_plain_flavor_skips_the_stage_without_parsing():
    plan = placement_stage.plan_for(_spec(), ())
    assert not plan.needed
    mask = np.array([True, False])
    assert placement_stage.plan_for(_spec(), ()).cut(
        None, mask, []) == (mask, [])


def test_an_override_of_a_classic_class_is_the_flavor_size_it_sets():
    # The capacity filters and the claim read spec.resources(), which
    # takes the override: the stage has nothing to add.
    spec = _spec({'resources:VCPU': '1', 'resources:DISK_GB': '0'})
    assert spec.resources() == (1, 1024, 0)
    assert not placement_stage.plan_for(spec, ()).needed


def test_traits_need_the_stage_and_cut_the_hosts():
    plan = placement_stage.plan_for(
        _spec({'trait:HW_CPU_X86_AVX2': 'required'}), ())
    table = _table(_host('a', traits=['HW_CPU_X86_AVX2']), _host('b'))
    mask, steps = plan.cut(table, np.array([True, True]), [])
    assert mask.tolist() == [True, False]
    assert [tuple(step) for step in steps] == [('resources', 2, 1)]


def test_dedicated_cpus_ask_pcpu_and_fall_back_to_vcpu(config):
    spec = _spec({'hw:cpu_policy': 'dedicated'})
    table = _table(_host('pcpu', pcpu=4), _host('vcpu-only'))
    plan = placement_stage.plan_for(spec, ())
    mask, _steps = plan.cut(table, np.array([True, True]), [])
    assert mask.tolist() == [True, True]
    assert plan.amounts(table, 0) == ((0, 1024, 10), {'PCPU': 2})
    assert plan.amounts(table, 1) == ((2, 1024, 10), {})
    # Without the fallback, a host with no PCPU is out.
    config.config(disable_fallback_pcpu_query=True, group='workarounds')
    plan = placement_stage.plan_for(spec, ())
    mask, _steps = plan.cut(table, np.array([True, True]), [])
    assert mask.tolist() == [True, False]


def test_max_placement_results_keeps_the_first_rows(config):
    config.config(max_placement_results=2, group='scheduler')
    plan = placement_stage.plan_for(_spec({'trait:CUSTOM_A': 'required'}),
                                    ())
    table = _table(*[_host(str(n), traits=['CUSTOM_A']) for n in range(4)])
    mask, steps = plan.cut(table, np.array([False, True, True, True]), [])
    assert mask.tolist() == [False, True, True, False]
    assert [tuple(step) for step in steps] == [('resources', 3, 2)]
