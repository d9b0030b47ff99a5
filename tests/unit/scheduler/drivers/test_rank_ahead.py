"""[filter_scheduler] rank_ahead: a request's shape ranked again once the
scheduler is idle, and used by the next request of that shape."""

import datetime
import gc
import logging
import random
import threading
import time
import weakref

import numpy as np
import oslo_messaging as messaging
import pytest

from scheduler import context as gantt_context
from scheduler.drivers import ahead
from scheduler.drivers import filter_scheduler
from scheduler.drivers import ranking as ranking_mod
from scheduler import filters
from scheduler import host_cache
from scheduler import manager
from scheduler import placement_types
from scheduler import rpc
from scheduler import rpcapi
from scheduler import weights
from tests.unit import inprocess
from tests.unit.scheduler import fakes
from tests.unit.scheduler import group_fakes


def _driver(make_driver, make_host_manager, seed=7):
    # No background refresh: the cache changes only by the requests'
    # own claims, so that two runs start from the same host states.
    return make_driver(filter_scheduler.FilterScheduler,
                       host_manager=make_host_manager(auto_refresh=False),
                       tie_breaks=random.Random(seed))


def _idle(driver):
    """The RPC server answered and has nothing in flight: the driver
    ranks the last shape there and then, and holds a ranking made on the
    host cache as it is now."""
    driver.idle()
    assert driver.ahead.holds(driver.host_manager.current_table()), \
        'no ranking made ahead'


def _place(driver, cloud, memories, wait=False):
    """Place one instance per memory size; with ``wait``, the server is
    idle after each request that repeats the size before it, and ranks
    it ahead."""
    answers, claimed = [], []
    last = None
    for uuid, memory in zip(fakes.uuids(len(memories)), memories):
        [selection] = driver.select_destinations(
            None, fakes.spec(memory_mb=memory), [uuid], True)
        answers.append([s.service_host for s in selection])
        claimed.append((uuid, cloud.nodes[selection[0].service_host]))
        if wait and memory == last:
            _idle(driver)
        last = memory
    return answers, claimed


def _cloud(cloud, hosts=12):
    for number in range(hosts):
        cloud.add_node('h%02d' % number,
                       memory_mb=4096 * (1 + (7 * number) % 12),
                       vcpus=8 + number % 3)


# Runs of one shape, then another: each run's first request ranks itself.
MEMORIES = [1024] * 8 + [2048] * 6 + [1024] * 6 + [3072] * 4


def test_places_exactly_as_without_it(cloud, make_driver,
                                      make_host_manager, config):
    config.config(max_attempts=3, group='scheduler')
    _cloud(cloud)
    ranked = _driver(make_driver, make_host_manager)
    with_ahead, claimed = _place(ranked, cloud, MEMORIES, wait=True)
    ranked.release(claimed)
    # Every request but the first two of each run of one shape used a
    # ranking made ahead (the second is the first to repeat a shape):
    # 24 requests, 4 runs.
    assert ranked.stats['ranked_ahead_used'] == len(MEMORIES) - 8
    assert ranked.stats['ranked_ahead'] >= len(MEMORIES) - 8
    # After each claim of a run, the ranking was patched, not made anew.
    assert ranked.stats['ranked_ahead_patched'] >= len(MEMORIES) - 12

    config.config(rank_ahead=False, group='filter_scheduler')
    plain = _driver(make_driver, make_host_manager)
    without, _claimed = _place(plain, cloud, MEMORIES)
    assert plain.stats.get('ranked_ahead_used', 0) == 0
    assert with_ahead == without
    # Hosts were claimed more than once: the rankings were not stale.
    assert len({hosts[0] for hosts in without}) < len(MEMORIES)


def test_the_ranking_made_ahead_is_the_one_made_on_arrival(
        cloud, make_driver, make_host_manager):
    _cloud(cloud)
    driver = _driver(make_driver, make_host_manager)
    _place(driver, cloud, [2048] * 2, wait=True)
    table = driver.host_manager.current_table()
    spec = fakes.spec(memory_mb=2048)
    request = filter_scheduler._Request(driver, spec, fakes.uuids(1), True,
                                        table)
    shape = request.ahead_shape()
    result, ranking = driver.ahead.take(shape, table)
    fresh_result, fresh_ranking = request.rank_first()
    assert result is not fresh_result
    assert np.array_equal(result.mask, fresh_result.mask)
    assert result.steps == fresh_result.steps
    assert np.array_equal(ranking.head, fresh_ranking.head)
    assert np.array_equal(ranking.head_weights, fresh_ranking.head_weights)
    assert ranking.rest() == fresh_ranking.rest()


