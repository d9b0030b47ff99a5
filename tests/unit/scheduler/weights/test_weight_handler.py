import copy
import random

import numpy as np
import pytest

from scheduler import weights
from scheduler.weights import cpu
from scheduler.weights import disk
from scheduler.weights import io_ops
from scheduler.weights import ram
from tests.unit.scheduler import fakes


class IoWeigher(weights.BaseHostWeigher):
    """A third-party weigher: raw weight only, no minval, multiplier 1."""

    def _weigh_object(self, host_state, spec):
        return -host_state.io_workload


class HalfWeigher(IoWeigher):
    """Overrides weight_multiplier per host, as Nova weighers may."""

    def weight_multiplier(self, host_state):
        return 0.5 if host_state.host == 'a' else 2.0


def _io_hosts(*loads):
    return [fakes.host_state(name, io_workload=load)
            for name, load in zip('abcdef', loads)]


def test_normalise_to_zero_one():
    assert fakes.weigh([IoWeigher()], _io_hosts(0, 5, 10)) == pytest.approx(
        [1.0, 0.5, 0.0])


def test_all_equal_weights_give_zero():
    assert fakes.weigh([IoWeigher()], _io_hosts(3, 3, 3)) == [0.0, 0.0, 0.0]
    assert list(weights.normalize([7, 7])) == [0.0, 0.0]


def test_one_host_weighs_zero():
    assert fakes.weigh([IoWeigher()], _io_hosts(3)) == [0.0]


def test_minval_and_maxval_clamp_and_bound():
    assert list(weights.normalize([-5, 5, 10], minval=0)) == pytest.approx(
        [0.0, 0.5, 1.0])
    assert list(weights.normalize([0, 5, 20], maxval=10)) == pytest.approx(
        [0.0, 0.5, 1.0])


@pytest.mark.parametrize('bounds', [(None, None), (0, None), (None, 10),
                                    (0, 10)])
def test_normalizing_leaves_the_raw_weights_alone(bounds):
    """A weigher may hand over an array it keeps (a table column): the
    scaled weights are a new array, whatever the bounds."""
    raw = np.array([-5.0, 5.0, 20.0])
    minval, maxval = bounds
    scaled = weights._scaled(raw, minval, maxval, 2.0)
    assert raw.tolist() == [-5.0, 5.0, 20.0]
    assert scaled is not raw
    low = -5.0 if minval is None else minval
    high = 20.0 if maxval is None else maxval
    clipped = np.clip(raw, low, high)
    assert scaled.tolist() == pytest.approx(
        ((clipped - low) / (high - low) * 2.0).tolist())


def test_sum_of_multiplier_times_normalised(config):
    config.config(ram_weight_multiplier=2.0, cpu_weight_multiplier=-1.0,
                  group='filter_scheduler')
    states = [fakes.host_state('a', memory_mb=1000, vcpus=1, cpu_ratio=1.0),
              fakes.host_state('b', memory_mb=2000, vcpus=2, cpu_ratio=1.0)]
    totals = fakes.weigh([ram.RAMWeigher(), cpu.CPUWeigher()], states)
    assert totals == pytest.approx([2 * 0.5 - 0.5, 2 * 1.0 - 1.0])


def test_per_host_multiplier_of_a_third_party_weigher():
    totals = fakes.weigh([HalfWeigher()], _io_hosts(0, 0, 10))
    assert totals == pytest.approx([0.5, 2.0, 0.0])


def test_aggregate_overrides_minimum_wins(config):
    aggs = [fakes.aggregate('one', ['a', 'b'], disk_weight_multiplier='3'),
            fakes.aggregate('two', ['a'], disk_weight_multiplier='-2.5'),
            fakes.aggregate('other', ['b'], ram_weight_multiplier='9')]
    states = [fakes.host_state('a', local_gb=200,
                               aggregates=[aggs[0], aggs[1]]),
              fakes.host_state('b', local_gb=200,
                               aggregates=[aggs[0], aggs[2]]),
              fakes.host_state('c', local_gb=200)]
    weigher = disk.DiskWeigher()
    assert [weigher.weight_multiplier(s) for s in states] == [-2.5, 3.0, 1.0]
    hosts = fakes.table(states, aggs)
    assert list(weigher.weight_multipliers(hosts, [0, 1, 2])) == [
        -2.5, 3.0, 1.0]
    # All free disk equal (minval 0): every normalised weight is 1.
    assert fakes.weigh([weigher], states, aggregates=aggs) == pytest.approx(
        [-2.5, 3.0, 1.0])


def test_unparseable_aggregate_multiplier_is_logged_and_ignored(caplog):
    aggs = [fakes.aggregate('bad', ['a'], ram_weight_multiplier='lots'),
            fakes.aggregate('good', ['a', 'b'], ram_weight_multiplier='4')]
    states = [fakes.host_state('a', aggregates=aggs),
              fakes.host_state('b', aggregates=aggs[1:])]
    weigher = ram.RAMWeigher()
    # As Nova: a value that is not a number falls back to the option.
    assert weigher.weight_multiplier(states[0]) == 1.0
    assert weigher.weight_multiplier(states[1]) == 4.0
    assert "Could not decode 'ram_weight_multiplier'" in caplog.text
    caplog.clear()
    hosts = fakes.table(states, aggs)
    assert list(weigher.weight_multipliers(hosts, [0, 1])) == [1.0, 4.0]
    assert 'lots' in caplog.text


