"""What an incremental refresh over cells costs and survives: one
statement per cell, the cell list read again in the background (so that
a change made elsewhere is seen soon and a down API database stops
nothing), and a cell whose database connections die in the middle."""

import collections
import contextlib
import datetime
import logging
import socket
import time

import pytest
import sqlalchemy as sa

from scheduler import cells
from scheduler.cells import registry
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes
from scheduler.db import mappings
from scheduler.db import models
from scheduler.host_cache import cell_gather
from scheduler.host_cache import cell_reads
from scheduler.host_cache import refresh_changes
from tests.fixtures import databases
from tests.unit.scheduler import fakes

CELL1 = '11111111-1111-1111-1111-111111111111'
CELL2 = '22222222-2222-2222-2222-222222222222'
DOWN_API = 'postgresql+psycopg2://gantt@127.0.0.1:1/gantt_api'


@contextlib.contextmanager
def cells_of_their_own(backend):
    """Two cells, each on a database of its own (not ``[database]``,
    which holds the aggregates), and cell0."""
    with databases.cell_database(backend) as one, \
            databases.cell_database(backend) as two:
        with db_api.api_writer() as session:
            mappings.create_cell(session, CELL1, 'cell1', None, one)
            mappings.create_cell(session, CELL2, 'cell2', None, two)
            mappings.create_cell(session, cells.CELL0_UUID, 'cell0',
                                 None, 'sqlite:///nowhere_cell0')
        cells.clear_cache()
        yield {CELL1: one, CELL2: two}


@pytest.fixture(params=databases.BACKENDS)
def own_cells(request, api_database, database):
    with cells_of_their_own(request.param) as urls:
        yield urls


@pytest.fixture
def sqlite_cells(api_database, database):
    with cells_of_their_own('sqlite') as urls:
        yield urls


def in_cell(url, call, *args, **kwargs):
    with db_api.target_cell(url):
        return call(*args, **kwargs)


def report(url, host, **inventory):
    """A new inventory report of the host's node (as its compute)."""
    with db_api.target_cell(url):
        with db_api.writer() as session:
            row = compute_nodes.get_node_by_name(session, host, host)
            compute_nodes.report_inventory(
                session, row.uuid, host, host,
                dict(dict(vcpus=16, memory_mb=32768, local_gb=1000),
                     **inventory))


class _CountingCursor:
    """A psycopg2 cursor of a cell's multiplexed connection that counts
    the statements sent on it."""

    def __init__(self, cursor, count):
        self._cursor = cursor
        self._count = count

    def execute(self, statement, *args):
        self._count(None, None, statement)
        return self._cursor.execute(statement, *args)

    def fetchmany(self, size):
        return self._cursor.fetchmany(size)

    def close(self):
        return self._cursor.close()


@contextlib.contextmanager
def statements_per_cell(urls):
    """``{cell uuid: statements}`` run on each cell's database inside the
    block (a transaction's own BEGIN aside, and the PREPARE that comes
    once per pooled connection and statement on PostgreSQL, not once per
    refresh), as the driver sees them: through SQLAlchemy's engines, and
    on the cells' multiplexed connections on PostgreSQL."""
    counts = collections.Counter()
    # {cell uuid: (engine, its listener)}
    listeners = {}
    by_database = {}
    for uuid, url in urls.items():
        with db_api.target_cell(url):
            engine = db_api.get_engine()
        by_database[engine.url.database] = uuid

        def count(conn, cursor, statement, *args, uuid=uuid):
            if statement.split(None, 1)[0].upper() not in ('BEGIN',
                                                           'PREPARE'):
                counts[uuid] += 1
        sa.event.listen(engine, 'before_cursor_execute', count)
        listeners[uuid] = (engine, count)
    cursor_of = cell_reads._cursor

    def counting_cursor(connection):
        uuid = by_database[connection.info.dbname]
        return _CountingCursor(cursor_of(connection), listeners[uuid][1])
    cell_reads._cursor = counting_cursor
    try:
        yield counts
    finally:
        cell_reads._cursor = cursor_of
        for engine, count in listeners.values():
            sa.event.remove(engine, 'before_cursor_execute', count)


def by_host(table):
    return {state.host: state for state in table.states}


