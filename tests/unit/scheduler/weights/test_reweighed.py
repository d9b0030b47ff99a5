"""HostWeightHandler.reweighed: the rows a host table's writes changed,
weighed again, give the totals a full weighing of the table as it is now
gives, to the bit; or None when a weigher would start or stop running."""

import random

import numpy as np
import pytest

from scheduler.db import claims
from scheduler import weights
from scheduler.weights import cpu
from scheduler.weights import disk
from scheduler.weights import io_ops
from scheduler.weights import ram
from tests.unit.scheduler import fakes


class Bounded(weights.BaseHostWeigher):
    """Raw weights clamped by minval and maxval, by the base class's per
    host path."""

    minval = 2.0
    maxval = 9.0
    pure = True

    def _weigh_object(self, host_state, spec):
        return float(host_state.vcpus_used)


class PerHost(weights.BaseHostWeigher):
    """A multiplier of its own for each host (an array of them)."""

    pure = True

    def _weigh_object(self, host_state, spec):
        return -host_state.memory_mb_used / 3.0

    def weight_multiplier(self, host_state):
        return 0.5 if host_state.host.endswith(('1', '4')) else 1.7


class BusyOnly(weights.BaseHostWeigher):
    """Counts only on busy hosts: multiplier 0 on every idle one."""

    pure = True

    def _weigh_object(self, host_state, spec):
        return float(host_state.vcpus_used)

    def weight_multiplier(self, host_state):
        return 2.0 if host_state.vcpus_used > 6 else 0.0


class Plain:
    """A weigher that is no BaseHostWeigher: per-host weights and
    multipliers only."""

    pure = True

    def _weigh_object(self, host_state, spec):
        return float(host_state.local_gb_used)

    def weight_multiplier(self, host_state):
        return 1.5 if host_state.vcpus_used % 2 else 0.25


def _weighers():
    return [ram.RAMWeigher(), cpu.CPUWeigher(), disk.DiskWeigher(),
            io_ops.IoOpsWeigher(), Bounded(), PerHost(), Plain()]


def _states(rng, count):
    # Few distinct sizes: several hosts share each bound, as in a cloud
    # of a few node shapes.
    return [fakes.host_state(
        'h%02d' % number, vcpus=rng.choice([8, 16]),
        vcpus_used=rng.randrange(4), memory_mb=rng.choice([4096, 8192]),
        memory_mb_used=rng.choice([0, 512]), local_gb=100,
        local_gb_used=rng.choice([0, 20]), io_workload=rng.randrange(2))
        for number in range(count)]


def _claim(rng, state):
    return state.consumed(claims.Resources(
        rng.choice([0, 1, 4]), rng.choice([0, 512, 3072]),
        rng.choice([0, 10])))


@pytest.mark.parametrize('in_place', [False, True])
def test_reweighed_rows_give_the_totals_of_a_full_weighing(in_place):
    handler = weights.HostWeightHandler()
    spec = fakes.spec()
    outcomes = {'bounds kept': 0, 'bounds moved': 0}
    for seed in range(60):
        rng = random.Random(seed)
        table = fakes.table(_states(rng, 10))
        rows = np.arange(len(table))
        weighers = _weighers()
        weighed = handler.weighed(weighers, table, rows, spec)
        for _ in range(5):
            changed = sorted(rng.sample(range(len(table)),
                                        rng.choice([1, 1, 2, 3])))
            assert table.update_in_place(
                {row: _claim(rng, table.states[row]) for row in changed})
            bounds = [(part.low, part.high) for part in weighed.parts]
            totals = weighed.totals
            again = handler.reweighed(weighed, table, np.array(changed),
                                      spec, in_place=in_place)
            fresh = handler.weighed(weighers, table, rows, spec)
            assert again is not None, seed
            assert again.totals.tobytes() == fresh.totals.tobytes(), seed
            assert again.totals.tobytes() == handler.weigh(
                weighers, table, rows, spec).tobytes()
            for mine, theirs in zip(again.parts, fresh.parts):
                assert (mine.low, mine.high) == (theirs.low, theirs.high)
                assert np.array_equal(mine.weights, theirs.weights)
                # The weights at each bound, counted as they changed.
                if mine.skipped is None:
                    assert mine.at_bounds == theirs.at_bounds == (
                        np.count_nonzero(theirs.weights == theirs.low),
                        np.count_nonzero(theirs.weights == theirs.high))
            moved = any((new.low, new.high) != old
                        for new, old in zip(again.parts, bounds))
            outcomes['bounds moved' if moved else 'bounds kept'] += 1
            # In place, the totals are the ones given unless every one
            # was summed again.
            assert (again.totals is totals) == (in_place and not moved)
            weighed = again
    # Both ways were taken: the rows alone, and every total again.
    assert min(outcomes.values()) > 20, outcomes


