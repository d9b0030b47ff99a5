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


def test_a_large_ranking_heads_with_the_first_of_the_full_order():
    rows = np.arange(10000)
    weights_ = np.zeros(10000)
    weights_[[17, 4000, 9999]] = [3.0, 2.0, 2.0]
    weights_[5000] = 1.0
    breaks = ranking.TieBreaks(random.Random(1))
    ranked = ranking.Ranking(rows, weights_, 2, rows + 1, breaks)
    assert ranked.head[0] == 17
    # One of the two tied for second, the one with the smaller key; the
    # other comes first in the rest.
    keys = dict(zip([4000, 9999], breaks.keys(np.array([4001, 10000]))))
    second, third = sorted(keys, key=keys.get)
    assert ranked.head.tolist() == [17, second]
    assert ranked.rest()[:2] == [third, 5000]


@pytest.mark.parametrize('seed', range(20))
def test_a_large_ranking_equals_a_full_sort(seed):
    """Head then rest: the order of a full sort by weight, then tie key,
    whatever the ties (few distinct weights: thousands tied at the cut)."""
    rng = np.random.default_rng(seed)
    count = int(rng.integers(300, 6000))
    rows = rng.permutation(count * 2)[:count]
    weights_ = rng.integers(0, int(rng.integers(1, 6)), count).astype(float)
    need = int(rng.integers(1, 8))
    # The table's node ids, by row (rows are some of the table's).
    ids = rng.permutation(10 ** 6)[:count * 2]
    breaks = ranking.TieBreaks(random.Random(seed))
    ranked = ranking.Ranking(rows, weights_, need, ids, breaks)
    full = rows[np.lexsort((breaks.keys(ids[rows]), -weights_))].tolist()
    assert len(ranked.head) >= min(need, count)
    assert ranked.head.tolist() + ranked.rest() == full
    # Without node ids, table order breaks ties.
    plain = ranking.Ranking(rows, weights_, need)
    assert plain.head.tolist() + plain.rest() == rows[
        np.argsort(-weights_, kind='stable')].tolist()


@pytest.mark.parametrize('seed', range(20))
def test_a_large_ranking_of_spread_weights_equals_a_full_sort(seed,
                                                              monkeypatch):
    """Weights of many values, fewer than needed tied for the best, some
    tied at the cut: the selection among the weights near the top (see
    ranking._near_the_top) heads as a full sort does."""
    rng = np.random.default_rng(seed)
    count = int(rng.integers(2000, 40000))
    rows = np.arange(count)
    weights_ = np.round(rng.random(count) * int(rng.integers(50, 5000)))
    need = int(rng.integers(2, 12))
    ids = rng.permutation(10 ** 6)[:count]
    found = []
    near = ranking._near_the_top
    monkeypatch.setattr(ranking, '_near_the_top',
                        lambda *args: found.append(near(*args)) or found[-1])
    # (Not the few best found one weight at a time.)
    monkeypatch.setattr(ranking, 'FEW_BEST', 0)
    breaks = ranking.TieBreaks(random.Random(seed))
    ranked = ranking.Ranking(rows, weights_, need, ids, breaks)
    full = rows[np.lexsort((breaks.keys(ids[rows]), -weights_))].tolist()
    assert ranked.head.tolist() == full[:len(ranked.head)]
    assert ranked.head.tolist() + ranked.rest() == full
    if np.count_nonzero(weights_ == weights_.max()) < need:
        assert found and found[0] is not None


@pytest.mark.parametrize('seed', range(30))
def test_the_few_best_found_one_weight_at_a_time_head_a_full_sort(
        seed, monkeypatch):
    """A ranking of up to FEW_BEST rows (a request's host_subset_size
    and alternates) finds them one weight at a time: the same head and
    rest as a full sort, with ties for the best and at the cut, and
    weights of minus infinity (left, or among the best)."""
    rng = np.random.default_rng(seed)
    count = int(rng.integers(300, 20000))
    rows = rng.permutation(count * 2)[:count]
    weights_ = np.round(rng.random(count) * int(rng.integers(1, 400)))
    weights_[rng.random(count) < rng.random() * 0.3] = -np.inf
    if seed % 5 == 0:
        weights_[:] = -np.inf
        weights_[rng.integers(0, count, 2)] = 1.0
    need = int(rng.integers(1, ranking.FEW_BEST + 1))
    ids = rng.permutation(10 ** 6)[:count * 2]
    used = []
    few = ranking._best_few
    monkeypatch.setattr(ranking, '_best_few',
                        lambda *args: used.append(1) or few(*args))
    breaks = ranking.TieBreaks(random.Random(seed))
    ranked = ranking.Ranking(rows, weights_, need, ids, breaks)
    full = rows[np.lexsort((breaks.keys(ids[rows]), -weights_))].tolist()
    assert len(ranked.head) >= need
    assert ranked.head.tolist() == full[:len(ranked.head)]
    assert ranked.head.tolist() + ranked.rest() == full
    # Taken whenever fewer than needed tie for the best.
    assert bool(used) == (
        np.count_nonzero(weights_ == weights_.max()) < need)


