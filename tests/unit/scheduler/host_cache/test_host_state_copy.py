"""HostState.__copy__: a copy slot by slot, as copy.copy made it."""

import copy

from scheduler.db import claims
from scheduler import host_cache
from scheduler.host_cache import host_state
from scheduler import ironic_host_manager
from tests.unit.scheduler import fakes


def _slots(state):
    names, _read = host_state._slots_of(type(state))
    return {name: getattr(state, name) for name in names
            if hasattr(state, name)}


def _state():
    return fakes.host_state('h1', vcpus=8, memory_mb=4096,
                            disk_available_least=40,
                            stats={'failed_builds': '1'},
                            traits={'CUSTOM_FAST'})


def test_a_copy_holds_every_slot_of_the_state_and_is_its_own():
    state = _state()
    copied = copy.copy(state)
    assert copied is not state
    assert type(copied) is type(state)
    names, _read = host_state._slots_of(type(state))
    # Every slot, the profile's too (ratios, reservations, hypervisor).
    assert set(names) >= set(type(state).__slots__)
    assert _slots(copied) == _slots(state)
    for name in host_state.PROFILE_FIELDS:
        assert getattr(copied, name) == getattr(state, name), name
    # Values are shared, not copied (as copy.copy shares them).
    assert copied.stats is state.stats
    copied.vcpus_used = 5
    copied.cpu_allocation_ratio = 3.0
    assert state.vcpus_used == 0
    assert state.cpu_allocation_ratio == 16.0


def test_consumed_changes_the_copy_only():
    state = _state()
    before = _slots(state)
    new = state.consumed(claims.Resources(2, 1024, 10))
    assert _slots(state) == before
    changed = {name for name, value in _slots(new).items()
               if before[name] != value}
    assert changed == {'vcpus_used', 'memory_mb_used', 'local_gb_used',
                       'disk_available_least', 'num_instances',
                       'io_workload'}


def test_a_subclass_is_copied_as_itself():
    state = ironic_host_manager.IronicNodeState.from_host_state(_state())
    copied = copy.copy(state)
    assert type(copied) is ironic_host_manager.IronicNodeState
    assert _slots(copied) == _slots(state)


def test_a_subclass_with_its_own_attributes_keeps_them():
    class Tagged(host_cache.HostState):
        pass                                  # a __dict__ of its own

    state = copy.copy(_state())
    tagged = Tagged.__new__(Tagged)
    for name, value in _slots(state).items():
        setattr(tagged, name, value)
    tagged.tag = ['x']
    copied = copy.copy(tagged)
    assert type(copied) is Tagged
    assert copied.tag is tagged.tag
    assert _slots(copied) == _slots(tagged)
    copied.tag = 'other'
    assert tagged.tag == ['x']


def test_a_slot_never_set_stays_unset_in_the_copy():
    state = host_cache.HostState.__new__(host_cache.HostState)
    state.host = 'h1'
    state.vcpus_used = 3
    copied = copy.copy(state)
    assert (copied.host, copied.vcpus_used) == ('h1', 3)
    assert not hasattr(copied, 'uuid')