def _same_ranking(driver, memory_mb):
    """The ranking held for ``memory_mb`` is the one made from scratch
    on the host cache as it is now, to the last weight."""
    table = driver.host_manager.current_table()
    request = filter_scheduler._Request(
        driver, fakes.spec(memory_mb=memory_mb), fakes.uuids(1), True, table)
    result, ranking = driver.ahead.take(request.ahead_shape(), table)
    fresh_result, fresh_ranking = request.rank_first()
    assert np.array_equal(result.mask, fresh_result.mask)
    assert result.steps == fresh_result.steps
    assert np.array_equal(ranking.rows, fresh_ranking.rows)
    assert ranking.weights.tobytes() == fresh_ranking.weights.tobytes()
    # The same order; the head made ahead holds as many hosts at least.
    assert len(ranking.head) >= len(fresh_ranking.head) or (
        fresh_ranking.complete)
    assert ranking.head.tolist() + ranking.rest() == (
        fresh_ranking.head.tolist() + fresh_ranking.rest())
    return ranking


def test_after_a_claim_the_ranking_is_patched_to_the_one_made_anew(
        cloud, make_driver, make_host_manager):
    _cloud(cloud)
    driver = _driver(make_driver, make_host_manager)
    _place(driver, cloud, [2048] * 2, wait=True)
    assert driver.stats.get('ranked_ahead_patched', 0) == 0
    for placed in range(1, 6):
        # The request takes the ranking, claims, and the server is idle.
        _place(driver, cloud, [2048])
        _idle(driver)
        assert driver.stats['ranked_ahead_patched'] == placed
        _same_ranking(driver, 2048)


def test_a_patch_reads_the_spec_s_resources_once(cloud, make_driver,
                                                 make_host_manager,
                                                 monkeypatch):
    """The capacity filters and the weighers that judge the claimed row
    again in a patch share one reading of the spec's resources."""
    from scheduler.objects import request_spec
    _cloud(cloud)
    driver = _driver(make_driver, make_host_manager)
    _place(driver, cloud, [2048] * 2, wait=True)
    _place(driver, cloud, [2048])
    reads = []
    read = request_spec.RequestSpec._resources
    monkeypatch.setattr(request_spec.RequestSpec, '_resources',
                        lambda spec: reads.append(spec) or read(spec))
    _idle(driver)
    assert driver.stats['ranked_ahead_patched'] == 1
    assert len(reads) == 1
    _same_ranking(driver, 2048)


def test_a_patch_ranks_the_head_made_ahead_until_it_runs_down(
        cloud, make_driver, make_host_manager, monkeypatch):
    """On a table too large to sort whole, the ranking made ahead heads
    with AHEAD_DEPTH hosts more than a request needs; after each claim
    the patch ranks that head and the rows written again, and when the
    head is down to what a request needs, every host: the order is the
    one made anew each time."""
    monkeypatch.setattr(filter_scheduler, 'AHEAD_DEPTH', 3)
    monkeypatch.setattr(ranking_mod, 'FULL_SORT_LIMIT', 8)
    # Three sizes of host: ties for the head's places.
    for number in range(40):
        cloud.add_node('h%02d' % number, memory_mb=8192 * (1 + number % 3),
                       vcpus=8)
    driver = _driver(make_driver, make_host_manager)
    _place(driver, cloud, [2048] * 2, wait=True)
    heads = []
    for _ in range(12):
        _place(driver, cloud, [2048])
        _idle(driver)
        heads.append(len(_same_ranking(driver, 2048).head))
    assert driver.stats['ranked_ahead_patched'] == 12
    # A request needs 4 (one to pick, two alternates, one more): the
    # head ran down from 7 and was made whole again.
    assert min(heads) == 4 and max(heads) == 7, heads
    assert heads.count(7) >= 2, heads