def test_the_best_few_at_the_samples_bound_are_found():
    """The best three sit where the sample looks (every
    SAMPLE_STRIDE-th weight): the third is the sample's bound itself,
    and two more tie with it elsewhere."""
    count = 4000
    weights_ = np.arange(count, dtype=float) % 100
    stride = ranking.SAMPLE_STRIDE
    weights_[[stride * 3, stride * 40, stride * 77]] = [900.0, 800.0, 700.0]
    weights_[[5, 1001]] = 700.0
    ids = np.arange(count) + 1
    breaks = ranking.TieBreaks(random.Random(4))
    ranked = ranking.Ranking(np.arange(count), weights_, 3, ids, breaks)
    tied = sorted([stride * 77, 5, 1001],
                  key=dict(zip([stride * 77, 5, 1001],
                               breaks.keys(ids[[stride * 77, 5, 1001]])
                               )).get)
    assert ranked.head.tolist() == [stride * 3, stride * 40, tied[0]]
    assert ranked.rest()[:2] == tied[1:]


@pytest.mark.parametrize('seed', range(5))
def test_shuffling_the_best_covers_every_host_tied_for_best(seed):
    """shuffle_best_same_weighed_hosts: the pick is among all the hosts
    of the best weight (as Nova shuffles them), though the head held
    only the first few of them; each comes once in the order, then the
    rest."""
    rows = np.arange(3000)
    weights_ = np.zeros(3000)
    best = rows[rows % 3 == 0]
    weights_[best] = 1.0
    breaks = ranking.TieBreaks(random.Random(seed))
    picked = set()
    for _ in range(40):
        ranked = ranking.Ranking(rows, weights_, 3, rows + 1, breaks)
        order = ranked.pick_order(1, shuffle_best=True)
        assert sorted(order) == best.tolist()
        assert sorted(order + ranked.rest()) == rows.tolist()
        picked.add(order[0])
    # 40 picks among 1000 equal hosts, not among the head's 3.
    assert len(picked) > 20


@pytest.mark.parametrize('count', [1, 3, 8, 9, 20])
def test_smallest_keys_even_with_the_largest_value_among_them(count):
    top = np.iinfo(np.uint64).max
    keys = np.array([top, 5, top, 2, 9, top, 1, 7, 3, 8, 4, 6] * 3,
                    dtype=np.uint64)
    found = ranking._smallest(keys, count)
    assert len(set(found.tolist())) == count
    assert sorted(keys[found].tolist()) == sorted(keys.tolist())[:count]
    assert ranking._smallest(None, count).tolist() == list(range(count))


def _full_order(rows, weights_, ids, breaks):
    return rows[np.lexsort((breaks.keys(ids[rows]), -weights_))].tolist()


def _assert_ranked_anew(ranking, rows, weights_, ids, breaks, need):
    """``ranking`` (patched or carried over onto ``weights_``) is the one
    a full sort of ``weights_`` makes: the weights it was given, a head
    of ``need`` rows at least, and the full order."""
    assert ranking.weights is weights_
    assert len(ranking.head) >= need
    assert ranking.head.tolist() + ranking.rest() == _full_order(
        rows, weights_, ids, breaks)
    assert np.array_equal(ranking.head_weights,
                          weights_[ranking.head_positions])


def _random_rows(seed, fewest):
    """``(rng, rows, weights, node ids, tie breaks)`` of a random ranking
    of ``fewest`` to 3,000 rows: with few distinct weights (thousands
    tied) for odd seeds, hardly any ties for even ones."""
    rng = np.random.default_rng(seed)
    count = int(rng.integers(fewest, 3000))
    rows = np.sort(rng.permutation(count * 2)[:count])
    if seed % 2:
        weights_ = rng.integers(0, int(rng.integers(2, 6)), count) * 1.0
    else:
        weights_ = rng.random(count)
    ids = rng.permutation(10 ** 6)[:count * 2]
    return rng, rows, weights_, ids, ranking.TieBreaks(random.Random(seed))


