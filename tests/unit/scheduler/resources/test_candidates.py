"""Allocation candidates over columns: one rule of Placement's per test.

Each test builds a small cloud, asks a request, and checks which roots
are accepted and what allocation a claim would write.
"""

import pytest

from scheduler.resources import candidates
from scheduler.resources import provider_columns
from scheduler.resources import request as request_mod

Inventory = provider_columns.Inventory
Group = request_mod.RequestGroup


def provider(uuid, parent=None, used=None, traits=(), aggregates=(),
             **inventories):
    return provider_columns.Provider(
        uuid, parent, {name: (value if isinstance(value, Inventory)
                              else Inventory(value))
                       for name, value in inventories.items()},
        used or {}, frozenset(traits), frozenset(aggregates))


def ask(*groups, policy=None, root_required=(), root_forbidden=()):
    return request_mod.ResourceRequest(
        tuple(groups), policy, frozenset(root_required),
        frozenset(root_forbidden))


def accepted(providers, request):
    return candidates.ProviderTable(providers).accepted_root_uuids(request)


def test_capacity_is_total_less_reserved_times_ratio_less_used():
    cloud = [provider('cn1', VCPU=Inventory(4, reserved=1,
                                            allocation_ratio=2.0),
                      used={'VCPU': 2}),
             provider('cn2', VCPU=Inventory(4), used={'VCPU': 1})]
    # cn1: (4 - 1) * 2 - 2 = 4 free; cn2: 3 free.
    assert accepted(cloud, ask(Group(resources={'VCPU': 4}))) == ['cn1']
    assert accepted(cloud, ask(Group(resources={'VCPU': 3}))) == [
        'cn1', 'cn2']
    assert accepted(cloud, ask(Group(resources={'VCPU': 5}))) == []


def test_capacity_rounds_down_a_fractional_ratio():
    # 3 * 1.5 = 4.5: 4 fit, 5 do not (max_unit out of the way).
    cloud = [provider('cn1', VCPU=Inventory(3, allocation_ratio=1.5,
                                            max_unit=8))]
    assert accepted(cloud, ask(Group(resources={'VCPU': 4}))) == ['cn1']
    assert accepted(cloud, ask(Group(resources={'VCPU': 5}))) == []


@pytest.mark.parametrize('amount, fits', [
    (256, False), (512, True), (768, True), (700, False), (1024, True),
    (1280, False)])
def test_min_unit_max_unit_and_step_size(amount, fits):
    cloud = [provider('cn1', MEMORY_MB=Inventory(
        4096, min_unit=512, max_unit=1024, step_size=256))]
    request = ask(Group(resources={'MEMORY_MB': amount}))
    assert accepted(cloud, request) == (['cn1'] if fits else [])


def test_a_class_without_inventory_anywhere_fits_nowhere():
    cloud = [provider('cn1', VCPU=4)]
    assert accepted(cloud, ask(Group(resources={'CUSTOM_GPU': 1}))) == []


def test_unsuffixed_group_spreads_classes_over_the_tree():
    cloud = [provider('cn1', DISK_GB=100),
             provider('numa0', 'cn1', VCPU=4, MEMORY_MB=2048),
             provider('numa1', 'cn1', VCPU=2, MEMORY_MB=8192),
             provider('cn2', DISK_GB=100)]
    table = candidates.ProviderTable(cloud)
    request = ask(Group(resources={'VCPU': 4, 'MEMORY_MB': 4096,
                                   'DISK_GB': 10}))
    assert table.accepted_root_uuids(request) == ['cn1']
    assert table.allocation_for(request, 'cn1') == {
        'cn1': {'DISK_GB': 10}, 'numa0': {'VCPU': 4},
        'numa1': {'MEMORY_MB': 4096}}
    assert table.allocation_for(request, 'cn2') is None


