"""Facts a HostTable keeps across its in-place writes: whether a column
is constant, and the service_up column with how long it holds. Each is
checked against a computation from scratch after random writes."""

import copy
import datetime
import random

import numpy as np
import pytest

from scheduler.host_cache import host_state
from scheduler.host_cache import host_table
from scheduler.host_cache import table_kept
from scheduler.host_cache import table_lookups
from scheduler import weights
from tests.unit.scheduler import fakes


def _rewritten(state, **changes):
    """A copy of ``state`` (same node) with ``changes`` to its values."""
    new = copy.copy(state)
    for name, value in changes.items():
        setattr(new, name, value)
    return new


def _nan_when_seven(state):
    return np.nan if state.io_workload == 7 else float(state.io_workload)


def test_rows_written_since_remembers_the_last_writes_only():
    table = fakes.table([fakes.host_state('h%d' % i) for i in range(4)])
    assert table.rows_written_since(0).tolist() == []
    table.update_in_place({2: _rewritten(table.states[2], io_workload=1)})
    table.update_in_place({0: _rewritten(table.states[0], io_workload=1),
                           3: _rewritten(table.states[3], io_workload=1)})
    assert sorted(table.rows_written_since(0).tolist()) == [0, 2, 3]
    assert sorted(table.rows_written_since(1).tolist()) == [0, 3]
    assert table.rows_written_since(2).tolist() == []
    for value in range(host_table._WRITE_LOG):
        table.update_in_place({1: _rewritten(table.states[1],
                                             io_workload=value + 2)})
    assert table.rows_written_since(1) is None
    assert table.rows_written_since(2).tolist() == [1] * host_table._WRITE_LOG
    # Further back when asked (a private table catching up), as far as
    # the table remembers: WRITE_LOG_KEPT writes at least, at most twice.
    assert table.written_since(1) is None
    rows, names = table.written_since(1, host_table.WRITE_LOG_KEPT)
    assert rows.tolist() == [0, 3] + [1] * host_table._WRITE_LOG
    kept = host_table.WRITE_LOG_KEPT
    for value in range(2 * kept):
        table.update_in_place({1: _rewritten(table.states[1],
                                             io_workload=value)})
    assert table.written_since(table.writes - 2 * kept - 1, kept) is None
    assert table.written_since(table.writes - kept - 1, kept) is None
    rows, names = table.written_since(table.writes - kept, kept)
    assert rows.tolist() == [1] * kept and names == {'io_workload'}
    rows, names = table.written_since(table.writes - 1)
    assert rows.tolist() == [1] and names == {'io_workload'}
    assert table.written_since(table.writes)[1] == frozenset()


@pytest.mark.parametrize('seed', range(6))
def test_constant_follows_random_writes_in_place(seed):
    """The kept answer matches weights.constant over the whole column
    after every burst of writes: short bursts (checked against the rows
    written), long ones (more than the table remembers), values that
    make the column constant and not, NaN (never constant)."""
    rng = random.Random(seed)
    count = rng.choice([1, 2, 5, 40])
    table = fakes.table([fakes.host_state('h%d' % i, io_workload=0)
                         for i in range(count)])

    def columns():
        # A base column, a derived one and a per-state one.
        return [table.io_workload, table.free_ram_mb,
                table.state_column('nan7', _nan_when_seven)]

    for _step in range(150):
        burst = rng.choice([0, 1, 1, 2, 3, host_table._WRITE_LOG + 2])
        values = rng.choice([(0,), (0, 1), (7,), (0, 7), (3,)])
        for _ in range(burst):
            rows = rng.sample(range(count), rng.randint(1, count))
            new = {}
            for row in rows:
                value = rng.choice(values)
                new[row] = _rewritten(table.states[row], io_workload=value,
                                      memory_mb_used=value * 512)
            assert table.update_in_place(new)
        for column in columns():
            expected = weights.constant(column)
            found = table.constant(column)
            assert found == expected, (column.tolist(), found, expected)


def test_constant_of_a_column_written_elsewhere_is_not_taken_from_another():
    # A detached copy shares nothing: its answers are its own.
    table = fakes.table([fakes.host_state('h%d' % i) for i in range(3)])
    assert table.constant(table.io_workload) == 0
    detached = table.detached()
    detached.update_in_place({1: _rewritten(detached.states[1],
                                            io_workload=4)})
    assert detached.constant(detached.io_workload) is None
    assert table.constant(table.io_workload) == 0


class _Clock:
    """What host_table reads as now, moved by the test."""

    def __init__(self, now):
        self.now = now

    def us(self):
        return host_state.to_microseconds(self.now)