def test_an_incremental_refresh_is_one_statement_per_cell(
        own_cells, make_host_manager):
    cloud = fakes.Cloud()
    in_cell(own_cells[CELL1], cloud.add_node, 'a1')
    in_cell(own_cells[CELL2], cloud.add_node, 'b1')
    in_cell(own_cells[CELL2], cloud.add_node, 'b2')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    manager.refresh()
    # A node written since, a node claimed on (read again whatever its
    # updated_at), a service that died.
    report(own_cells[CELL2], 'b1', memory_mb=2048)
    node = by_host(manager.snapshot())['a1'].id
    manager.consume(node, claims.Resources(1, 0, 0))
    in_cell(own_cells[CELL2], cloud.set_last_seen, 'b2', 3600)

    with statements_per_cell(own_cells) as counts:
        table = manager.refresh()

    # Each cell read nodes the cache takes: a second statement reads
    # their inventories and traits (none when it takes no node, below).
    assert counts == {CELL1: 2, CELL2: 2}
    assert by_host(table)['b1'].total_usable_ram_mb == 2048
    assert by_host(table)['a1'].vcpus_used == 0     # read again
    assert not by_host(table)['b2'].service_up()

    # Still dead: read again, in the same one statement; then it
    # heartbeats (which writes no updated_at): the statement reads it.
    with statements_per_cell(own_cells) as counts:
        table = manager.refresh()
    assert counts == {CELL1: 1, CELL2: 1}
    assert not by_host(table)['b2'].service_up()
    in_cell(own_cells[CELL2], cloud.heartbeat, 'b2')
    with statements_per_cell(own_cells) as counts:
        table = manager.refresh()
    assert counts == {CELL1: 1, CELL2: 1}
    assert by_host(table)['b2'].service_up()
    assert [state.service_up() for state in table.states] == [True] * 3


def _reload_done(manager):
    """Wait for the background read of the cell list a refresh began."""
    pending = manager._cells._api.pending
    assert pending is not None
    assert pending.done.wait(10)