class WholeColumn(weights.BaseHostWeigher):
    """Hands over the table's own column when asked for every row."""

    pure = True

    def weigh_all(self, host_table, rows, spec):
        column = host_table.vcpus_free
        if len(rows) == len(column):
            return column
        return column[rows]


def test_the_weights_kept_are_not_the_tables():
    """The table writes its columns in place; what was kept stays as it
    was weighed."""
    rng = random.Random(1)
    table = fakes.table(_states(rng, 6))
    assert table.vcpus_free.dtype == np.float64
    handler = weights.HostWeightHandler()
    spec = fakes.spec()
    weighed = handler.weighed([WholeColumn()], table, np.arange(6), spec)
    before = weighed.parts[0].weights.copy()
    assert table.update_in_place(
        {2: table.states[2].consumed(claims.Resources(3, 0, 0))})
    assert np.array_equal(weighed.parts[0].weights, before)
    again = handler.reweighed(weighed, table, np.array([2]), spec)
    assert again.totals.tobytes() == handler.weigh(
        [WholeColumn()], table, np.arange(6), spec).tobytes()


def test_a_weigher_that_starts_to_count_weighs_everything_again():
    handler = weights.HostWeightHandler()
    spec = fakes.spec()
    # No host does any I/O: the I/O weigher weighs none of them.
    table = fakes.table([fakes.host_state('h%d' % number, vcpus_used=number)
                         for number in range(4)])
    weighers = [io_ops.IoOpsWeigher(), cpu.CPUWeigher()]
    weighed = handler.weighed(weighers, table, np.arange(4), spec)
    assert weighed.parts[0].skipped == weights.FLAT
    # A claim starts a build on h2.
    assert table.update_in_place(
        {2: table.states[2].consumed(claims.Resources(1, 0, 0))})
    assert handler.reweighed(weighed, table, np.array([2]), spec) is None
    assert handler.weighed(weighers, table, np.arange(4),
                           spec).parts[0].skipped is None


def test_a_multiplier_no_longer_zero_weighs_everything_again():
    handler = weights.HostWeightHandler()
    spec = fakes.spec()
    table = fakes.table([fakes.host_state('h%d' % number, vcpus=16,
                                          vcpus_used=number)
                         for number in range(4)])
    weighers = [BusyOnly(), cpu.CPUWeigher()]
    weighed = handler.weighed(weighers, table, np.arange(4), spec)
    assert weighed.parts[0].skipped == weights.ZERO
    # h1 becomes busy: its multiplier is 2 now.
    assert table.update_in_place(
        {1: table.states[1].consumed(claims.Resources(6, 0, 0))})
    assert handler.reweighed(weighed, table, np.array([1]), spec) is None
    # A change that leaves every multiplier 0 is weighed row by row.
    assert table.update_in_place(
        {3: table.states[3].consumed(claims.Resources(1, 0, 0))})
    weighed = handler.weighed(weighers, table, np.arange(4), spec)
    assert table.update_in_place(
        {0: table.states[0].consumed(claims.Resources(2, 0, 0))})
    again = handler.reweighed(weighed, table, np.array([0]), spec)
    assert again is not None
    assert again.totals.tobytes() == handler.weigh(
        weighers, table, np.arange(4), spec).tobytes()


def test_a_weight_that_is_not_a_number_weighs_everything_again():
    class Unknown(weights.BaseHostWeigher):
        pure = True

        def _weigh_object(self, host_state, spec):
            return (float('nan') if host_state.vcpus_used > 2
                    else float(host_state.vcpus_used))

    handler = weights.HostWeightHandler()
    spec = fakes.spec()
    table = fakes.table([fakes.host_state('h%d' % number, vcpus=16,
                                          vcpus_used=number % 2)
                         for number in range(4)])
    weighed = handler.weighed([Unknown()], table, np.arange(4), spec)
    assert table.update_in_place(
        {1: table.states[1].consumed(claims.Resources(3, 0, 0))})
    assert handler.reweighed(weighed, table, np.array([1]), spec) is None