def _expected_up(table, now, down_time):
    return [state.service_up(down_time, now=now) for state in table.states]


def _expected_edge(table, now, down_time):
    """The first microsecond after now when some host's answer may
    change, from every heartbeat (None: never without a write)."""
    edges = []
    for state in table.states:
        beat = host_state.to_microseconds(
            host_state.last_heartbeat(state.service))
        if beat in (host_state.ALIVE, host_state.NO_HEARTBEAT):
            continue
        for edge in (beat - down_time * 10 ** 6,
                     beat + down_time * 10 ** 6 + 1):
            if edge > host_state.to_microseconds(now):
                edges.append(edge)
    return min(edges) if edges else None


@pytest.mark.parametrize('seed', range(6))
def test_service_up_kept_matches_every_host_as_time_and_writes_go(
        seed, config, monkeypatch):
    """Time moves (across heartbeats' edges or not, and back) and rows
    are written (new heartbeats, some from the future, forced down, no
    heartbeat): the kept column always answers as computed from every
    host at that moment, and liveness_changes_at never comes after the
    first edge."""
    down_time = 60
    config.config(service_down_time=down_time)
    rng = random.Random(seed)
    clock = _Clock(datetime.datetime(2030, 1, 1, 12, 0, 0))
    monkeypatch.setattr(table_lookups, 'now_us_utc', clock.us)

    def service(host):
        kind = rng.random()
        if kind < 0.1:
            return fakes.service(host, seen_ago=None, when=clock.now)
        return fakes.service(host, seen_ago=rng.uniform(-70, 70),
                             forced_down=kind > 0.9, when=clock.now)

    count = rng.choice([1, 3, 30])
    table = fakes.table([fakes.host_state('h%d' % i,
                                          svc=service('h%d' % i))
                         for i in range(count)])
    for _step in range(120):
        clock.now += datetime.timedelta(seconds=rng.choice(
            [0, 0.5, rng.uniform(0, 30), rng.uniform(0, 120),
             -rng.uniform(0, 30)]))
        for _ in range(rng.choice([0, 0, 1, 2, host_table._WRITE_LOG + 1])):
            row = rng.randrange(count)
            state = table.states[row]
            if rng.random() < 0.3:
                # A claim: usage only.
                new = _rewritten(state, io_workload=state.io_workload + 1)
            else:
                new = _rewritten(state, service=service(state.host))
            assert table.update_in_place({row: new})
        up = table.service_up()
        assert not up.flags.writeable
        assert up.tolist() == _expected_up(table, clock.now, down_time)
        # Never later than the first edge; earlier only by the edge of a
        # heartbeat written over since the column was computed.
        until = table.liveness_changes_at(down_time, clock.us())
        first = _expected_edge(table, clock.now, down_time)
        assert until is None or until > clock.us()
        assert first is None or (until is not None and until <= first)
        # A table built now knows the first edge exactly.
        assert fakes.table(table.states).liveness_changes_at(
            down_time, clock.us()) == first
    # Another window is judged on its own.
    assert table.service_up(30).tolist() == _expected_up(table, clock.now, 30)
    assert table.service_up().tolist() == _expected_up(table, clock.now,
                                                       down_time)


@pytest.mark.parametrize('used,amount', [
    (10, 2), (10, 3), (0, 12), (0, 13), (13, 1), (12, 1), (2 ** 40, 1)])
def test_capacity_filters_read_whole_units_of_room(used, amount):
    """Room of 12.5 vCPUs, RAM MB and disk GB (10 * 1.25): whole units
    fit up to 12, as ``used + amount <= capacity`` says per host."""
    from scheduler.filters import core_filter
    from scheduler.filters import disk_filter
    from scheduler.filters import ram_filter
    state = fakes.host_state(vcpus=10, cpu_ratio=1.25, vcpus_used=used,
                             memory_mb=10, ram_ratio=1.25,
                             memory_mb_used=used, local_gb=10,
                             disk_ratio=1.25, local_gb_used=used)
    least = fakes.host_state(local_gb=10, disk_ratio=1.25,
                             local_gb_used=used, disk_available_least=3)
    table = fakes.table([state, least])
    spec = fakes.spec(vcpus=amount, memory_mb=amount, root_gb=amount)
    mask = np.ones(2, dtype=np.bool_)
    for filt in (core_filter.CoreFilter(), ram_filter.RamFilter(),
                 disk_filter.DiskFilter()):
        expected = [filt.host_passes(s, spec) for s in table.states]
        assert filt.filter_all(table, mask, spec).tolist() == expected
    assert (disk_filter.DiskFilter().filter_all(table, mask, spec)[0]
            == (used + amount <= 12.5))


