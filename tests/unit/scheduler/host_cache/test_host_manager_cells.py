"""The host cache over several cells: every cell read, a cell that does
not answer left out (and back when it answers), ids that collide across
cells kept apart, claims written in the node's own cell."""

import logging
import socket
import time

import pytest

from scheduler import cells
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes
from scheduler.db import mappings
from scheduler.drivers import filter_scheduler
from scheduler.host_cache import cell_gather
from scheduler.objects import request_spec
from tests.fixtures import databases
from tests.unit.scheduler import fakes

CELL1 = '11111111-1111-1111-1111-111111111111'
CELL2 = '22222222-2222-2222-2222-222222222222'
CELL3 = '33333333-3333-3333-3333-333333333333'
CLOSED_PORT_URL = 'postgresql+psycopg2://gantt@127.0.0.1:1/gone'


@pytest.fixture(params=databases.BACKENDS)
def two_cells(request, api_database, database):
    """Cell1 on [database] (SQLite), cell2 on a database of its own on
    each backend in turn, and cell0."""
    with databases.cell_database(request.param) as second:
        with db_api.api_writer() as session:
            mappings.create_cell(session, CELL1, 'cell1', None, database)
            mappings.create_cell(session, CELL2, 'cell2', None, second)
            mappings.create_cell(session, cells.CELL0_UUID, 'cell0',
                                 None, 'sqlite:///nowhere_cell0')
        cells.clear_cache()
        yield {CELL1: database, CELL2: second}


def add_node(url, host, **inventory):
    with db_api.target_cell(url):
        return fakes.Cloud().add_node(host, **inventory)


def add_cell(uuid, name, url):
    with db_api.api_writer() as session:
        mappings.create_cell(session, uuid, name, None, url)
    cells.clear_cache()


def move_cell(uuid, url):
    """The cell's database is at ``url`` now (it came back elsewhere)."""
    table = mappings.api_models.CellMapping.__table__
    with db_api.api_writer() as session:
        session.execute(table.update().where(table.c.uuid == uuid)
                        .values(database_connection=url))
    cells.clear_cache()


def hosts_by_cell(table):
    return sorted((state.cell_name, state.host) for state in table.states)


def test_every_cell_is_read_and_colliding_node_ids_are_two_hosts(
        two_cells, make_host_manager):
    first = add_node(two_cells[CELL1], 'a1', memory_mb=4096)
    second = add_node(two_cells[CELL2], 'b1', memory_mb=8192)
    assert first == second      # each database's own autoincrement

    table = make_host_manager(auto_refresh=False).snapshot()

    assert hosts_by_cell(table) == [('cell1', 'a1'), ('cell2', 'b1')]
    assert len(set(table.row_by_id)) == 2
    by_host = {state.host: state for state in table.states}
    assert by_host['a1'].cell_uuid == CELL1
    assert by_host['b1'].cell_uuid == CELL2
    assert by_host['b1'].total_usable_ram_mb == 8192
    assert cell_gather.node_id(by_host['b1'].id) == second


def test_incremental_refresh_reads_each_cell(two_cells, make_host_manager):
    add_node(two_cells[CELL1], 'a1')
    add_node(two_cells[CELL2], 'b1', memory_mb=4096)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    add_node(two_cells[CELL2], 'b2')
    with db_api.target_cell(two_cells[CELL2]):
        with db_api.writer() as session:
            row = compute_nodes.get_node_by_name(session, 'b1', 'b1')
            compute_nodes.report_inventory(
                session, row.uuid, 'b1', 'b1',
                dict(vcpus=16, memory_mb=2048, local_gb=1000))

    table = manager.refresh()

    by_host = {state.host: state for state in table.states}
    assert sorted(by_host) == ['a1', 'b1', 'b2']
    assert by_host['b1'].total_usable_ram_mb == 2048
    assert by_host['b2'].cell_name == 'cell2'


def test_a_cell_that_is_down_is_left_out_and_read_again_when_back(
        two_cells, make_host_manager, caplog):
    add_node(two_cells[CELL1], 'a1')
    add_node(two_cells[CELL2], 'b1')
    manager = make_host_manager(auto_refresh=False)
    assert len(manager.snapshot()) == 2
    move_cell(CELL2, CLOSED_PORT_URL)
    caplog.set_level(logging.INFO, 'scheduler.host_cache.cell_gather')

    table = manager.refresh()
    manager.refresh()

    assert hosts_by_cell(table) == [('cell1', 'a1')]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1               # once, not at every refresh
    assert 'cell2' in warnings[0].getMessage()
    assert [cell.uuid for cell in manager.down_cells()] == [CELL2]

    move_cell(CELL2, two_cells[CELL2])
    table = manager.refresh()

    assert hosts_by_cell(table) == [('cell1', 'a1'), ('cell2', 'b1')]
    assert any(r.levelno == logging.INFO and 'answers again' in
               r.getMessage() for r in caplog.records)
    assert manager.down_cells() == []


