"""The values a host table computes from its HostStates on demand, and
carries over to the tables replace() derives from it."""

from scheduler.db import claims
from scheduler.host_cache import host_table_per_state as per_state
from tests.unit.scheduler import fakes


def _counting(compute):
    calls = []

    def counted(state):
        calls.append(state.host)
        return compute(state)
    return counted, calls


def test_state_column_is_computed_once_and_carried_row_by_row():
    states = [fakes.host_state(name, stats={'failed_builds': n})
              for n, name in enumerate('abc')]
    hosts = fakes.table(states)
    compute, calls = _counting(lambda state: state.failed_builds)
    assert list(hosts.state_column('fb', compute)) == [0.0, 1.0, 2.0]
    assert list(hosts.state_column('fb', compute)) == [0.0, 1.0, 2.0]
    assert calls == ['a', 'b', 'c']
    changed = fakes.host_state('b', node_id=states[1].id,
                               stats={'failed_builds': 9})
    after = hosts.replace({1: changed})
    assert list(after.state_column('fb', compute)) == [0.0, 9.0, 2.0]
    assert calls == ['a', 'b', 'c', 'b']
    # The older table keeps its own values.
    assert list(hosts.state_column('fb', compute)) == [0.0, 1.0, 2.0]


def test_grouped_keys_and_codes_follow_replacements():
    states = [fakes.host_state(name, hypervisor_type=kind)
              for name, kind in zip('abcd', ['kvm', 'xen', 'kvm', 'kvm'])]
    hosts = fakes.table(states)
    codes, keys = hosts.grouped('hv', lambda s: s.hypervisor_type)
    assert [keys[code] for code in codes] == ['kvm', 'xen', 'kvm', 'kvm']
    assert sorted(keys) == ['kvm', 'xen']
    after = hosts.replace({3: fakes.host_state('d', node_id=states[3].id,
                                               hypervisor_type='qemu')})
    after = after.consumed(0, claims.Resources(1, 1, 1))
    codes, keys = after.grouped('hv', lambda s: s.hypervisor_type)
    assert [keys[code] for code in codes] == ['kvm', 'xen', 'kvm', 'qemu']
    old_codes, old_keys = hosts.grouped('hv', lambda s: s.hypervisor_type)
    assert [old_keys[code] for code in old_codes] == [
        'kvm', 'xen', 'kvm', 'kvm']


def test_long_chains_of_replacements_stay_right():
    states = [fakes.host_state('a'), fakes.host_state('b')]
    hosts = fakes.table(states)
    hosts.state_column('instances', lambda s: s.num_instances)
    for _ in range(3 * per_state.CARRY_DEPTH):
        hosts = hosts.consumed(1, claims.Resources(0, 0, 0))
    assert list(hosts.state_column(
        'instances', lambda s: s.num_instances)) == [
            0, 3 * per_state.CARRY_DEPTH]


def test_aggregate_groups_share_one_decision_per_set_of_aggregates():
    rack = fakes.aggregate('rack', ['a', 'b'], ssd='true')
    gpu = fakes.aggregate('gpu', ['b'], gpu='a100')
    states = [fakes.host_state('a', aggregates=[rack]),
              fakes.host_state('b', aggregates=[rack, gpu]),
              fakes.host_state('c'),
              fakes.host_state('a', nodename='a2', aggregates=[rack])]
    codes, groups = fakes.table(states, [rack, gpu]).aggregate_groups()
    assert len(groups) == 3
    assert groups[codes[0]] == (rack,)
    assert groups[codes[1]] == (rack, gpu)
    assert groups[codes[2]] == ()
    assert codes[3] == codes[0]


def test_state_memo_computes_once_per_state_and_forgets_past_its_limit():
    calls = []

    def compute(state):
        calls.append(state)
        return state.host.upper()

    memo = per_state.StateMemo(compute, limit=2)
    first, second, third = (fakes.host_state(name) for name in 'abc')
    assert [memo(first), memo(first), memo(second)] == ['A', 'A', 'B']
    assert calls == [first, second]
    memo(third)             # past the limit: all forgotten, third kept
    memo(first)
    assert calls == [first, second, third, first]


def test_rebuilt_computes_every_value_held_over_new_states():
    states = [fakes.host_state(name, stats={'failed_builds': n})
              for n, name in enumerate('abc')]
    hosts = fakes.table(states)
    compute, calls = _counting(lambda state: state.failed_builds)
    hosts.state_column('fb', compute)
    hosts.grouped('hv', lambda s: s.hypervisor_type)
    # A value carried (not yet brought up to date) is rebuilt as well.
    after = hosts.replace({1: fakes.host_state(
        'b', node_id=states[1].id, stats={'failed_builds': 7})})
    fresh = [fakes.host_state(name, stats={'failed_builds': 10 + n},
                              hypervisor_type='xen')
             for n, name in enumerate('xyzw')]
    cache = after._per_state.rebuilt(fresh)
    del calls[:]
    assert list(cache.column('fb', fresh, compute, float)) == [
        10.0, 11.0, 12.0, 13.0]
    codes, keys = cache.grouping('hv', fresh, lambda s: s.hypervisor_type)
    assert [keys[code] for code in codes] == ['xen'] * 4
    assert calls == []
    # The tables the cache came from keep their own values.
    assert list(after.state_column('fb', compute)) == [0.0, 7.0, 2.0]


def test_a_value_that_fails_to_rebuild_is_left_to_the_request(caplog):
    hosts = fakes.table([fakes.host_state('a'), fakes.host_state('b')])
    hosts.state_column('ok', lambda state: state.num_instances)
    hosts.state_column('picky', lambda state: (
        state.num_instances if state.host in 'ab' else 1 / 0))
    fresh = [fakes.host_state('c')]
    cache = hosts._per_state.rebuilt(fresh)
    assert "Computing 'picky' for the new host table failed" in caplog.text
    assert list(cache.column('picky', fresh, lambda state: 5, float)) == [
        5.0]
    assert list(cache.column('ok', fresh, lambda state: 9, float)) == [0.0]