@pytest.mark.parametrize('seed', range(30))
@pytest.mark.parametrize('few_patched', [64, 0])
def test_a_patched_ranking_is_the_one_made_anew(seed, few_patched,
                                                monkeypatch):
    """After a few rows' weights changed (a claim lowers its host's, a
    refresh moves others either way), the patched ranking orders every
    row as a ranking made from scratch does, its head at least as long
    as asked; most patches rank only the head and the changed rows.
    Both ways: the head's values in Python (a head of a few dozen rows)
    and NumPy's (a longer one)."""
    monkeypatch.setattr(ranking, 'FEW_PATCHED', few_patched)
    rng, rows, weights_, ids, breaks = _random_rows(seed, 300)
    count = len(rows)
    need = int(rng.integers(1, 6))
    ranked = ranking.Ranking(rows, weights_.copy(), need + 8, ids, breaks)
    partial = 0
    for _ in range(40):
        weights_ = ranked.weights.copy()
        # The host claimed: the first of the head weighs less now; and
        # now and then other rows, anywhere, change.
        positions = {int(ranked.head_positions[0])}
        for _ in range(int(rng.integers(0, 3))):
            positions.add(int(rng.integers(0, count)))
        positions = np.array(sorted(positions))
        for position in positions.tolist():
            weights_[position] = (
                weights_[position] - rng.integers(0, 2) if seed % 2
                else rng.random())
        patched = ranked.patched(weights_, positions, need)
        _assert_ranked_anew(patched, rows, weights_, ids, breaks, need)
        partial += len(patched.head) < need + 8
        ranked = patched
    # The head ran down between rankings of every row.
    assert partial > 20


@pytest.mark.parametrize('seed', range(40))
def test_a_ranking_carried_to_the_next_instance_is_the_one_made_anew(
        seed, monkeypatch):
    """From one instance of a request to the next, rows stop passing
    (the host claimed is full, or another request's claim filled one)
    and a few rows' weights change: the ranking carried over orders
    every row left as a ranking made from scratch does, its head at
    least as long as needed, whether rows left from inside its head,
    at its last row or outside it; most are carried without ranking
    every row again."""
    rng, rows, weights_, ids, breaks = _random_rows(seed, 400)
    need = int(rng.integers(1, 4))
    depth = need + int(rng.integers(0, 6))
    ranked = ranking.Ranking(rows, weights_.copy(), depth, ids, breaks)
    anew = []
    top = ranking.Ranking._top
    monkeypatch.setattr(ranking.Ranking, '_top',
                        lambda self, need: anew.append(need) or top(self,
                                                                    need))
    for _ in range(30):
        head = ranked.head_positions.tolist()
        dropped = set()
        if rng.random() < 0.4:
            dropped.add(head[int(rng.integers(0, len(head)))])
        for _ in range(int(rng.integers(0, 3))):
            dropped.add(int(rng.integers(0, len(ranked.rows))))
        dropped = np.array(sorted(dropped), dtype=np.intp)
        rows = np.delete(ranked.rows, dropped)
        weights_ = np.delete(ranked.weights, dropped)
        changed = set()
        if head[0] not in dropped.tolist():
            changed.add(head[0] - int(np.searchsorted(dropped, head[0])))
        for _ in range(int(rng.integers(0, 3))):
            changed.add(int(rng.integers(0, len(rows))))
        changed = np.array(sorted(changed), dtype=np.intp)
        for position in changed.tolist():
            weights_[position] = (
                weights_[position] - rng.integers(-1, 2) if seed % 2
                else rng.random())
        now = ranked.carried(rows, weights_, dropped, changed, need, depth)
        _assert_ranked_anew(now, rows, weights_, ids, breaks, need)
        ranked = now
    if depth >= need + 2:
        # Most carried without ranking every row (only a head run down
        # below need, or its last row changed or gone, ranks them all).
        assert len(anew) < 15


def test_a_ranking_carried_with_its_head_gone_ranks_every_row():
    """Every row of the head dropped, the head's last row changed or a
    weight that is not a number: every row is ranked again, as deep as
    asked."""
    rows = np.arange(1000)
    breaks = ranking.TieBreaks(random.Random(3))
    ranked = ranking.Ranking(rows, np.arange(1000) * 1.0, 3, rows + 1,
                             breaks)
    assert ranked.head.tolist() == [999, 998, 997]
    left = np.arange(997)
    gone = ranked.carried(left, np.arange(997) * 1.0,
                          np.array([997, 998, 999]), left[:0], 1, 5)
    assert gone.head.tolist() == [996, 995, 994, 993, 992]
    weights_ = np.arange(1000) * 1.0
    weights_[997] = 0.5
    last = ranked.carried(rows, weights_, rows[:0], np.array([997]), 1, 4)
    assert last.head.tolist() == [999, 998, 996, 995]
    weights_ = np.arange(1000) * 1.0
    weights_[10] = float('nan')
    unknown = ranked.carried(rows, weights_, rows[:0], np.array([10]), 1, 4)
    fresh = ranking.Ranking(rows, weights_, 4, rows + 1, breaks)
    assert unknown.head.tolist() + unknown.rest() == (
        fresh.head.tolist() + fresh.rest())


