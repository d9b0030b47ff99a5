"""HostTable.placement: one root provider per row, from the table's
columns and its states' inventories and traits; derived tables derive it
from their parent's when only used amounts changed."""

import numpy as np
import pytest

from scheduler import host_cache
from scheduler.db import claims
from scheduler.host_cache import host_placement
from scheduler.resources import request as request_mod
from tests.unit.scheduler import fakes

PCPU = host_cache.ClassInventory(total=8, reserved=2, min_unit=1,
                                 max_unit=4, step_size=2,
                                 allocation_ratio=1.0, used=0)
GOLD = host_cache.ClassInventory(10, 0, 1, 10, 1, 1.0, 3)


def ask(resources=None, required=(), forbidden=(), member_of=()):
    return request_mod.ResourceRequest(groups=(request_mod.RequestGroup(
        resources=dict(resources or {'VCPU': 1}),
        required_traits=frozenset(required),
        forbidden_traits=frozenset(forbidden), member_of=member_of),))


def three_hosts():
    agg = fakes.aggregate('fast', ['h1', 'h2'])
    return [
        fakes.host_state('h1', vcpus=16, vcpus_used=4, cpu_ratio=2.0,
                         memory_mb=4096, reserved_memory_mb=512,
                         memory_mb_used=1024, ram_ratio=1.0,
                         local_gb=0, aggregates=[agg],
                         inventories={'PCPU': PCPU, 'CUSTOM_GOLD': GOLD},
                         traits={'HW_CPU_X86_AVX2', 'CUSTOM_FAST'}),
        fakes.host_state('h2', vcpus=8, aggregates=[agg],
                         svc=fakes.service('h2', disabled=True)),
        fakes.host_state('h3', vcpus=4, traits={'HW_CPU_X86_AVX2'}),
    ], agg


def used_of(placement, uuid):
    columns = placement.columns
    return {name: columns.used_of(uuid, name) for name in columns.classes
            if columns.limit[columns.classes[name]][columns.row_of[uuid]]
            >= 0}


def test_one_root_per_row_with_the_nodes_uuids_and_amounts():
    states, agg = three_hosts()
    placement = fakes.table(states).placement
    assert list(placement.root_uuids) == [state.uuid for state in states]
    columns = placement.columns
    h1 = states[0].uuid
    # No DISK_GB where the total is 0; the other classes as given.
    assert used_of(placement, h1) == {'VCPU': 4, 'MEMORY_MB': 1024,
                                      'PCPU': 0, 'CUSTOM_GOLD': 3}
    assert used_of(placement, states[2].uuid) == {
        'VCPU': 0, 'MEMORY_MB': 0, 'DISK_GB': 0}
    row = columns.row_of[h1]
    # Placement's capacity: (total - reserved) * ratio, less used; no more
    # than max_unit (the total for the classic classes).
    assert columns.limit[columns.classes['VCPU']][row] == 16
    assert columns.limit[columns.classes['MEMORY_MB']][row] == 2560
    assert columns.limit[columns.classes['PCPU']][row] == 4
    assert columns.limit[columns.classes['CUSTOM_GOLD']][row] == 7


def test_traits_and_aggregates_of_each_row():
    states, agg = three_hosts()
    placement = fakes.table(states).placement
    has_avx = placement.acceptable_roots(ask(required={'HW_CPU_X86_AVX2'}))
    assert has_avx.tolist() == [True, False, True]
    disabled = placement.acceptable_roots(
        ask(required={host_cache.COMPUTE_STATUS_DISABLED}))
    assert disabled.tolist() == [False, True, False]
    enabled = placement.acceptable_roots(
        ask(forbidden={host_cache.COMPUTE_STATUS_DISABLED}))
    assert enabled.tolist() == [True, False, True]
    in_agg = placement.acceptable_roots(
        ask(member_of=(frozenset([agg.uuid]),)))
    assert in_agg.tolist() == [True, True, False]


def test_acceptable_roots_with_a_required_trait_and_a_custom_class():
    states, _agg = three_hosts()
    placement = fakes.table(states).placement
    gold = ask({'VCPU': 2, 'CUSTOM_GOLD': 7}, required={'CUSTOM_FAST'})
    assert placement.acceptable_roots(gold).tolist() == [True, False, False]
    assert not placement.acceptable_roots(
        ask({'VCPU': 2, 'CUSTOM_GOLD': 8})).any()
    # PCPU: step 2, max_unit 4.
    assert placement.acceptable_roots(ask({'PCPU': 4})).tolist() == [
        True, False, False]
    assert not placement.acceptable_roots(ask({'PCPU': 3})).any()
    assert placement.allocation_for(gold, states[0].uuid) == {
        states[0].uuid: {'VCPU': 2, 'CUSTOM_GOLD': 7}}


def test_a_state_built_by_hand_has_no_extras():
    state = fakes.host_state('h1')
    assert state.inventories == {} and state.traits == frozenset()
    state = fakes.host_state('h1', inventories={'PCPU': (8, 0, 1, 8, 1,
                                                         1.0, 0)})
    assert state.inventories['PCPU'].total == 8
    with pytest.raises(ValueError, match='PCPU inventory must have'):
        fakes.host_state('h1', inventories={'PCPU': (8, 0)})