@pytest.mark.parametrize('seed', range(6))
def test_at_least_follows_random_writes_in_place(seed):
    """The kept masks of at_least match the column compared from scratch
    after every burst of writes (short ones, checked against the rows
    written, and longer ones than the table remembers), for more amounts
    than the table keeps. A mask handed out is read-only, and one still
    kept follows the later writes (it is read within one request)."""
    rng = random.Random(seed)
    count = rng.choice([1, 3, 40])
    table = fakes.table([fakes.host_state('h%d' % i, memory_mb=4096)
                         for i in range(count)])
    amounts = [512, 1024, 2048.0, 3584] + list(
        range(1, table_kept.AT_LEAST + 3))
    handed = []
    for _step in range(120):
        burst = rng.choice([0, 1, 1, 2, host_table._WRITE_LOG + 2])
        for _ in range(burst):
            rows = rng.sample(range(count), rng.randint(1, count))
            assert table.update_in_place({
                row: _rewritten(table.states[row],
                                memory_mb_used=rng.choice([0, 512, 2560,
                                                           4096]))
                for row in rows})
        amount = rng.choice(amounts)
        mask = table.at_least('room_memory_mb', amount)
        expected = table.derived['room_memory_mb'] >= amount
        assert mask.tolist() == expected.tolist(), amount
        assert not mask.flags.writeable
        handed.append((amount, mask))
    for amount, mask in handed:
        again = table.at_least('room_memory_mb', amount)
        if again.base is mask.base:
            assert mask.tolist() == again.tolist()


def test_at_least_sees_a_claim_written_in_place():
    """A host that a claim in place filled no longer passes the RAM
    filter's test for a size it passed before, and passes again once
    the claim is undone (4096 MB at a ratio of 1.5: room for 6144)."""
    table = fakes.table([fakes.host_state('h%d' % i, memory_mb=4096)
                         for i in range(3)])
    assert table.at_least('room_memory_mb', 2048).tolist() == [True] * 3
    full = _rewritten(table.states[1], memory_mb_used=5120)
    assert table.update_in_place({1: full})
    assert table.at_least('room_memory_mb', 2048).tolist() == [
        True, False, True]
    assert table.update_in_place({1: _rewritten(full, memory_mb_used=0)})
    assert table.at_least('room_memory_mb', 2048).tolist() == [True] * 3


@pytest.mark.parametrize('seed', range(6))
def test_nonzero_rows_follow_random_writes_in_place(seed):
    """nonzero_rows gives the rows not 0 while they are few, and None
    once they are not, after every burst of writes (short ones, checked
    against the rows written, and longer ones than the table
    remembers); an answer handed out earlier is never changed."""
    rng = random.Random(seed)
    count = rng.choice([64, 200, 700])
    table = fakes.table([fakes.host_state('h%d' % i, io_workload=0)
                         for i in range(count)])
    limit = count // table_kept.SPARSE
    handed = []
    for _step in range(150):
        burst = rng.choice([0, 1, 1, 2, host_table._WRITE_LOG + 2])
        busy = rng.choice([1, 2, limit + 3])
        for _ in range(burst):
            rows = rng.sample(range(count), rng.randint(1, busy))
            assert table.update_in_place({
                row: _rewritten(table.states[row],
                                io_workload=rng.choice([0, 0, 1, 3]))
                for row in rows})
        found = table.nonzero_rows(table.io_workload)
        expected = np.flatnonzero(table.io_workload)
        if len(expected) > limit:
            assert found is None
        else:
            assert found.tolist() == expected.tolist()
            assert not found.flags.writeable
            handed.append((found, found.copy()))
    for found, copied in handed:
        assert found.tolist() == copied.tolist()


def test_a_column_far_from_sparse_is_not_read_again_after_each_claim(
        monkeypatch):
    """Every host busy: a claim a request is written, and nonzero_rows
    answers None from what it kept, past the writes the table
    remembers, without reading the column again."""
    table = fakes.table([fakes.host_state('h%d' % i, io_workload=1)
                         for i in range(640)])
    reads = []
    flatnonzero = np.flatnonzero
    monkeypatch.setattr(table_kept.np, 'flatnonzero',
                        lambda column: reads.append(1) or flatnonzero(column))
    for step in range(3 * host_table._WRITE_LOG):
        assert table.nonzero_rows(table.io_workload) is None
        row = step % 640
        assert table.update_in_place({row: _rewritten(
            table.states[row], io_workload=2)})
    assert len(reads) == 1