def test_patched_for_a_few_rows_by_the_size_of_the_table(
        cloud, make_driver, make_host_manager, monkeypatch):
    assert filter_scheduler.patch_rows(12) == 1
    assert filter_scheduler.patch_rows(5000) == 2
    assert filter_scheduler.patch_rows(10000) == 4
    # Two rows on this 12-host table.
    monkeypatch.setattr(filter_scheduler, 'PATCH_HOSTS_PER_ROW', 6)
    _cloud(cloud)
    driver = _driver(make_driver, make_host_manager)
    _place(driver, cloud, [2048] * 2, wait=True)

    def claimed_elsewhere(*hosts):
        # Claims of another scheduler land in the cache.
        for host in hosts:
            driver.host_manager.consume(
                cloud.nodes[host], placement_types.Resources(0, 512, 0))
        made = driver.stats['ranked_ahead']
        patched = driver.stats.get('ranked_ahead_patched', 0)
        _idle(driver)
        _same_ranking(driver, 2048)
        assert driver.stats['ranked_ahead'] == made + 1
        return driver.stats.get('ranked_ahead_patched', 0) - patched

    assert claimed_elsewhere('h01', 'h02') == 1
    # A row written twice is one row to ask again.
    assert claimed_elsewhere('h03', 'h03', 'h04') == 1
    # Three rows: ranking every host costs less.
    assert claimed_elsewhere('h05', 'h06', 'h07') == 0


def test_a_host_the_claim_filled_ranks_everything_again(
        cloud, make_driver, make_host_manager):
    # Each host takes one 3 GB instance (4 GB, 512 MB reserved, at a RAM
    # ratio of 1 or 1.5): after each claim its host no longer passes the
    # RAM filter.
    for number in range(6):
        cloud.add_node('h%d' % number, memory_mb=4096, vcpus=8)
    driver = _driver(make_driver, make_host_manager)
    _place(driver, cloud, [3072] * 2, wait=True)
    made = driver.stats['ranked_ahead']
    for _ in range(3):
        _place(driver, cloud, [3072])
        _idle(driver)
        _same_ranking(driver, 3072)
    assert driver.stats['ranked_ahead'] == made + 3
    assert driver.stats.get('ranked_ahead_patched', 0) == 0


def test_a_write_to_the_cache_or_another_shape_is_not_served(
        cloud, make_driver, make_host_manager):
    _cloud(cloud)
    driver = _driver(make_driver, make_host_manager)
    _place(driver, cloud, [2048] * 2, wait=True)
    table = driver.host_manager.current_table()

    def shape(**kwargs):
        return filter_scheduler._Request(
            driver, fakes.spec(**kwargs), fakes.uuids(1), True,
            table).ahead_shape()
    assert driver.ahead.take(shape(memory_mb=2048), table) is not None
    # Another flavor, another project: not this ranking.
    assert driver.ahead.take(shape(memory_mb=4096), table) is None
    other = shape(memory_mb=2048)
    other.spec.project_id = 'another'
    assert driver.ahead.take(other, table) is None
    # A claim of another scheduler lands in the cache: stale.
    driver.host_manager.consume(cloud.nodes['h03'],
                                placement_types.Resources(1, 1024, 0))
    assert table.writes > 0
    assert driver.ahead.take(shape(memory_mb=2048), table) is None
    # And the next request ranks on arrival, then leaves a fresh one.
    before = driver.stats.get('ranked_ahead_used', 0)
    _place(driver, cloud, [2048])
    assert driver.stats.get('ranked_ahead_used', 0) == before
    _idle(driver)
    _place(driver, cloud, [2048])
    assert driver.stats['ranked_ahead_used'] == before + 1


def _seen_30_and_5_seconds_ago(now):
    return fakes.table([
        fakes.host_state('h1', svc=fakes.service('h1', seen_ago=30,
                                                 when=now)),
        fakes.host_state('h2', svc=fakes.service('h2', seen_ago=5,
                                                 when=now))])


def test_a_heartbeat_leaving_the_window_ends_the_ranking():
    # The host cache judges liveness at each refresh (a change is a
    # write); a table of raw heartbeats depends on the time itself.
    now = fakes.now()
    table = _seen_30_and_5_seconds_ago(now)
    made = object()
    held = ahead.Ahead(lambda: table, lambda shape, table: made)
    shape = ahead.Shape(fakes.spec(), True, 3, (), 60)
    held.later(shape)
    assert held.idle() is True
    # h1 is up until its heartbeat is 60 s old.
    expires = host_cache.to_microseconds(now) + 30 * 1000000 + 1
    assert held.take(shape, table, now_us=expires - 1) is made
    assert held.take(shape, table, now_us=expires) is None


