"""Cells' incremental reads on PostgreSQL from one thread: the same rows
as the read on a pooled connection, every cell at once, and a cell that
does not answer or whose session dies left out alone."""

import datetime
import socket
import time

import pytest
import sqlalchemy as sa

from scheduler.host_cache import cell_reads
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.host_cache import host_reads
from tests.fixtures import databases
from tests.unit.scheduler import fakes


@pytest.fixture
def two_databases():
    with databases.cell_database('postgresql') as one, \
            databases.cell_database('postgresql') as two:
        yield one, two


def _nodes(url, *hosts):
    with db_api.target_cell(url):
        cloud = fakes.Cloud()
        return {host: cloud.add_node(host, stats={'gpu': 1})
                for host in hosts}


def _window():
    now = models.utcnow()
    return (now - datetime.timedelta(seconds=30),
            now - datetime.timedelta(seconds=60))


def _pooled_read(url, since, reread, alive_since, dead, offset):
    with db_api.target_cell(url):
        with host_reads.statement_connection() as connection:
            return host_reads.read_cell_changes(
                connection, since, reread, alive_since, dead, offset)


def test_only_psycopg2_urls_are_read_together():
    assert cell_reads.eligible('postgresql+psycopg2://u@h/db')
    assert not cell_reads.eligible('postgresql+psycopg://u@h/db')
    assert not cell_reads.eligible('mysql+pymysql://u@h/db')
    assert not cell_reads.eligible('sqlite:///x.sqlite')
    assert not cell_reads.eligible('not a url')


def test_reads_together_what_each_pooled_read_reads(two_databases):
    one, two = two_databases
    first = _nodes(one, 'a1', 'a2')
    second = _nodes(two, 'b1')
    with db_api.target_cell(two):
        fakes.Cloud().set_last_seen('b1', 3600)
    since, alive_since = _window()
    later = models.utcnow() + datetime.timedelta(seconds=5)
    connections = [cell_reads.CellConnection(one),
                   cell_reads.CellConnection(two)]
    try:
        asks = {
            'one': (one, since, {first['a1']}, alive_since, set(), 1 << 40),
            'two': (two, since, set(), alive_since, {'b1'}, 2 << 40),
        }
        together = cell_reads.gather(
            {key: connection.read(*ask[1:]) for (key, ask), connection
             in zip(asks.items(), connections)},
            time.monotonic() + 10)
        # Again on the same connections (prepared already), and with
        # nothing written since.
        again = cell_reads.gather(
            {'one': connections[0].read(later, set(), alive_since, set(),
                                        1 << 40)},
            time.monotonic() + 10)
    finally:
        for connection in connections:
            connection.close()

    for key, ask in asks.items():
        expected = _pooled_read(*ask)
        assert [tuple(row) for row in together[key][0]] == \
            [tuple(row) for row in expected[0]]
        assert [tuple(row) for row in together[key][1]] == \
            [tuple(row) for row in expected[1]]
    assert [row.host for row in together['one'][0]] == ['a1', 'a2']
    assert together['one'][0][0].id == (1 << 40) + first['a1']
    assert together['one'][0][0].stats == {'gpu': 1}      # typed
    assert [row.id for row in together['two'][0]] == \
        [(2 << 40) + second['b1']]
    assert [row.host for row in together['two'][1]] == ['b1']
    assert isinstance(together['two'][1][0].last_seen_up, datetime.datetime)
    # Read only for a service that never sent a heartbeat.
    assert together['two'][1][0].created_at is None
    assert again == {'one': ([], [])}


def test_a_silent_database_is_missing_and_the_others_answer(two_databases):
    one, _two = two_databases
    _nodes(one, 'a1')
    silent = socket.socket()     # takes the connection, never answers
    silent.bind(('127.0.0.1', 0))
    silent.listen(8)
    since, alive_since = _window()
    connections = {
        'one': cell_reads.CellConnection(one),
        'silent': cell_reads.CellConnection(
            'postgresql+psycopg2://gantt@127.0.0.1:%d/x'
            % silent.getsockname()[1]),
        'refused': cell_reads.CellConnection(
            'postgresql+psycopg2://gantt@127.0.0.1:1/x'),
    }
    try:
        started = time.monotonic()
        outcomes = cell_reads.gather(
            {key: connection.read(since, set(), alive_since, set(), 0)
             for key, connection in connections.items()},
            started + 0.5)
        waited = time.monotonic() - started
    finally:
        for connection in connections.values():
            connection.close()
        silent.close()

    assert [row.host for row in outcomes['one'][0]] == ['a1']
    assert 'silent' not in outcomes         # no answer by the deadline
    assert isinstance(outcomes['refused'], Exception)
    assert 'refused' in db_api.describe_error(outcomes['refused'])
    assert 0.5 <= waited < 2


def test_a_dead_session_fails_its_read_and_drops_the_pool(two_databases):
    one, _two = two_databases
    _nodes(one, 'a1')
    since, alive_since = _window()
    connection = cell_reads.CellConnection(one)
    with db_api.target_cell(one):
        engine = db_api.get_engine()
        with engine.connect() as pooled:
            pooled.execute(sa.text('SELECT 1'))
    pool_before = engine.pool.checkedin()
    try:
        first = cell_reads.gather(
            {'one': connection.read(since, set(), alive_since, set(), 0)},
            time.monotonic() + 10)
        databases.end_sessions(one)
        dead = cell_reads.gather(
            {'one': connection.read(since, set(), alive_since, set(), 0)},
            time.monotonic() + 10)
        connection.close()
        back = cell_reads.gather(
            {'one': connection.read(since, set(), alive_since, set(), 0)},
            time.monotonic() + 10)
    finally:
        connection.close()

    assert [row.host for row in first['one'][0]] == ['a1']
    assert isinstance(dead['one'], Exception)
    # The pooled connections were as dead: dropped for the cell's next
    # whole read.
    assert pool_before == 1 and engine.pool.checkedin() == 0
    assert back == first


def test_a_cells_rows_are_made_a_batch_at_a_time(two_databases,
                                                 monkeypatch):
    """As the pooled read (see test_host_reads): the cell's rows made
    Python rows a few at a time, all of them, in order."""
    from tests.unit.scheduler.host_cache.test_host_reads import _Fetches

    one, _two = two_databases
    _nodes(one, 'a1', 'a2', 'a3')
    monkeypatch.setattr(db_api, 'FETCH_BATCH', 2)
    fetches = _Fetches()
    monkeypatch.setattr(cell_reads, '_cursor', lambda connection:
                        connection.cursor(cursor_factory=fetches.cursor))
    since, alive_since = _window()
    connection = cell_reads.CellConnection(one)
    try:
        got = cell_reads.gather(
            {'one': connection.read(since, set(), alive_since, set(), 0)},
            time.monotonic() + 10)
    finally:
        connection.close()
    expected = _pooled_read(one, since, set(), alive_since, set(), 0)
    assert [row.host for row in got['one'][0]] == ['a1', 'a2', 'a3']
    assert [tuple(row) for row in got['one'][0]] == \
        [tuple(row) for row in expected[0]]
    assert [tuple(row) for row in got['one'][1]] == \
        [tuple(row) for row in expected[1]]
    # Six rows: 2, 2, 2 and the empty fetch that tells the end.
    assert fetches.sizes == [('many', 2)] * 3 + [('many', 0)]