def refresh_until(manager, hosts, within=1.5):
    """Refresh (as the background thread would, a little faster) until
    the table holds exactly ``hosts``; the table, or the last one after
    ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        table = manager.refresh()
        if sorted(by_host(table)) == hosts or time.monotonic() > deadline:
            return table
        time.sleep(0.05)


def test_a_cell_mapped_elsewhere_is_read_within_two_refreshes(
        sqlite_cells, make_host_manager):
    in_cell(sqlite_cells[CELL1], fakes.Cloud().add_node, 'a1')
    manager = make_host_manager(auto_refresh=False)
    assert sorted(by_host(manager.snapshot())) == ['a1']
    with databases.cell_database('sqlite') as third:
        in_cell(third, fakes.Cloud().add_node, 'c1')
        # Mapped by another process: this one's cache is not cleared.
        with db_api.api_writer() as session:
            mappings.create_cell(
                session, '33333333-3333-3333-3333-333333333333', 'cell3',
                None, third)

        table = refresh_until(manager, ['a1', 'c1'])

        assert sorted(by_host(table)) == ['a1', 'c1']
        assert by_host(table)['c1'].cell_name == 'cell3'
        manager.stop()


def test_a_down_api_database_does_not_stop_the_refreshes(
        sqlite_cells, make_host_manager, config, monkeypatch, caplog):
    # Every read of the list goes to the API database (no cached list
    # would be served to anyone else).
    monkeypatch.setattr(registry, 'CACHE_SECONDS', 0.0)
    cloud = fakes.Cloud()
    in_cell(sqlite_cells[CELL1], cloud.add_node, 'a1')
    in_cell(sqlite_cells[CELL2], cloud.add_node, 'b1')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    api_url = db_api.api_connection()
    config.config(connection=DOWN_API, group='api_database')
    caplog.set_level(logging.INFO, 'scheduler.host_cache.cell_gather')
    in_cell(sqlite_cells[CELL2], cloud.add_node, 'b2')

    table = refresh_until(manager, ['a1', 'b1', 'b2'])
    _reload_done(manager)
    table = manager.refresh()

    # The cells it knew are read: b2 is scheduled on.
    assert sorted(by_host(table)) == ['a1', 'b1', 'b2']
    assert manager.down_cells() == []
    # One warning for the cell list, one for the aggregates (which live
    # in the API database with cells), each once whatever the refreshes.
    warnings = sorted(r.getMessage() for r in caplog.records
                      if r.levelno == logging.WARNING)
    assert len(warnings) == 2
    assert 'Could not read the aggregates' in warnings[0]
    assert 'Could not read the cell list' in warnings[1]
    assert '2 cell(s)' in warnings[1]

    config.config(connection=api_url, group='api_database')
    _reload_done(manager)
    manager.refresh()
    _reload_done(manager)
    manager.refresh()
    assert any(r.levelno == logging.INFO and 'API database answers again'
               in r.getMessage() for r in caplog.records)


def test_an_api_database_that_does_not_answer_delays_no_refresh(
        sqlite_cells, make_host_manager, config, monkeypatch, caplog):
    # Long enough for the SQLite cell's read on a loaded machine (two
    # test workers beside daemons and database servers), short enough
    # for the test.
    monkeypatch.setattr(cell_gather, 'CELL_TIMEOUT', 0.6)
    cloud = fakes.Cloud()
    in_cell(sqlite_cells[CELL1], cloud.add_node, 'a1')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    # A server that takes the connection and never says a word.
    silent = socket.socket()
    silent.bind(('127.0.0.1', 0))
    silent.listen(8)
    try:
        config.config(connection='postgresql+psycopg2://gantt@127.0.0.1:%d/x'
                      % silent.getsockname()[1], group='api_database')
        caplog.set_level(logging.WARNING, 'scheduler.host_cache.cell_gather')
        in_cell(sqlite_cells[CELL1], cloud.add_node, 'a2')
        started = time.monotonic()
        table = manager.refresh()
        time.sleep(0.7)
        manager.refresh()
        manager.refresh()

        assert time.monotonic() - started < 3.0
        assert sorted(by_host(table)) == ['a1', 'a2']
        assert [r.getMessage() for r in caplog.records] == [
            'Could not read the cell list (no answer within 0.6 s); the '
            'host cache keeps reading the 2 cell(s) it knows']
    finally:
        silent.close()
        manager.stop()


def test_the_cell_list_reader_is_one_thread_reused_and_stopped(
        sqlite_cells, make_host_manager):
    in_cell(sqlite_cells[CELL1], fakes.Cloud().add_node, 'a1')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    manager.refresh()
    reader = manager._cells._api.thread
    for _ in range(3):
        _reload_done(manager)
        manager.refresh()

    assert manager._cells._api.thread is reader and reader.is_alive()
    manager.stop()
    reader.join(5)
    assert not reader.is_alive()


def _kill_sessions(backend, url):
    """End, from the server's side, every session open on the database
    at ``url`` (as a database restart would)."""
    name = sa.engine.make_url(url).database
    if backend == 'postgresql':
        query = ('SELECT pid FROM pg_stat_activity WHERE datname = %s '
                 'AND pid <> pg_backend_pid()')
    else:
        query = ('SELECT id FROM information_schema.processlist '
                 'WHERE db = %s AND id <> CONNECTION_ID()')
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            pids = [pid for (pid,) in
                    connection.exec_driver_sql(query, (name,))]
    finally:
        engine.dispose()
    assert pids
    for pid in pids:
        databases.kill_session(backend, pid)


@pytest.mark.parametrize('backend', ['postgresql', 'mariadb'])
def test_a_cell_whose_connections_die_is_whole_again_at_the_next_refresh(
        backend, api_database, database, make_host_manager, monkeypatch):
    # Connections in steady use are not pinged at checkout: the read
    # itself meets the dead one.
    monkeypatch.setattr(db_api, 'PING_AFTER_IDLE_SECONDS', 3600.0)
    with cells_of_their_own(backend) as urls:
        cloud = fakes.Cloud()
        in_cell(urls[CELL1], cloud.add_node, 'a1')
        in_cell(urls[CELL2], cloud.add_node, 'b1')
        manager = make_host_manager(auto_refresh=False)
        manager.snapshot()
        manager.refresh()
        report(urls[CELL2], 'b1', memory_mb=2048)
        _kill_sessions(backend, urls[CELL2])

        first = manager.refresh()
        down = manager.down_cells()
        second = manager.refresh()

        # The read meets the dead connection: the cell is left out of
        # that refresh (its hosts cannot be claimed on meanwhile), the
        # other cell is scheduled on; the next refresh connects again
        # and reads the cell whole.
        assert sorted(by_host(first)) == ['a1']
        assert [cell.uuid for cell in down] == [CELL2]
        assert sorted(by_host(second)) == ['a1', 'b1']
        assert by_host(second)['b1'].total_usable_ram_mb == 2048
        assert manager.down_cells() == []
        manager.stop()


def test_each_cell_reads_again_what_was_written_within_the_slack(
        sqlite_cells, make_host_manager, monkeypatch):
    """A row committed late (its updated_at older than the watermark by
    less than WRITE_SLACK) is still read by each cell's statement."""
    cloud = fakes.Cloud()
    in_cell(sqlite_cells[CELL2], cloud.add_node, 'b1')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    nodes = models.ComputeNode.__table__
    late = manager._cells._cells[CELL2].watermark - \
        datetime.timedelta(seconds=1)
    with db_api.target_cell(sqlite_cells[CELL2]):
        with db_api.writer() as session:
            session.execute(sa.update(nodes).values(
                vcpus=3, updated_at=late, generation=nodes.c.generation + 1))

    assert by_host(manager.refresh())['b1'].vcpus_total == 3
    monkeypatch.setattr(refresh_changes, 'WRITE_SLACK', 0.0)
    with db_api.target_cell(sqlite_cells[CELL2]):
        with db_api.writer() as session:
            session.execute(sa.update(nodes).values(
                vcpus=5, updated_at=late, generation=nodes.c.generation + 1))
    assert by_host(manager.refresh())['b1'].vcpus_total == 3
