"""HostTable.copy_rows_from: a detached copy brought back to the table it
was taken from, by the values that table's own writes computed."""

import copy
import random

import numpy as np
import pytest

from scheduler.db import claims
from scheduler.host_cache import host_instances
from scheduler.host_cache import host_placement
from scheduler.host_cache import table_columns
from tests.unit.scheduler import fakes
from tests.unit.scheduler.host_cache import test_host_placement
from tests.unit.scheduler.host_cache import test_host_table


def _states(count, least=40):
    return [fakes.host_state('h%d' % number, vcpus=8 + number % 3,
                             memory_mb=4096 * (1 + number % 4),
                             disk_available_least=least)
            for number in range(count)]


def _claimed(state, rng):
    state = state.consumed(claims.Resources(rng.randint(1, 2),
                                            rng.choice((256, 512)),
                                            rng.randint(0, 5)))
    state.instances = dict(state.instances)
    state.instances[str(rng.random())] = host_instances.InstanceInfo(
        None, {})
    return state


def _reworked(*states):
    """The same nodes with every column-backed value changed."""
    return test_host_table._changed_states(states)


def _assert_same(table, expected):
    """``table`` holds what ``expected`` (built afresh) holds: states,
    columns, derived columns, values kept per state, instance counts,
    placement."""
    assert list(table.states) == list(expected.states)
    for name, column in expected.columns.items():
        assert table.columns[name].tolist() == column.tolist(), name
    for name, column in expected.derived.items():
        np.testing.assert_array_equal(table.derived[name], column,
                                      err_msg=name)
    used = table.state_column('used', lambda s: s.vcpus_used, np.int64)
    assert used.tolist() == [s.vcpus_used for s in expected.states]
    uuids = [uuid for state in expected.states for uuid in state.instances]
    assert table.instance_counts(uuids).tolist() == \
        expected.instance_counts(uuids).tolist()
    test_host_placement.assert_same_placement(
        table.placement, host_placement.build(expected))


@pytest.mark.parametrize('seed', range(8))
def test_claims_copied_equal_a_table_built_anew(seed):
    rng = random.Random(seed)
    source = fakes.table(_states(12, least=rng.choice((None, 40))))
    private = source.detached()
    # Values the copy keeps while it is behind.
    private.state_column('used', lambda s: s.vcpus_used, np.int64)
    private.instance_counts(())
    mask = private.at_least('room_memory_mb', 512)
    written = set()
    for _ in range(rng.randint(1, 20)):
        row = rng.randrange(12)
        written.add(row)
        assert source.update_in_place(
            {row: _claimed(source.states[row], rng)}, claim_only=True)
    before = private.writes
    assert private.copy_rows_from(source, sorted(written),
                                  table_columns.CLAIM_COLUMNS)
    _assert_same(private, fakes.table(list(source.states)))
    # Logged as a write: what a copy keeps follows it.
    assert private.writes == before + 1
    assert sorted(private.rows_written_since(before).tolist()) == \
        sorted(written)
    assert private.at_least('room_memory_mb', 512) is mask
    assert mask.tolist() == (private.derived['room_memory_mb']
                             >= 512).tolist()


def test_every_column_copied_when_the_rows_changed_beyond_claims():
    states = _states(6)
    source = fakes.table(states)
    private = source.detached()
    # Allocation ratios and reservations agree on every host: columns
    # held once in the copy, made whole by the rows copied.
    assert table_columns.is_held_once(private.columns['cpu_ratio'])
    new = dict(zip((1, 4), _reworked(states[1], states[4])))
    assert source.update_in_place(new)
    assert private.copy_rows_from(source, [1, 4])
    _assert_same(private, fakes.table(list(source.states)))
    assert not table_columns.is_held_once(private.columns['cpu_ratio'])


def test_a_value_beyond_int32_widens_the_copy():
    states = _states(4)
    source = fakes.table(states)
    private = source.detached()
    assert private.columns['ram_used'].dtype == np.int32
    huge = copy.copy(states[2])
    huge.memory_mb_used = 2 ** 40
    assert source.update_in_place({2: huge}, claim_only=True)
    assert private.copy_rows_from(source, [2],
                                  table_columns.CLAIM_COLUMNS)
    assert private.columns['ram_used'].dtype == np.int64
    _assert_same(private, fakes.table(list(source.states)))


def test_only_the_columns_named_are_compared():
    states = _states(4)
    source = fakes.table(states)
    private = source.detached()
    assert source.update_in_place({1: _reworked(states[1])[0]})
    assert private.copy_rows_from(source, [1], ['vcpus_used'])
    assert private.vcpus_used[1] == source.vcpus_used[1]
    assert private.columns['cpu_ratio'][1] != source.columns['cpu_ratio'][1]


def test_a_node_that_changed_identity_leaves_the_copy_as_it_was():
    states = _states(4)
    source = fakes.table(states)
    private = source.detached()
    assert source.update_in_place(
        {0: _claimed(states[0], random.Random(1))}, claim_only=True)
    renamed = fakes.host_state('zz', node_id=states[3].id)
    # A shared table replaces such a row; one built with it stands in.
    other = fakes.table(list(source.states[:3]) + [renamed])
    writes = private.writes
    assert private.copy_rows_from(other, [0, 3]) is False
    assert private.writes == writes
    _assert_same(private, fakes.table(states))
