"""A scheduler process's concurrent SQL claims stay within its pool.

Requests beyond ``[database] max_pool_size`` used to take overflow
connections, which the pool closes when they are given back: under load
a new server session (and the claim statement prepared again) for
several claims in a hundred. Claims now wait for a pooled connection
(:func:`scheduler.drivers.base.claim_slots`).
"""

import contextlib
import threading
import time

import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.drivers import base
from scheduler.drivers import filter_scheduler
from tests.unit.scheduler import fakes

REQUESTS = 12


class _PoolWatch:
    """Connections of the engine's pool: new ones, and the most checked
    out at once; every statement made slow so that claims overlap."""

    def __init__(self, engine):
        self.engine = engine
        self.lock = threading.Lock()
        self.connects = 0
        self.out = 0
        self.most_out = 0

    def connect(self, *args):
        with self.lock:
            self.connects += 1

    def checkout(self, *args):
        with self.lock:
            self.out += 1
            self.most_out = max(self.most_out, self.out)

    def checkin(self, *args):
        with self.lock:
            self.out -= 1

    @staticmethod
    def slow(*args):
        time.sleep(0.03)

    @contextlib.contextmanager
    def watching(self):
        events = [(self.engine.pool, 'connect', self.connect),
                  (self.engine.pool, 'checkout', self.checkout),
                  (self.engine.pool, 'checkin', self.checkin),
                  (self.engine, 'before_cursor_execute', self.slow)]
        for target, name, listener in events:
            sa.event.listen(target, name, listener)
        try:
            yield self
        finally:
            for target, name, listener in events:
                sa.event.remove(target, name, listener)


def test_claim_slots_follow_the_pool_size(config):
    config.config(max_pool_size=5, group='database')
    assert base.claim_slots() == 4
    config.config(max_pool_size=1, group='database')
    assert base.claim_slots() == 1
    # 0: a pool without a size limit, claims without a bound.
    config.config(max_pool_size=0, group='database')
    assert base.claim_slots() is None


def test_concurrent_claims_wait_for_a_pooled_connection(
        server_database, config, make_driver):
    config.config(max_pool_size=3, group='database')
    config.config(host_state_refresh_interval=3600, group='scheduler')
    # Each claim its own transaction: the slots alone bound them (a group
    # commit sends one batch at a time, on one slot).
    config.config(claim_group_commit=False, group='filter_scheduler')
    db_api.dispose_engine()
    cloud = fakes.Cloud()
    for number in range(4):
        cloud.add_node('host%d' % number, vcpus=64, memory_mb=65536)
    driver = make_driver(filter_scheduler.FilterScheduler)
    driver.start()
    uuids = fakes.uuids(REQUESTS)
    pool = _PoolWatch(db_api.get_engine())
    placed, errors = fakes.place_together(driver, uuids, pool.watching())
    assert not errors
    assert len(placed) == REQUESTS
    # Two claims at a time (3 pooled connections, one left to the
    # readers), so no connection beyond the pool's: without the bound,
    # the twelve slow claims ran at once on twelve connections.
    assert pool.most_out <= base.claim_slots() == 2
    assert pool.connects <= 3
    with db_api.reader() as session:
        claimed = session.execute(sa.text(
            'SELECT consumer_uuid FROM allocations')).scalars().all()
    assert sorted(claimed) == sorted(uuids)
    assert driver.stats['claims'] == REQUESTS
    engine = db_api.get_engine()
    # Each slot kept the connection of its claims (the one-trip claim);
    # the driver gives them back when it stops.
    assert engine.pool.checkedout() == base.claim_slots()
    driver.stop()
    assert engine.pool.checkedout() == 0


def _use(kept):
    with kept.use() as connection:
        connection.exec_driver_sql('SELECT 1')


def test_slots_keep_a_connection_each_and_give_them_back_when_closed(
        server_database):
    # Connections are kept for the one-trip claims of psycopg2 and PyMySQL.
    engine = db_api.get_engine()
    assert engine.dialect.driver in ('psycopg2', 'pymysql')
    slots = base.ClaimSlots(3)
    with slots.slot() as first:
        _use(first)
        with slots.slot() as second:
            _use(second)
    # The last slot given back is the next taken: no third connection.
    with slots.slot() as again:
        assert again is first
        _use(again)
    assert engine.pool.checkedout() == 2
    with slots.slot() as busy:
        _use(busy)
        slots.close()
        # The free slot's connection went back; the busy one's goes back
        # when its claim ends.
        assert engine.pool.checkedout() == 1
    assert engine.pool.checkedout() == 0
    # Closed slots still serve, on connections given back after each use.
    with slots.slot() as late:
        _use(late)
    assert engine.pool.checkedout() == 0
