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