def test_the_ranking_held_is_patched_only_within_its_window(monkeypatch):
    now = fakes.now()
    table = _seen_30_and_5_seconds_ago(now)
    expires = host_cache.to_microseconds(now) + 30 * 1000000 + 1
    clock = [expires - 10]
    monkeypatch.setattr(ahead.host_cache, 'now_us_utc',
                        lambda: clock[0])
    calls = []

    def patch(shape, table_, ranked, writes):
        # Patches a ranking made from scratch; not one patched before.
        calls.append((shape, ranked, writes))
        return None if isinstance(ranked, tuple) else ('patched', ranked)

    made = iter(['full', 'again', 'anew', 'late'])
    held = ahead.Ahead(lambda: table, lambda shape, table_: next(made),
                       patch=patch)
    shape = ahead.Shape(fakes.spec(), True, 3, (), 60)

    def rank(wanted):
        held.later(wanted)
        assert held.idle()
        return held.take(wanted, table)

    def write():
        assert table.update_in_place({1: table.states[1].consumed(
            placement_types.Resources(1, 0, 0))})

    assert rank(shape) == 'full'
    assert calls == []      # nothing held: ranked from scratch
    write()
    assert rank(shape) == ('patched', 'full')
    assert calls == [(shape, 'full', table.writes - 1)]
    # A patch that cannot be made: ranked from scratch.
    write()
    assert rank(shape) == 'again'
    assert len(calls) == 2
    # Another shape is not patched from this one's ranking.
    other = ahead.Shape(fakes.spec(memory_mb=4096), True, 3, (), 60)
    write()
    assert rank(other) == 'anew'
    assert len(calls) == 2
    # Once h1's heartbeat left the window, the ranking held is not
    # patched.
    write()
    clock[0] = expires
    assert rank(other) == 'late'
    assert len(calls) == 2


def test_a_patch_that_fails_ranks_from_scratch(caplog):
    table = fakes.table([fakes.host_state('h1'), fakes.host_state('h2')])
    calls = []

    def patch(shape, table_, ranked, writes):
        calls.append(ranked)
        raise RuntimeError('broken patch')

    made = iter(['first', 'second', 'third'])
    held = ahead.Ahead(lambda: table, lambda shape, table_: next(made),
                       patch=patch)
    shape = ahead.Shape(fakes.spec(), True, 3, (), 60)
    for expected in ('first', 'second', 'third'):
        held.later(shape)
        assert held.idle()
        assert held.take(shape, table) == expected
        assert table.update_in_place({1: table.states[1].consumed(
            placement_types.Resources(1, 0, 0))})
    # Each ranking made from scratch was offered to the patch once.
    assert calls == ['first', 'second']
    assert caplog.text.count('Could not patch the ranking made ahead') == 2


def test_a_ranking_given_to_the_patch_is_held_no_more():
    """The patch may write what the ranking holds: once given to it, the
    ranking is not held, even when neither the patch nor a ranking from
    scratch gives another (a request overtook it)."""
    table = fakes.table([fakes.host_state('h1'), fakes.host_state('h2')])
    rankings = [{'weights': 'as made'}]

    def patch(shape, table_, ranked, writes):
        ranked['weights'] = 'half written'
        return None

    def rank_shape(shape, table_):
        if len(rankings) > 1:
            raise ahead.Superseded()
        rankings.append('made')
        return rankings[0]

    held = ahead.Ahead(lambda: table, rank_shape, patch=patch)
    shape = ahead.Shape(fakes.spec(), True, 3, (), 60)
    held.later(shape)
    assert held.idle()
    assert held.take(shape, table) == {'weights': 'as made'}
    assert table.update_in_place({1: table.states[1].consumed(
        placement_types.Resources(1, 0, 0))})
    assert not held.idle()
    assert rankings[0] == {'weights': 'half written'}
    assert not held.holds(table)
    assert held.take(shape, table) is None
    # Nor is it offered to the patch again.
    assert table.update_in_place({1: table.states[1].consumed(
        placement_types.Resources(1, 0, 0))})
    rankings[0]['weights'] = 'as made'
    assert not held.idle()
    assert rankings[0] == {'weights': 'as made'}