def test_option_is_read_at_each_request(config):
    states = [fakes.host_state('a', memory_mb=1000),
              fakes.host_state('b', memory_mb=2000)]
    weigher = ram.RAMWeigher()
    assert fakes.weigh([weigher], states) == pytest.approx([0.5, 1.0])
    config.config(ram_weight_multiplier=-1.0, group='filter_scheduler')
    assert fakes.weigh([weigher], states) == pytest.approx([-0.5, -1.0])


class ZeroWeigher(IoWeigher):
    """Multiplier 0 everywhere: its weights must not be computed."""

    def default_multiplier(self):
        return 0.0

    def weigh_all(self, host_table, rows, spec):
        raise AssertionError('a weigher with multiplier 0 was run')


def test_weighers_with_zero_multipliers_are_not_run():
    hosts = _io_hosts(0, 5, 10)
    assert fakes.weigh([ZeroWeigher(), IoWeigher()], hosts) == \
        pytest.approx([1.0, 0.5, 0.0])


class UniformWeigher(IoWeigher):
    """Says every host weighs the same: it must not run."""

    def uniform(self, spec):
        return True

    def weigh_all(self, host_table, rows, spec):
        raise AssertionError('a uniform weigher ran')


def test_uniform_and_flat_weighers_add_nothing():
    hosts = _io_hosts(0, 5, 10)
    assert fakes.weigh([UniformWeigher(), IoWeigher()], hosts) == \
        pytest.approx([1.0, 0.5, 0.0])
    table = fakes.table(hosts)
    handler = weights.HostWeightHandler()
    rows = list(range(3))
    shown = dict(handler.contributions([UniformWeigher(), IoWeigher()],
                                       table, rows, fakes.spec()))
    assert list(shown[next(iter(shown))]) == [0.0, 0.0, 0.0]
    flat = handler.contributions([IoWeigher()], fakes.table(_io_hosts(3, 3)),
                                 [0, 1], fakes.spec(), skip_zero=True)
    assert [weighted for _weigher, weighted in flat] == [None]


def _novas_parts(weigher, states, spec):
    """What one weigher adds to each host's total in Nova's
    HostWeightHandler, in Python floats: its raw weights clamped to its
    minval/maxval, normalised by their minimum and maximum (or
    minval/maxval), times its multiplier; None when they are all one
    (it adds nothing)."""
    raw = [float(weigher._weigh_object(state, spec)) for state in states]
    if weigher.minval is not None:
        raw = [max(value, float(weigher.minval)) for value in raw]
    if weigher.maxval is not None:
        raw = [min(value, float(weigher.maxval)) for value in raw]
    low = min(raw) if weigher.minval is None else float(weigher.minval)
    high = max(raw) if weigher.maxval is None else float(weigher.maxval)
    if low == high:
        return None
    multiplier = weigher.weight_multiplier(states[0])
    return [(value - low) / (high - low) * multiplier for value in raw]


def _novas_totals(weighers, states, spec):
    """Nova's totals: each weigher's part (:func:`_novas_parts`) summed
    in weigher order from 0."""
    totals = [0.0] * len(states)
    for weigher in weighers:
        for index, value in enumerate(_novas_parts(weigher, states, spec)
                                      or ()):
            totals[index] += value
    return totals


# Multipliers (RAM, CPU, disk, I/O): spread with some of each sign; a
# pack (-1.0, which the handler folds into its division).
MULTIPLIERS = [(1.0, 0.7, 1.0, -2.5), (-1.0, -1.0, -1.0, -1.0)]


