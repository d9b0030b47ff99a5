import random

import numpy as np
import pytest

from scheduler.drivers import filter_scheduler
from scheduler.drivers import ranking
from tests.unit.scheduler import fakes


def _order(rows, weights_, breaks, node_ids=None):
    node_ids = rows + 1000 if node_ids is None else node_ids
    ranked = ranking.Ranking(rows, weights_, 3, node_ids, breaks)
    return [int(row) for row in ranked.head] + ranked.rest()


@pytest.mark.parametrize('hosts', [50, 5000])
def test_processes_break_ties_between_equal_hosts_differently(monkeypatch,
                                                              hosts):
    # 5000 rows: only the best are sorted (and keyed) up front.
    rows = np.arange(hosts)
    weights_ = np.zeros(hosts)
    breaks = ranking.TieBreaks()
    first = _order(rows, weights_, breaks)
    assert _order(rows, weights_, breaks) == first   # stable in a process
    assert sorted(first) == list(rows)               # every host, once
    # A worker forked after the driver was built draws its own order.
    monkeypatch.setattr(ranking.os, 'getpid', lambda: -1)
    other_process = _order(rows, weights_, breaks)
    assert other_process != first
    assert _order(rows, weights_, breaks) == other_process
    # Weights still come first: a better host wins whatever its key.
    weights_[other_process[-1]] = 1.0
    assert _order(rows, weights_, breaks)[0] == other_process[-1]


def test_drivers_of_one_process_break_ties_differently():
    rows = np.arange(100)
    weights_ = np.zeros(100)
    assert (_order(rows, weights_, ranking.TieBreaks())
            != _order(rows, weights_, ranking.TieBreaks()))


def test_a_seeded_source_repeats_itself_even_after_a_fork(monkeypatch):
    rows = np.arange(100)
    weights_ = np.zeros(100)

    def run(seed):
        breaks = ranking.TieBreaks(random.Random(seed))
        ranked = ranking.Ranking(rows, weights_, 3, rows + 7, breaks)
        picks = [ranked.pick_order(10, shuffle_best=True)[:5]
                 for _ in range(5)]
        return _order(rows, weights_, breaks), picks

    first = run(1)
    assert run(1) == first
    assert run(2) != first
    monkeypatch.setattr(ranking.os, 'getpid', lambda: -1)
    assert run(1) == first


def test_seeded_drivers_order_equal_hosts_by_their_seed(cloud, make_driver,
                                                        config):
    config.config(max_attempts=4, group='scheduler')
    for number in range(12):
        cloud.add_node('host%02d' % number)

    def ranked(seed):
        driver = make_driver(filter_scheduler.FilterScheduler,
                             tie_breaks=random.Random(seed))
        # No instance uuids: nothing is claimed, all see the same cloud.
        [hosts] = driver.select_destinations(None, fakes.spec(), None, True)
        return [selection.service_host for selection in hosts]

    first = ranked(1)
    assert len(first) == 4
    assert ranked(1) == first
    assert ranked(2) != first


def test_nth_largest_is_what_a_full_selection_gives():
    rng = np.random.default_rng(11)
    for trial in range(400):
        size = int(rng.integers(1, 20000))
        n = int(rng.integers(1, min(size, 40) + 1))
        if trial % 3 == 0:
            # Many hosts of a few shapes: weights tie.
            values = rng.choice(rng.random(int(rng.integers(1, 6))), size)
        else:
            values = rng.normal(size=size)
        assert ranking.nth_largest(values, n) == np.partition(
            values, size - n)[size - n]


def test_nth_largest_with_weights_that_are_not_numbers():
    values = np.arange(5000, dtype=np.float64)
    values[::7] = np.nan
    expected = np.partition(values, 5000 - 3)[5000 - 3]
    assert np.isnan(expected)
    assert np.isnan(ranking.nth_largest(values, 3))


def test_a_large_ranking_heads_with_the_best_and_their_ties():
    rows = np.arange(10000)
    weights_ = np.zeros(10000)
    weights_[[17, 4000, 9999]] = [3.0, 2.0, 2.0]
    weights_[5000] = 1.0
    ranked = ranking.Ranking(rows, weights_, 2, rows + 1,
                             ranking.TieBreaks(random.Random(1)))
    assert ranked.head[0] == 17
    # Both hosts tied for second place are in the head.
    assert sorted(ranked.head[1:].tolist()) == [4000, 9999]
    assert ranked.rest()[0] == 5000