def test_scheduling_goes_on_without_a_cell_that_never_answered(
        two_cells, make_driver):
    add_node(two_cells[CELL1], 'a1', memory_mb=1024)
    add_node(two_cells[CELL2], 'b1', memory_mb=65536)
    add_cell(CELL3, 'cell3', CLOSED_PORT_URL)
    driver = make_driver(filter_scheduler.FilterScheduler)
    [uuid] = fakes.uuids(1)

    selections = driver.select_destinations(None, fakes.spec(), [uuid],
                                            False)

    assert selections[0][0].service_host == 'b1'
    assert selections[0][0].cell_uuid == CELL2


def test_a_cell_slower_than_the_timeout_is_skipped(
        two_cells, make_host_manager, monkeypatch, caplog):
    add_node(two_cells[CELL1], 'a1')
    # A server that takes the connection and never says a word.
    silent = socket.socket()
    silent.bind(('127.0.0.1', 0))
    silent.listen(8)
    try:
        add_cell(CELL3, 'cell3', 'postgresql+psycopg2://gantt@127.0.0.1:%d/x'
                 % silent.getsockname()[1])
        monkeypatch.setattr(cell_gather, 'CELL_TIMEOUT', 0.5)
        manager = make_host_manager(auto_refresh=False)

        table = manager.snapshot()

        assert hosts_by_cell(table) == [('cell1', 'a1')]
        assert 'no answer within 0.5 s' in caplog.text
    finally:
        silent.close()


def test_a_cell_that_stops_answering_between_refreshes_is_skipped(
        two_cells, make_host_manager, monkeypatch, caplog):
    """An incremental refresh (on PostgreSQL: every cell's read sent at
    once from the refreshing thread) waits CELL_TIMEOUT for a cell that
    took the connection and says nothing, leaves it out, and reads it
    whole when it answers again."""
    add_node(two_cells[CELL1], 'a1')
    add_node(two_cells[CELL2], 'b1')
    monkeypatch.setattr(cell_gather, 'CELL_TIMEOUT', 0.5)
    manager = make_host_manager(auto_refresh=False)
    assert len(manager.snapshot()) == 2
    silent = socket.socket()
    silent.bind(('127.0.0.1', 0))
    silent.listen(8)
    try:
        move_cell(CELL2, 'postgresql+psycopg2://gantt@127.0.0.1:%d/x'
                  % silent.getsockname()[1])
        manager.refresh()       # reads the cell list again meanwhile
        started = time.monotonic()
        table = manager.refresh()
        waited = time.monotonic() - started
    finally:
        silent.close()

    assert hosts_by_cell(table) == [('cell1', 'a1')]
    assert 'no answer within 0.5 s' in caplog.text
    assert waited < 2
    move_cell(CELL2, two_cells[CELL2])
    deadline = time.monotonic() + 5
    while hosts_by_cell(table) != [('cell1', 'a1'), ('cell2', 'b1')] \
            and time.monotonic() < deadline:
        table = manager.refresh()
    assert hosts_by_cell(table) == [('cell1', 'a1'), ('cell2', 'b1')]


def test_a_claim_is_written_in_the_nodes_own_cell(two_cells, make_driver):
    add_node(two_cells[CELL1], 'a1', memory_mb=1024)
    node = add_node(two_cells[CELL2], 'b1', memory_mb=65536)
    driver = make_driver(filter_scheduler.FilterScheduler)
    [uuid] = fakes.uuids(1)

    driver.select_destinations(None, fakes.spec(memory_mb=512), [uuid],
                               False)

    def allocations(url):
        with db_api.target_cell(url):
            with db_api.reader() as session:
                return claims.get_allocations(session, uuid)
    assert allocations(two_cells[CELL2]) == [
        (node, claims.Resources(1, 512, 0))]
    assert allocations(two_cells[CELL1]) == []

    # And released there: a request that cannot be placed whole.
    driver.release([(uuid, driver.host_manager.snapshot().states[
        driver.host_manager.snapshot().rows_by_host['b1'][0]].id)])
    assert allocations(two_cells[CELL2]) == []