def test_one_multiplier_where_each_host_had_its_own_weighs_everything_again():
    class Overridden(weights.BaseHostWeigher):
        """Multipliers per host (aggregate overrides) until ``plain``."""

        pure = True
        plain = False

        def _weigh_object(self, host_state, spec):
            return float(host_state.vcpus_used)

        def weight_multipliers(self, host_table, rows):
            if self.plain:
                return 1.0
            return np.linspace(0.5, 2.0, len(rows))

    handler = weights.HostWeightHandler()
    spec = fakes.spec()
    table = fakes.table([fakes.host_state('h%d' % number, vcpus=16,
                                          vcpus_used=number)
                         for number in range(4)])
    weigher = Overridden()
    weighed = handler.weighed([weigher], table, np.arange(4), spec)
    assert table.update_in_place(
        {2: table.states[2].consumed(claims.Resources(1, 0, 0))})
    weigher.plain = True
    assert handler.reweighed(weighed, table, np.array([2]), spec) is None


class Unbounded(weights.BaseHostWeigher):
    """No minval nor maxval: both bounds are weights of hosts."""

    pure = True

    def _weigh_object(self, host_state, spec):
        return float(host_state.local_gb_used - host_state.vcpus_used)


def _varied_states(rng, count):
    # Mostly distinct usage: a bound is often one host's alone, so that
    # dropping it moves the bound.
    return [fakes.host_state(
        'h%02d' % number, vcpus=16, vcpus_used=rng.randrange(12),
        memory_mb=8192, memory_mb_used=rng.randrange(0, 6144, 256),
        local_gb=100, local_gb_used=rng.randrange(0, 80, 5),
        io_workload=rng.randrange(3))
        for number in range(count)]


def test_rows_dropped_and_claimed_give_the_totals_of_a_full_weighing():
    """Later instances of a request: rows leave (they no longer pass,
    narrowed) and claimed rows are weighed again (reweighed), in turn;
    the totals stay those of a full weighing of the rows left, to the
    bit, whether a bound moved (every total summed again) or not."""
    handler = weights.HostWeightHandler()
    spec = fakes.spec()
    weighers = [ram.RAMWeigher(), cpu.CPUWeigher(), disk.DiskWeigher(),
                io_ops.IoOpsWeigher(), Bounded(), Unbounded()]
    outcomes = {'a low bound left': 0, 'a high bound left': 0,
                'bounds kept': 0}
    for seed in range(60):
        rng = random.Random(seed)
        table = fakes.table(_varied_states(rng, 14))
        rows = np.arange(len(table))
        weighed = handler.weighed(weighers, table, rows, spec)
        for _ in range(6):
            if rng.random() < 0.5 and len(rows) > 3:
                dropped = np.array(sorted(rng.sample(
                    range(len(rows)), rng.choice([1, 1, 2]))))
                bounds = [(part.low, part.high) for part in weighed.parts]
                weighed = handler.narrowed(weighed, dropped)
                rows = np.delete(rows, dropped)
                moved = [(part.low, part.high) for part in weighed.parts]
                if any(new[0] != old[0] for new, old in zip(moved, bounds)):
                    outcomes['a low bound left'] += 1
                if any(new[1] != old[1] for new, old in zip(moved, bounds)):
                    outcomes['a high bound left'] += 1
                if moved == bounds:
                    outcomes['bounds kept'] += 1
            else:
                positions = np.array(sorted(rng.sample(
                    range(len(rows)), rng.choice([1, 2]))))
                assert table.update_in_place(
                    {int(row): _claim(rng, table.states[row])
                     for row in rows[positions]})
                weighed = handler.reweighed(weighed, table, positions, spec,
                                            in_place=rng.random() < 0.5)
            assert weighed is not None, seed
            assert np.array_equal(weighed.rows, rows)
            fresh = handler.weighed(weighers, table, rows, spec)
            assert weighed.totals.tobytes() == fresh.totals.tobytes(), seed
            for mine, theirs in zip(weighed.parts, fresh.parts):
                assert (mine.low, mine.high) == (theirs.low, theirs.high)
                assert np.array_equal(mine.weights, theirs.weights)
    assert min(outcomes.values()) > 20, outcomes