def test_consumed_with_extra_adds_to_the_classes_used():
    states, _agg = three_hosts()
    state = states[0]
    after = state.consumed(claims.Resources(1, 0, 0),
                           extra={'CUSTOM_GOLD': 2, 'PCPU': 4})
    assert after.inventories['CUSTOM_GOLD'].used == 5
    assert after.inventories['PCPU'].used == 4
    assert after.vcpus_used == 5
    # The original is left alone.
    assert state.inventories['CUSTOM_GOLD'].used == 3
    with pytest.raises(ValueError, match='no inventory of resource class '
                                         'CUSTOM_SILVER'):
        state.consumed(claims.Resources(1, 0, 0), extra={'CUSTOM_SILVER': 1})
    with pytest.raises(ValueError, match='none beyond VCPU'):
        states[1].consumed(claims.Resources(1, 0, 0), extra={'PCPU': 1})


def assert_same_placement(derived, rebuilt):
    assert list(derived.root_uuids) == list(rebuilt.root_uuids)
    assert derived.columns.classes == rebuilt.columns.classes
    for column in range(len(rebuilt.columns.classes)):
        np.testing.assert_array_equal(derived.columns.limit[column],
                                      rebuilt.columns.limit[column])
    for uuid in rebuilt.root_uuids:
        assert used_of(derived, uuid) == used_of(rebuilt, uuid)
    for request in (ask({'VCPU': 12}), ask({'CUSTOM_GOLD': 6}),
                    ask({'PCPU': 4}), ask({'MEMORY_MB': 2048})):
        assert (derived.acceptable_roots(request).tolist()
                == rebuilt.acceptable_roots(request).tolist())


def test_a_claim_derives_the_placement_with_the_new_used_amounts():
    states, _agg = three_hosts()
    table = fakes.table(states)
    before = table.placement
    claimed = table.consumed(0, claims.Resources(10, 512, 0),
                             extra={'CUSTOM_GOLD': 7, 'PCPU': 4})
    assert isinstance(claimed._placement, host_placement.Deferred)
    again = claimed.consumed(2, claims.Resources(1, 0, 0))
    assert isinstance(again._placement, host_placement.Deferred)
    derived = again.placement
    assert_same_placement(derived, host_placement.build(again))
    assert used_of(derived, states[0].uuid)['CUSTOM_GOLD'] == 10
    assert used_of(derived, states[2].uuid)['VCPU'] == 1
    # The parent's is what it was.
    assert used_of(before, states[0].uuid)['CUSTOM_GOLD'] == 3
    assert table.placement is before
    # A copy shares it.
    assert table.detached().placement is before


def test_claims_of_other_classes_on_one_node_add_up_in_a_derivation():
    # Only the classes a claim moved are carried; two claims of different
    # classes on one node, between two asks, keep both.
    states, _agg = three_hosts()
    table = fakes.table(states)
    assert table.placement is not None
    gold = table.consumed(0, claims.Resources(0, 0, 0),
                          extra={'CUSTOM_GOLD': 2})
    both = gold.consumed(0, claims.Resources(2, 0, 0), extra={'PCPU': 2})
    deferred = both._placement
    assert isinstance(deferred, host_placement.Deferred)
    assert deferred.changes == {states[0].uuid: {
        'CUSTOM_GOLD': 5, 'PCPU': 2, 'VCPU': 6}}
    assert_same_placement(both.placement, host_placement.build(both))


def test_a_change_beyond_used_amounts_builds_it_again():
    states, _agg = three_hosts()
    table = fakes.table(states)
    assert table.placement is not None
    other = fakes.host_state('h3', node_id=states[2].id, vcpus=4,
                             traits={'CUSTOM_NEW'})
    other.uuid = states[2].uuid
    replaced = table.replace({2: other})
    assert replaced._placement is None
    assert replaced.placement.acceptable_roots(
        ask(required={'CUSTOM_NEW'})).tolist() == [False, False, True]


def test_writes_in_place_derive_the_placement():
    states, _agg = three_hosts()
    table = fakes.table(states)
    assert table.placement is not None
    state = table.states[0].consumed(claims.Resources(0, 0, 0),
                                     extra={'CUSTOM_GOLD': 1})
    assert table.update_in_place({0: state}, claim_only=True)
    assert used_of(table.placement, states[0].uuid)['CUSTOM_GOLD'] == 4
    assert_same_placement(table.placement, host_placement.build(table))


def test_rows_without_a_uuid_get_unique_stand_ins():
    states = [fakes.host_state('h1'), fakes.host_state('h2'),
              fakes.host_state('h3')]
    states[0].uuid = None
    states[2].uuid = states[1].uuid
    uuids = list(fakes.table(states).placement.root_uuids)
    assert len(set(uuids)) == 3 and uuids[1] == states[1].uuid