def test_suffixed_group_takes_everything_from_one_provider():
    cloud = [provider('cn1'),
             provider('numa0', 'cn1', VCPU=4, MEMORY_MB=2048),
             provider('numa1', 'cn1', VCPU=2, MEMORY_MB=8192),
             provider('cn2'),
             provider('numa2', 'cn2', VCPU=4, MEMORY_MB=8192)]
    table = candidates.ProviderTable(cloud)
    request = ask(Group('1', resources={'VCPU': 4, 'MEMORY_MB': 4096}))
    assert table.accepted_root_uuids(request) == ['cn2']
    assert table.allocation_for(request, 'cn2') == {
        'numa2': {'VCPU': 4, 'MEMORY_MB': 4096}}


def _two_pfs(vfs=4):
    return [provider('cn1', VCPU=8),
            provider('pf1', 'cn1', SRIOV_NET_VF=vfs),
            provider('cn2', VCPU=8),
            provider('pf2', 'cn2', SRIOV_NET_VF=vfs),
            provider('pf3', 'cn2', SRIOV_NET_VF=vfs)]


def test_isolate_puts_granular_groups_on_distinct_providers():
    groups = (Group('1', resources={'SRIOV_NET_VF': 1}),
              Group('2', resources={'SRIOV_NET_VF': 1}))
    table = candidates.ProviderTable(_two_pfs())
    assert table.accepted_root_uuids(ask(*groups, policy='isolate')) == [
        'cn2']
    assert table.allocation_for(ask(*groups, policy='isolate'), 'cn2') == {
        'pf2': {'SRIOV_NET_VF': 1}, 'pf3': {'SRIOV_NET_VF': 1}}
    assert table.accepted_root_uuids(ask(*groups, policy='none')) == [
        'cn1', 'cn2']


def test_groups_sharing_a_provider_sum_their_amounts():
    groups = (Group('1', resources={'SRIOV_NET_VF': 3}),
              Group('2', resources={'SRIOV_NET_VF': 2}))
    table = candidates.ProviderTable(_two_pfs(vfs=4))
    # cn1's single PF would need 5 of 4; cn2 spreads over two PFs.
    assert table.accepted_root_uuids(ask(*groups, policy='none')) == ['cn2']
    table = candidates.ProviderTable(_two_pfs(vfs=5))
    request = ask(*groups, policy='none')
    assert table.accepted_root_uuids(request) == ['cn1', 'cn2']
    assert table.allocation_for(request, 'cn1') == {
        'pf1': {'SRIOV_NET_VF': 5}}


def test_max_unit_bounds_the_sum_of_groups_on_one_provider():
    cloud = [provider('cn1', VCPU=Inventory(16, max_unit=4))]
    one = ask(Group(resources={'VCPU': 3}), Group('1', resources={'VCPU': 1}))
    two = ask(Group(resources={'VCPU': 3}), Group('1', resources={'VCPU': 2}))
    table = candidates.ProviderTable(cloud)
    assert table.accepted_root_uuids(one) == ['cn1']
    assert table.allocation_for(one, 'cn1') == {'cn1': {'VCPU': 4}}
    assert table.accepted_root_uuids(two) == []


def test_unsuffixed_traits_are_carried_by_the_providers_used_together():
    cloud = [provider('cn1', traits={'HW_CPU_X86_AVX2'}, VCPU=8),
             provider('pf1', 'cn1', traits={'CUSTOM_PHYSNET_A'},
                      SRIOV_NET_VF=4),
             provider('cn2', traits={'HW_CPU_X86_AVX2'}, VCPU=8),
             # Has the trait but gives nothing: it does not count.
             provider('gpu', 'cn2', traits={'CUSTOM_PHYSNET_A'},
                      CUSTOM_GPU=1),
             provider('pf2', 'cn2', SRIOV_NET_VF=4)]
    request = ask(Group(resources={'VCPU': 1, 'SRIOV_NET_VF': 1},
                        required_traits=frozenset({'HW_CPU_X86_AVX2',
                                                   'CUSTOM_PHYSNET_A'})))
    table = candidates.ProviderTable(cloud)
    assert table.accepted_root_uuids(request) == ['cn1']
    assert table.allocation_for(request, 'cn1') == {
        'cn1': {'VCPU': 1}, 'pf1': {'SRIOV_NET_VF': 1}}