@pytest.mark.parametrize('seed', range(10))
def test_a_patched_ranking_shuffles_every_host_tied_for_best(seed):
    """shuffle_best_same_weighed_hosts on a patched ranking: the first
    hosts of the order are all those tied for the best weight, whether
    the head holds them all or was cut through them."""
    rng = np.random.default_rng(seed)
    count = 1000
    rows = np.arange(count)
    weights_ = rng.integers(0, 3, count) * 1.0
    # A few best (fewer than the head holds) or many.
    best = rng.permutation(count)[:int(rng.choice([3, 400]))]
    weights_[best] = 5.0
    breaks = ranking.TieBreaks(random.Random(seed))
    ranked = ranking.Ranking(rows, weights_, 12, rows + 1, breaks)
    for _ in range(5):
        weights_ = ranked.weights.copy()
        first = int(ranked.head_positions[0])
        weights_[first] -= 1.0
        patched = ranked.patched(weights_, np.array([first]), 4)
        tied = np.flatnonzero(weights_ == weights_.max())
        # (A request's pick grows the head it was given to every host
        # tied for the best when it was cut through them; the next patch
        # starts from that head.)
        order = patched.pick_order(1, shuffle_best=True)
        assert sorted(order[:len(tied)]) == rows[tied].tolist()
        assert sorted(order + patched.rest()) == rows.tolist()
        ranked = patched


def test_a_ranking_patched_otherwise_ranks_every_row():
    """A boundary row that changed, a weight that is not a number, a
    head run down below what is needed, or tie keys drawn again (a
    forked worker) rank every row again, with the depth the ranking
    was made with."""
    rows = np.arange(1000)
    weights_ = np.arange(1000) * 1.0
    breaks = ranking.TieBreaks(random.Random(4))
    ranked = ranking.Ranking(rows, weights_.copy(), 6, rows + 1, breaks)
    assert ranked.head.tolist() == [999, 998, 997, 996, 995, 994]

    def patched(changes, need=2):
        weights_ = ranked.weights.copy()
        for position, value in changes.items():
            weights_[position] = value
        positions = np.array(sorted(changes))
        return ranked.patched(weights_, positions, need)

    # The head's last row and a row under it changed places.
    assert patched({994: 0.5, 3: 2000.0}).head.tolist() == [
        3, 999, 998, 997, 996, 995]
    unknown = patched({997: float('nan')})
    fresh = ranking.Ranking(rows, unknown.weights, 6, rows + 1, breaks)
    assert len(unknown.head) == len(fresh.head)
    assert unknown.head.tolist() + unknown.rest() == (
        fresh.head.tolist() + fresh.rest())
    # Two rows left the head, as asked: the head is down to four.
    assert patched({999: 0.1, 998: 0.2}).head.tolist() == [
        997, 996, 995, 994]
    assert patched({999: 0.1, 998: 0.2}, need=5).head.tolist() == [
        997, 996, 995, 994, 993, 992]
    breaks._reset(random.Random(5))
    assert patched({999: 0.1}, need=1).head.tolist() == [
        998, 997, 996, 995, 994, 993]


def test_a_row_that_comes_to_tie_with_the_patched_head_is_shuffled_too():
    """Every row of the head ties for the best, none outside it did; a
    row outside comes to tie with them (its tie key after the head's
    last): shuffle_best_same_weighed_hosts picks among it too."""
    rows = np.arange(500)
    weights_ = np.arange(500) / 1000.0
    best = [3, 70, 140, 210, 280, 350]
    weights_[best] = 10.0
    breaks = ranking.TieBreaks(random.Random(2))
    keys = breaks.keys(rows + 1)
    ranked = ranking.Ranking(rows, weights_, len(best), rows + 1, breaks)
    assert sorted(ranked.head.tolist()) == best
    last_key = keys[int(ranked.head[-1])]
    joining = [row for row in range(500)
               if row not in best and keys[row] > last_key][:5]
    for row in joining:
        changed = ranked.weights.copy()
        changed[row] = 10.0
        patched = ranked.patched(changed, np.array([row]), 2)
        # Ranked after the head, as a full sort has it.
        assert patched.head.tolist() + patched.rest() == _full_order(
            rows, changed, rows + 1, breaks)
        order = patched.pick_order(1, shuffle_best=True)
        assert sorted(order[:len(best) + 1]) == sorted(best + [row])