def _move_spec(cell_uuid, allow_cross_cell_move):
    return fakes.spec(requested_destination=request_spec.Destination(
        cell=request_spec.CellMapping(uuid=cell_uuid),
        allow_cross_cell_move=allow_cross_cell_move))


def test_a_move_stays_in_its_cell_unless_allowed_to_leave(
        two_cells, make_driver):
    add_node(two_cells[CELL1], 'a1', memory_mb=1024)
    add_node(two_cells[CELL2], 'b1', memory_mb=65536)
    driver = make_driver(filter_scheduler.FilterScheduler)

    [kept] = driver.select_destinations(
        None, _move_spec(CELL1, False), fakes.uuids(1), True)
    [preferred] = driver.select_destinations(
        None, _move_spec(CELL1, True), fakes.uuids(1), True)

    # Kept in cell1: the bigger host of cell2 is not even an alternate.
    assert [s.service_host for s in kept] == ['a1']
    # Allowed to leave: cell1 still wins over more free RAM (and the
    # alternates are in the chosen host's cell, as Nova's: none here).
    assert [s.service_host for s in preferred] == ['a1']


def _cell_threads():
    import threading
    return {thread for thread in threading.enumerate()
            if thread.name.startswith('gantt-cell-')}


def test_each_cell_keeps_one_reading_thread_until_stopped(
        two_cells, make_host_manager):
    add_node(two_cells[CELL1], 'a1')
    add_node(two_cells[CELL2], 'b1')
    before = _cell_threads()
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    readers = _cell_threads() - before
    assert len(readers) == 2                # one per cell, not cell0

    add_node(two_cells[CELL2], 'b2')
    table = manager.refresh()
    manager.refresh(full=True)

    assert 'b2' in {state.host for state in table.states}
    assert _cell_threads() - before == readers      # the same threads
    manager.stop()
    for thread in readers:
        thread.join(5)
        assert not thread.is_alive()


def test_a_reading_thread_that_died_is_started_again(
        two_cells, make_host_manager):
    add_node(two_cells[CELL1], 'a1')
    add_node(two_cells[CELL2], 'b1')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    state = manager._cells._cells[CELL2]
    dead = state.thread
    state.jobs.put(None)        # as if it had died (a fork, a kill)
    dead.join(5)
    add_node(two_cells[CELL2], 'b2')

    # A full read goes to the cell's thread (on PostgreSQL an
    # incremental one does not).
    table = manager.refresh(full=True)

    assert hosts_by_cell(table) == [('cell1', 'a1'), ('cell2', 'b1'),
                                    ('cell2', 'b2')]
    assert state.thread is not dead and state.thread.is_alive()
    assert manager.down_cells() == []


def cell_metrics(*names):
    """``{cell: (hosts, up)}`` of this process's host cache gauges."""
    import prometheus_client

    def sample(metric, name):
        return prometheus_client.REGISTRY.get_sample_value(
            metric, {'cell': name})
    return {name: (sample('gantt_host_cache_hosts', name),
                   sample('gantt_host_cache_cell_up', name))
            for name in names}


def test_the_host_cache_metrics_count_each_cell_and_a_cell_going_down(
        two_cells, make_host_manager):
    add_node(two_cells[CELL1], 'a1')
    add_node(two_cells[CELL2], 'b1')
    add_node(two_cells[CELL2], 'b2')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    assert cell_metrics('cell1', 'cell2') == {'cell1': (1, 1),
                                              'cell2': (2, 1)}

    move_cell(CELL2, CLOSED_PORT_URL)
    manager.refresh()
    # Its hosts left the cache: 0 of them, and the cell is down.
    assert cell_metrics('cell1', 'cell2') == {'cell1': (1, 1),
                                              'cell2': (0, 0)}

    move_cell(CELL2, two_cells[CELL2])
    manager.refresh()
    assert cell_metrics('cell1', 'cell2') == {'cell1': (1, 1),
                                              'cell2': (2, 1)}


def test_a_cell_no_longer_listed_reads_zero_hosts_and_down(
        two_cells, make_host_manager):
    add_node(two_cells[CELL1], 'a1')
    add_node(two_cells[CELL2], 'b1')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    table = mappings.api_models.CellMapping.__table__
    with db_api.api_writer() as session:
        session.execute(table.update().where(table.c.uuid == CELL2)
                        .values(disabled=True))
    cells.clear_cache()

    table = manager.refresh()

    assert hosts_by_cell(table) == [('cell1', 'a1')]
    assert cell_metrics('cell1', 'cell2') == {'cell1': (1, 1),
                                              'cell2': (0, 0)}