def test_unsuffixed_traits_choose_among_providers_of_one_class():
    # Either PF gives the VF; only pf_b's trait completes the request.
    cloud = [provider('cn1', traits={'CUSTOM_GOLD'}, VCPU=8),
             provider('pf_a', 'cn1', SRIOV_NET_VF=4),
             provider('pf_b', 'cn1', traits={'CUSTOM_PHYSNET_B'},
                      SRIOV_NET_VF=4)]
    request = ask(Group(resources={'VCPU': 1, 'SRIOV_NET_VF': 1},
                        required_traits=frozenset({'CUSTOM_GOLD',
                                                   'CUSTOM_PHYSNET_B'})))
    table = candidates.ProviderTable(cloud)
    assert table.accepted_root_uuids(request) == ['cn1']
    assert table.allocation_for(request, 'cn1') == {
        'cn1': {'VCPU': 1}, 'pf_b': {'SRIOV_NET_VF': 1}}


def test_suffixed_traits_are_the_provider_s_own():
    cloud = [provider('cn1', traits={'CUSTOM_PHYSNET_A'}, VCPU=8),
             provider('pf1', 'cn1', SRIOV_NET_VF=4),
             provider('cn2', VCPU=8),
             provider('pf2', 'cn2', traits={'CUSTOM_PHYSNET_A'},
                      SRIOV_NET_VF=4)]
    request = ask(Group('1', resources={'SRIOV_NET_VF': 1},
                        required_traits=frozenset({'CUSTOM_PHYSNET_A'})))
    assert accepted(cloud, request) == ['cn2']


def test_forbidden_traits_rule_out_providers_not_trees():
    cloud = [provider('cn1', VCPU=8),
             provider('pf_bad', 'cn1', traits={'CUSTOM_SLOW'},
                      SRIOV_NET_VF=4),
             provider('pf_ok', 'cn1', SRIOV_NET_VF=4),
             provider('cn2', VCPU=8),
             provider('pf2', 'cn2', traits={'CUSTOM_SLOW'}, SRIOV_NET_VF=4)]
    forbidden = frozenset({'CUSTOM_SLOW'})
    unsuffixed = ask(Group(resources={'VCPU': 1, 'SRIOV_NET_VF': 1},
                           forbidden_traits=forbidden))
    table = candidates.ProviderTable(cloud)
    assert table.accepted_root_uuids(unsuffixed) == ['cn1']
    assert table.allocation_for(unsuffixed, 'cn1') == {
        'cn1': {'VCPU': 1}, 'pf_ok': {'SRIOV_NET_VF': 1}}
    suffixed = ask(Group('1', resources={'SRIOV_NET_VF': 1},
                         forbidden_traits=forbidden))
    assert table.accepted_root_uuids(suffixed) == ['cn1']


def test_unsuffixed_forbidden_trait_on_an_unused_provider_is_harmless():
    cloud = [provider('cn1', traits={'CUSTOM_SLOW'}),
             provider('numa0', 'cn1', VCPU=8)]
    request = ask(Group(resources={'VCPU': 1},
                        forbidden_traits=frozenset({'CUSTOM_SLOW'})))
    assert accepted(cloud, request) == ['cn1']


def test_member_of_on_the_root_spans_the_tree_for_the_unsuffixed_group():
    cloud = [provider('cn1', aggregates={'agg1'}),
             provider('numa0', 'cn1', VCPU=8),
             provider('cache', 'numa0', CUSTOM_LLC=4),
             provider('cn2'),
             provider('numa1', 'cn2', aggregates={'agg1'}, VCPU=8)]
    member = (frozenset({'agg1'}),)
    unsuffixed = ask(Group(resources={'VCPU': 1, 'CUSTOM_LLC': 1},
                           member_of=member))
    assert accepted(cloud, unsuffixed) == ['cn1']
    # A suffixed group's provider must itself be in the aggregate.
    suffixed = ask(Group('1', resources={'VCPU': 1}, member_of=member))
    assert accepted(cloud, suffixed) == ['cn2']