@pytest.mark.parametrize('multipliers', MULTIPLIERS)
@pytest.mark.parametrize('seed', range(8))
def test_totals_are_novas_to_the_bit_for_all_rows_or_some(seed, multipliers,
                                                          config):
    """The column weighers read whole columns when every row is asked for
    and skip the clamp and the subtraction where they change nothing:
    the totals are still Nova's arithmetic, bit for bit, including hosts
    over their capacity (negative free room, clamped to minval 0)."""
    import random
    config.config(group='filter_scheduler', **dict(zip(
        ('ram_weight_multiplier', 'cpu_weight_multiplier',
         'disk_weight_multiplier', 'io_ops_weight_multiplier'),
        multipliers)))
    rng = random.Random(seed)
    states = [fakes.host_state(
        'h%03d' % number, vcpus=rng.choice([8, 16]),
        vcpus_used=rng.randrange(24), memory_mb=rng.choice([4096, 8192]),
        memory_mb_used=rng.randrange(0, 12000, 512), local_gb=100,
        local_gb_used=rng.randrange(0, 130), cpu_ratio=1.0, ram_ratio=1.0,
        io_workload=rng.randrange(4)) for number in range(300)]
    table = fakes.table(states)
    weighers = [ram.RAMWeigher(), cpu.CPUWeigher(), disk.DiskWeigher(),
                io_ops.IoOpsWeigher()]
    spec = fakes.spec()
    handler = weights.HostWeightHandler()
    for rows in (np.arange(300), np.arange(1, 300, 3)):
        totals = handler.weigh(weighers, table, rows, spec)
        expected = _novas_totals(weighers, [states[row] for row in rows],
                                 spec)
        assert totals.tobytes() == np.array(expected).tobytes()
        # And each weigher's part alone (a part may be -0.0 where the
        # totals, summed from 0.0, never are).
        for weigher in weighers:
            [(_weigher, part)] = handler.contributions(
                [weigher], table, rows, spec)
            assert part.tobytes() == np.array(_novas_parts(
                weigher, [states[row] for row in rows], spec)).tobytes()
    # A hundred hosts over their RAM: the clamp was needed.
    assert sum(state.free_ram_mb < 0 for state in states) > 50


def test_floats_are_a_new_array_for_all_rows_or_some():
    column = np.array([3, 1, 4, 1, 5], dtype=np.int64)
    every = weights.floats(column, np.arange(5))
    some = weights.floats(column, np.array([1, 4]))
    assert every.dtype == some.dtype == np.float64
    assert every.tolist() == [3.0, 1.0, 4.0, 1.0, 5.0]
    assert some.tolist() == [1.0, 5.0]
    floats = column.astype(np.float64)
    assert weights.floats(floats, np.arange(5)) is not floats
    assert not np.shares_memory(weights.floats(floats, np.arange(5)), floats)


class KeptColumnWeigher(ram.RAMWeigher):
    """Hands over the table's own float column (no copy), as a weigher
    of another project may: the handler must not scale it in place."""

    def weigh_all(self, host_table, rows, spec):
        return host_table.state_column('ram', lambda state: float(
            state.free_ram_mb))


def test_the_handler_scales_in_place_only_arrays_it_owns():
    """Every row weighed (the weights a weigher hands over are then the
    whole column), twice: the same totals, and the table's column as it
    was; the built-in RAM weigher's own gathered weights agree."""
    hosts = [fakes.host_state(name, memory_mb_used=used)
             for name, used in zip('abc', (0, 1024, 4096))]
    table = fakes.table(hosts)
    column = table.state_column('ram', lambda state: float(
        state.free_ram_mb))
    before = column.copy()
    handler = weights.HostWeightHandler()
    rows = np.arange(3)
    first = handler.weigh([KeptColumnWeigher()], table, rows, fakes.spec())
    again = handler.weigh([KeptColumnWeigher()], table, rows, fakes.spec())
    assert column.tolist() == before.tolist()
    assert first.tolist() == again.tolist()
    assert handler.weigh([ram.RAMWeigher()], table, rows,
                         fakes.spec()).tolist() == first.tolist()


@pytest.mark.parametrize('seed', range(10))
def test_a_mostly_zero_column_weighs_as_the_whole_array_does(seed,
                                                             config):
    """The I/O weigher over hosts that are mostly idle weighs only the
    busy rows (HostTable.nonzero_rows): the totals are those of the
    whole arrays (a kept weighing, which never takes that way), to the
    bit, whatever the multiplier, the rows weighed and the claims
    written in place since."""
    rng = random.Random(seed)
    count = rng.choice([640, 1280])
    hosts = [fakes.host_state('h%d' % i, memory_mb_used=rng.choice(
        [0, 512, 2048]), io_workload=0) for i in range(count)]
    table = fakes.table(hosts)
    handler = weights.HostWeightHandler()
    weighers = [ram.RAMWeigher(), io_ops.IoOpsWeigher(), cpu.CPUWeigher()]
    taken = 0
    for _step in range(20):
        for row in rng.sample(range(count), rng.randint(0, 1)):
            state = copy.copy(table.states[row])
            state.memory_mb_used = rng.choice([0, 512, 2048])
            state.io_workload = rng.choice([0, 0, 1, 5])
            assert table.update_in_place({row: state})
        config.config(io_ops_weight_multiplier=rng.choice([-1.0, 2.0, -0.5]),
                      group='filter_scheduler')
        rows = np.flatnonzero([rng.random() < 0.7 for _ in range(count)])
        totals = handler.weigh(weighers, table, rows, fakes.spec())
        whole = handler.weighed(weighers, table, rows, fakes.spec()).totals
        assert totals.tobytes() == whole.tobytes()
        assert totals.tolist() == _novas_totals(
            weighers, [table.states[row] for row in rows], fakes.spec())
        taken += table.nonzero_rows(table.io_workload) is not None and bool(
            np.any(table.io_workload[rows]))
    # (Some steps took the few rows' way.)
    assert taken > 2