def test_liveness_changes_at_the_first_heartbeat_crossing_the_window():
    rng = np.random.default_rng(3)
    now = fakes.now()
    window = 60
    states = []
    for number in range(40):
        # Some seen in the future (a compute's clock ahead): they come
        # into the window later.
        states.append(fakes.host_state('h%d' % number, svc=fakes.service(
            'h%d' % number, seen_ago=float(rng.uniform(-90, 150)),
            when=now)))
    table = fakes.table(states)
    now_us = host_cache.to_microseconds(now)
    edge = table.liveness_changes_at(window, now_us)
    assert edge is not None and edge > now_us

    def up(at_us):
        when = host_cache.EPOCH + datetime.timedelta(microseconds=at_us)
        return table.service_up(window, now=when)
    before = up(now_us)
    for at_us in (now_us + 1, (now_us + edge) // 2, edge - 1):
        assert np.array_equal(up(at_us), before)
    assert not np.array_equal(up(edge), before)


def test_no_heartbeat_to_cross_means_no_end():
    now_us = host_cache.to_microseconds(fakes.now())
    never = fakes.table([
        fakes.host_state('h1', svc=fakes.service('h1', seen_ago=None)),
        fakes.host_state('h2', svc=None)])
    assert never.liveness_changes_at(60, now_us) is None
    # A heartbeat long gone has crossed already.
    gone = fakes.table([fakes.host_state('h1', svc=fakes.service(
        'h1', seen_ago=3600))])
    assert gone.liveness_changes_at(60, now_us) is None


class _Clock(filters.BaseHostFilter):
    """A third-party filter that does not say it is pure."""

    def host_passes(self, host_state, spec):
        return True


class _PureWeigher(weights.BaseHostWeigher):
    pure = True

    def _weigh_object(self, host_state, spec):
        return 0


@pytest.mark.parametrize('option, value', [
    ('rank_ahead', False), ('hosts_to_score_percent', 50)])
def test_off_by_option(cloud, make_driver, make_host_manager, config,
                       option, value):
    config.config(**{option: value, 'group': 'filter_scheduler'})
    _cloud(cloud, hosts=3)
    driver = _driver(make_driver, make_host_manager)
    _place(driver, cloud, [1024] * 3)
    assert driver.stats.get('ranked_ahead', 0) == 0
    assert driver.stats.get('ranked_ahead_used', 0) == 0


def test_an_impure_plugin_or_a_group_or_several_instances_rank_on_arrival(
        cloud, make_driver, make_host_manager):
    _cloud(cloud, hosts=3)
    driver = _driver(make_driver, make_host_manager)
    table = driver.host_manager.snapshot()

    def shape(spec, uuids=1):
        return filter_scheduler._Request(driver, spec, fakes.uuids(uuids),
                                         False, table).ahead_shape()
    assert shape(fakes.spec()) is not None
    assert shape(fakes.spec(num_instances=2), uuids=2) is None
    grouped = fakes.spec()
    grouped.instance_group = group_fakes.group('anti-affinity')
    assert shape(grouped) is None
    filters_, weighers_ = driver._plugins
    driver._plugins = (filters_ + [_Clock()], weighers_)
    assert shape(fakes.spec()) is None
    driver._plugins = (filters_, weighers_ + [_PureWeigher()])
    assert shape(fakes.spec()) is not None
    assert not ahead.pure(_Clock()) and ahead.pure(_PureWeigher())


def test_reload_forgets_the_ranking(cloud, make_driver, make_host_manager):
    _cloud(cloud, hosts=3)
    driver = _driver(make_driver, make_host_manager)
    _place(driver, cloud, [1024] * 2, wait=True)
    assert driver.reload_plugins() is True
    assert not driver.ahead.holds(driver.host_manager.current_table())
    before = driver.stats.get('ranked_ahead_used', 0)
    _place(driver, cloud, [1024])
    assert driver.stats.get('ranked_ahead_used', 0) == before


def test_not_while_other_requests_are_in_flight(cloud, make_driver,
                                                make_host_manager):
    _cloud(cloud, hosts=3)
    driver = _driver(make_driver, make_host_manager)
    _place(driver, cloud, [1024] * 2, wait=True)
    driver.ahead.forget()
    driver.ahead.later(filter_scheduler._Request(
        driver, fakes.spec(memory_mb=1024), fakes.uuids(1), True,
        driver.host_manager.current_table()).ahead_shape())
    with driver._counted(), driver._counted():
        assert driver.ahead.rank() is False
    assert driver.ahead.rank() is True


def test_a_failed_ranking_is_logged_and_the_request_ranks_itself(
        cloud, make_driver, make_host_manager, caplog, monkeypatch):
    _cloud(cloud, hosts=3)
    driver = _driver(make_driver, make_host_manager)

    def broken(shape, table):
        raise RuntimeError('weigher exploded')
    monkeypatch.setattr(driver.ahead, '_rank_shape', broken)
    with caplog.at_level(logging.ERROR):
        answers, _claimed = _place(driver, cloud, [1024] * 2)
        driver.idle()
        assert 'weigher exploded' in caplog.text
        answers += _place(driver, cloud, [1024])[0]
    assert len(answers) == 3
    assert 'Could not rank the last request ahead' in caplog.text
    assert driver.stats.get('ranked_ahead_used', 0) == 0


def test_same_values_ignores_only_the_instance():
    first = fakes.spec(memory_mb=1024)
    second = fakes.spec(memory_mb=1024)
    first.instance_uuid, second.instance_uuid = fakes.uuids(2)
    assert ahead.same_values(first, second, skip=('instance_uuid',))
    assert not ahead.same_values(first, second)
    second.flavor.extra_specs = {'hw:cpu_policy': 'dedicated'}
    assert not ahead.same_values(first, second, skip=('instance_uuid',))
    third = fakes.spec(memory_mb=1024)
    third.scheduler_hints = {'group': ['x']}
    fourth = fakes.spec(memory_mb=1024)
    fourth.scheduler_hints = {'group': ['y']}
    assert not ahead.same_values(third, fourth)
    fourth.scheduler_hints = {'group': ['x']}
    assert ahead.same_values(third, fourth)


class _GatedWeigher(weights.BaseHostWeigher):
    """Pure; waits for ``gate`` while weighing (once ``armed``)."""
    pure = True

    def __init__(self):
        self.armed = False
        self.entered = threading.Event()
        self.gate = threading.Event()

    def weigh_all(self, host_table, rows, spec):
        if self.armed:
            self.entered.set()
            self.gate.wait(10)
        return np.zeros(len(rows))

    def _weigh_object(self, host_state, spec):
        return 0


def test_a_request_arriving_stops_the_ranking_under_way(
        cloud, make_driver, make_host_manager):
    _cloud(cloud, hosts=3)
    driver = _driver(make_driver, make_host_manager)
    gated = _GatedWeigher()
    filters_, weighers_ = driver._plugins
    driver._plugins = (filters_, weighers_ + [gated])
    _place(driver, cloud, [1024] * 2, wait=True)
    driver.ahead.forget()
    driver.ahead.later(filter_scheduler._Request(
        driver, fakes.spec(memory_mb=1024), fakes.uuids(1), True,
        driver.host_manager.current_table()).ahead_shape())
    gated.armed = True
    outcome = []
    ranking = threading.Thread(
        target=lambda: outcome.append(driver.ahead.rank()))
    ranking.start()
    assert gated.entered.wait(10)
    with driver._counted():     # a request arrives meanwhile
        gated.gate.set()
        ranking.join(10)
    assert outcome == [False]
    assert not driver.ahead.holds(driver.host_manager.current_table())


def test_a_mix_of_shapes_ranks_nothing_ahead(cloud, make_driver,
                                             make_host_manager):
    # Each request's shape differs from the one before: a ranking made
    # for it would never be used.
    _cloud(cloud, hosts=3)
    driver = _driver(make_driver, make_host_manager)
    for memory in (1024, 2048, 1024, 3072, 2048):
        _place(driver, cloud, [memory])
        driver.idle()
    assert driver.stats.get('ranked_ahead', 0) == 0


def test_a_rebuilt_table_is_not_kept_for_the_ranking(
        cloud, make_driver, make_host_manager):
    _cloud(cloud, hosts=3)
    driver = _driver(make_driver, make_host_manager)
    _place(driver, cloud, [1024] * 2, wait=True)
    old = weakref.ref(driver.host_manager.current_table())
    # A new node: the host manager builds a new table.
    cloud.add_node('h99')
    driver.host_manager.refresh(full=True)
    assert driver.host_manager.current_table() is not old()
    gc.collect()
    assert old() is None
    assert not driver.ahead.holds(driver.host_manager.current_table())


def test_rank_ahead_again_after_a_restart_in_the_same_process(
        cloud, make_driver, make_host_manager):
    _cloud(cloud, hosts=3)
    driver = _driver(make_driver, make_host_manager)
    driver.stop()
    _place(driver, cloud, [1024] * 2)
    driver.idle()
    assert driver.stats.get('ranked_ahead', 0) == 0
    driver.start()
    _idle(driver)
    assert driver.stats['ranked_ahead'] == 1


def test_not_under_eventlet(cloud, make_driver, make_host_manager,
                            monkeypatch):
    _cloud(cloud, hosts=3)
    driver = _driver(make_driver, make_host_manager)
    table = driver.host_manager.snapshot()
    request = filter_scheduler._Request(driver, fakes.spec(), fakes.uuids(1),
                                        True, table)
    assert request.ahead_shape() is not None
    monkeypatch.setattr(ahead.service_backend, 'get_backend_type',
                        lambda: ahead.service_backend.BackendType.EVENTLET)
    assert request.ahead_shape() is None


def test_ranked_in_the_thread_that_calls_idle_and_not_before(
        cloud, make_driver, make_host_manager):
    # Not while a request waits for its claim: a ranking holding the
    # interpreter then delays the claim's return (see the module).
    _cloud(cloud, hosts=3)
    driver = _driver(make_driver, make_host_manager)
    rankings = []
    rank_shape = driver.ahead._rank_shape

    def recorded(shape, table):
        rankings.append((threading.current_thread(), driver._active))
        return rank_shape(shape, table)
    driver.ahead._rank_shape = recorded
    threads = set(threading.enumerate())
    _place(driver, cloud, [1024] * 3)
    assert rankings == []
    assert set(threading.enumerate()) <= threads
    idle = threading.Thread(target=driver.idle, name='replier')
    idle.start()
    idle.join(10)
    assert rankings == [(idle, 0)]
    assert driver.stats['ranked_ahead'] == 1
    before = driver.stats.get('ranked_ahead_used', 0)
    _place(driver, cloud, [1024])
    assert driver.stats['ranked_ahead_used'] == before + 1


def test_over_rpc_the_next_request_takes_the_ranking_made_after_a_reply(
        cloud, config):
    inprocess.use_fake_transport(config)
    # No background refresh: a refresh that rewrote the claimed rows
    # between the ranking and the third request would end the ranking.
    config.config(host_state_refresh_interval=3600, group='scheduler')
    _cloud(cloud, hosts=4)
    scheduler = manager.SchedulerManager()
    scheduler.init_host()
    driver = scheduler.driver
    during = []
    rank_shape = driver.ahead._rank_shape

    def recorded(shape, table):
        during.append(driver._active)
        return rank_shape(shape, table)
    driver.ahead._rank_shape = recorded
    server = rpc.get_server(
        messaging.Target(topic=rpcapi.RPC_TOPIC, server='h'), [scheduler],
        on_idle=scheduler.idle)
    server.start()
    try:
        api = rpcapi.SchedulerAPI()
        ctxt = gantt_context.get_admin_context()
        for count, uuid in enumerate(fakes.uuids(3)):
            if count == 2:
                # The second reply is sent; the server ranks once idle.
                deadline = time.monotonic() + 10
                while not driver.ahead.holds(
                        driver.host_manager.current_table()):
                    assert time.monotonic() < deadline, 'no ranking'
                    time.sleep(0.01)
            [selections] = api.select_destinations(
                ctxt, fakes.spec(memory_mb=1024), [uuid],
                return_alternates=True)
            assert selections[0].claimed
    finally:
        server.stop()
        server.wait()
        scheduler.cleanup_host()
    assert driver.stats['ranked_ahead_used'] == 1
    # Made while no request was in flight, each time.
    assert during and set(during) == {0}


class _CountedShape(ahead.Shape):
    """A shape whose comparisons are counted (``key`` decides them)."""

    __slots__ = ('key', 'compared')

    def __init__(self, key):
        super().__init__(None, True, 3, (), 60)
        self.key = key
        self.compared = 0

    def matches(self, other):
        self.compared += 1
        return self.key == other.key


def _ranked_ahead_for(shape, table, patch=None):
    """An Ahead on ``table`` that noted a request of ``shape`` and,
    idle, ranked it (a ranking is ``('ranked', its shape's key)``)."""
    keeper = ahead.Ahead(lambda: table,
                         lambda shape, table: ('ranked', shape.key),
                         patch=patch)
    keeper.note(shape)
    keeper.later(shape)
    assert keeper.idle() is True
    return keeper


def test_take_trusts_the_comparison_note_made_of_the_same_two_shapes():
    table = fakes.table([fakes.host_state('h1')])
    made = _CountedShape('small')
    keeper = _ranked_ahead_for(made, table)
    # The next request of the shape: note() compares it with the one
    # before (the shape the ranking was made for), take() does not again.
    same = _CountedShape('small')
    assert keeper.note(same)
    assert made.compared == 1
    assert keeper.take(same, table) == ('ranked', 'small')
    assert made.compared == 1
    # A request noted after another shape is compared when it takes.
    other = _CountedShape('large')
    assert not keeper.note(other)
    late = _CountedShape('small')
    assert not keeper.note(late)
    assert keeper.take(late, table) == ('ranked', 'small')
    assert made.compared == 2
    assert keeper.take(other, table) is None


def test_a_patch_trusts_the_comparison_note_made_of_the_same_two_shapes():
    """After a request of the shape the ranking was made for (compared
    once, by note()), the ranking is patched at the next idle() for the
    request's shape, without comparing the two shapes again; a shape
    noted after another one is compared."""
    table = fakes.table([fakes.host_state('h1')])
    patched = []

    def patch(shape, table, ranked, writes):
        patched.append(shape.key)
        return ('patched', shape.key)

    made = _CountedShape('small')
    keeper = _ranked_ahead_for(made, table, patch)
    same = _CountedShape('small')
    assert keeper.note(same)
    assert made.compared == 1
    keeper.later(same)
    # The request's claim wrote the table.
    table.writes += 1
    assert keeper.idle() is True
    assert patched == ['small']
    assert made.compared == 1
    # The next request of another shape, then one of the first again:
    # the last is compared with the shape of the ranking held.
    other = _CountedShape('large')
    assert not keeper.note(other)
    late = _CountedShape('small')
    assert not keeper.note(late)
    keeper.later(late)
    table.writes += 1
    assert same.compared == 1     # by note(other)
    assert keeper.idle() is True
    assert patched == ['small', 'small']
    assert same.compared == 2


def test_under_load_each_request_patches_the_ranking_left_before_it(
        cloud, make_driver, make_host_manager, config):
    # Other requests in flight all along: nothing is ranked ahead, but
    # each request of a run leaves its ranking to the next, which
    # patches it for the rows written since (the reservation before it).
    config.config(max_attempts=3, group='scheduler')
    _cloud(cloud)
    loaded = _driver(make_driver, make_host_manager)
    loaded._busy = lambda: True
    under_load, claimed = _place(loaded, cloud, MEMORIES)
    loaded.release(claimed)
    assert loaded.stats.get('ranked_ahead_used', 0) == 0
    # Every request of a run but its first two (the second is the first
    # to repeat a shape, and ranks) patched the ranking left before it.
    assert loaded.stats['rankings_reused'] == len(MEMORIES) - 8

    config.config(rank_ahead=False, group='filter_scheduler')
    plain = _driver(make_driver, make_host_manager)
    without, _claimed = _place(plain, cloud, MEMORIES)
    assert under_load == without
    assert len({hosts[0] for hosts in without}) < len(MEMORIES)


def test_a_ranking_reused_under_load_is_the_one_made_from_scratch(
        cloud, make_driver, make_host_manager):
    _cloud(cloud)
    driver = _driver(make_driver, make_host_manager)
    driver._busy = lambda: True
    _place(driver, cloud, [2048] * 4)
    assert driver.stats['rankings_reused'] == 2
    table = driver.host_manager.current_table()
    request = filter_scheduler._Request(
        driver, fakes.spec(memory_mb=2048), fakes.uuids(1), True, table)
    shape = request.ahead_shape()
    # Written since (the last request's reservation): patched, a copy.
    assert driver.ahead.take(shape, table) is None
    result, ranking = driver.ahead.reuse(shape, table)
    fresh_result, fresh_ranking = request.rank_first()
    assert np.array_equal(result.mask, fresh_result.mask)
    assert np.array_equal(ranking.head, fresh_ranking.head)
    assert np.array_equal(ranking.head_weights, fresh_ranking.head_weights)
    assert ranking.rest() == fresh_ranking.rest()