def test_member_of_is_any_of_within_a_set_and_all_of_across_sets():
    cloud = [provider('cn1', aggregates={'a', 'c'}, VCPU=8),
             provider('cn2', aggregates={'b', 'c'}, VCPU=8),
             provider('cn3', aggregates={'a', 'b'}, VCPU=8)]
    request = ask(Group(resources={'VCPU': 1},
                        member_of=(frozenset({'a', 'b'}), frozenset({'c'}))))
    assert accepted(cloud, request) == ['cn1', 'cn2']
    unknown = ask(Group(resources={'VCPU': 1},
                        member_of=(frozenset({'nowhere'}),)))
    assert accepted(cloud, unknown) == []


def test_forbidden_aggregates_of_the_root_cover_its_children():
    cloud = [provider('cn1', aggregates={'bad'}),
             provider('numa0', 'cn1', VCPU=8),
             provider('cn2'),
             provider('numa1', 'cn2', aggregates={'bad'}, VCPU=8),
             provider('numa2', 'cn2', VCPU=8)]
    bad = frozenset({'bad'})
    unsuffixed = ask(Group(resources={'VCPU': 1}, forbidden_aggregates=bad))
    table = candidates.ProviderTable(cloud)
    assert table.accepted_root_uuids(unsuffixed) == ['cn2']
    assert table.allocation_for(unsuffixed, 'cn2') == {'numa2': {'VCPU': 1}}
    suffixed = ask(Group('1', resources={'VCPU': 1}, forbidden_aggregates=bad))
    assert table.accepted_root_uuids(suffixed) == ['cn1', 'cn2']


def test_root_required_and_root_forbidden_read_the_root_only():
    cloud = [provider('cn1', traits={'COMPUTE_STATUS_DISABLED'}, VCPU=8),
             provider('cn2', VCPU=8),
             provider('numa', 'cn2', traits={'CUSTOM_GOLD'}, VCPU=8),
             provider('cn3', traits={'CUSTOM_GOLD'}, VCPU=8)]
    group = Group(resources={'VCPU': 1})
    assert accepted(cloud, ask(group, root_forbidden={
        'COMPUTE_STATUS_DISABLED'})) == ['cn2', 'cn3']
    assert accepted(cloud, ask(group, root_required={'CUSTOM_GOLD'})) == [
        'cn3']


def test_a_group_without_resources_needs_one_provider_with_its_traits():
    cloud = [provider('cn1', VCPU=8),
             provider('pf1', 'cn1', traits={'CUSTOM_PHYSNET_A'}),
             provider('cn2', VCPU=8)]
    request = ask(Group(resources={'VCPU': 1}),
                  Group('1', required_traits=frozenset({'CUSTOM_PHYSNET_A'})))
    table = candidates.ProviderTable(cloud)
    assert table.accepted_root_uuids(request) == ['cn1']
    assert table.allocation_for(request, 'cn1') == {'cn1': {'VCPU': 1}}


def test_isolate_counts_groups_without_resources():
    cloud = [provider('cn1', traits={'CUSTOM_A', 'CUSTOM_B'}, VCPU=8),
             provider('cn2', traits={'CUSTOM_A'}, VCPU=8),
             provider('pf', 'cn2', traits={'CUSTOM_B'})]
    request = ask(Group('1', resources={'VCPU': 1},
                        required_traits=frozenset({'CUSTOM_A'})),
                  Group('2', required_traits=frozenset({'CUSTOM_B'})),
                  policy='isolate')
    assert accepted(cloud, request) == ['cn2']


def test_the_unsuffixed_group_may_share_an_isolated_group_s_provider():
    cloud = [provider('cn1', VCPU=4), provider('pf', 'cn1', SRIOV_NET_VF=1)]
    request = ask(Group(resources={'VCPU': 2}),
                  Group('1', resources={'VCPU': 2}),
                  Group('2', resources={'SRIOV_NET_VF': 1}),
                  policy='isolate')
    table = candidates.ProviderTable(cloud)
    assert table.accepted_root_uuids(request) == ['cn1']
    assert table.allocation_for(request, 'cn1') == {
        'cn1': {'VCPU': 4}, 'pf': {'SRIOV_NET_VF': 1}}
