"""With cells, the host cache reads the aggregates from the API
database, where they live: their zones and multipliers apply to the
hosts of every cell, aggregates left in a cell's own tables are not
read, and an API schema without the aggregate tables keeps the cached
aggregates with one WARNING saying to run ``gantt-manage api_db sync``.
"""

import logging
import time

from alembic import command
import pytest

from scheduler import cells
from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import mappings
from scheduler.db import migration
from tests.fixtures import databases
from tests.unit.scheduler import fakes
from tests.unit.scheduler.host_cache import test_host_manager_cells

CELL1 = test_host_manager_cells.CELL1
CELL2 = test_host_manager_cells.CELL2


@pytest.fixture
def two_cells(api_database, database):
    """test_host_manager_cells' cells, on SQLite only, a host in each."""
    with databases.cell_database('sqlite') as second:
        with db_api.api_writer() as session:
            for uuid, name, url in ((CELL1, 'cell1', database),
                                    (CELL2, 'cell2', second)):
                mappings.create_cell(session, uuid, name, None, url)
        cells.clear_cache()
        urls = {CELL1: database, CELL2: second}
        test_host_manager_cells.add_node(urls[CELL1], 'a1')
        test_host_manager_cells.add_node(urls[CELL2], 'b1')
        yield urls


def zones(table):
    return {state.host: state.availability_zone for state in table.states}


def _refresh_until_zone(manager, host, zone, timeout=10.0):
    """Refresh until ``host`` is in ``zone`` (the aggregates are read in
    the background) or ``timeout``; the zones of the last refresh."""
    deadline = time.monotonic() + timeout
    seen = zones(manager.refresh())
    while seen[host] != zone and time.monotonic() < deadline:
        time.sleep(0.02)
        seen = zones(manager.refresh())
    return seen


def test_zones_come_from_the_api_database_for_every_cell(
        two_cells, make_host_manager):
    fakes.Cloud().aggregate('rack', ['a1', 'b1'], availability_zone='az1',
                            ram_weight_multiplier='2.0')
    # An aggregate left in cell1's own tables from before cells.
    with db_api.target_cell(two_cells[CELL1]), db_api.writer() as session:
        stale = db_aggregates.create(session, 'old',
                                     metadata={'availability_zone': 'az9'})
        db_aggregates.add_host(session, stale.id, 'a1')

    table = make_host_manager(auto_refresh=False).snapshot()

    assert zones(table) == {'a1': 'az1', 'b1': 'az1'}
    assert [agg.name for agg in table.aggregates] == ['rack']
    assert list(table.aggregate_multipliers('ram_weight_multiplier')) == [
        2.0, 2.0]


def test_a_change_in_the_api_database_is_read_by_the_refreshes(
        two_cells, make_host_manager):
    # Read in the background: a refresh starts the read, a later one
    # takes what it found (an API database that hangs delays none).
    manager = make_host_manager(auto_refresh=False)
    assert zones(manager.snapshot()) == {'a1': 'nova', 'b1': 'nova'}

    fakes.Cloud().aggregate('rack', ['b1'], availability_zone='az2')

    assert _refresh_until_zone(manager, 'b1', 'az2') == {'a1': 'nova',
                                                        'b1': 'az2'}


def test_an_api_schema_without_the_tables_keeps_the_cached_aggregates(
        two_cells, make_host_manager, caplog):
    fakes.Cloud().aggregate('rack', ['a1'], availability_zone='az1')
    manager = make_host_manager(auto_refresh=False)
    assert zones(manager.snapshot())['a1'] == 'az1'
    # The API schema taken back to before the aggregates (as if the
    # code were upgraded and 'api_db sync' not run), while running.
    command.downgrade(migration.get_alembic_config('api'), 'c3e5a7b9d1f2')
    manager._aggregates_fingerprint = None

    def warnings_logged():
        return [record.getMessage() for record in caplog.records
                if record.levelno == logging.WARNING]

    with caplog.at_level(logging.INFO):
        table = manager.refresh()
        # The read runs in the background: refresh until it failed,
        # then twice more (the warning is not repeated).
        deadline = time.monotonic() + 10
        while not warnings_logged() and time.monotonic() < deadline:
            time.sleep(0.02)
            manager.refresh()
        for _ in range(2):
            manager._cells.aggregates.pending.done.wait(10)
            table = manager.refresh()

    assert zones(table) == {'a1': 'az1', 'b1': 'nova'}
    warnings = [record.getMessage() for record in caplog.records
                if record.levelno == logging.WARNING]
    assert warnings == [
        "Could not read the aggregates (the API database has no table "
        "aggregates: run 'gantt-manage api_db sync'); keeping the cached "
        "ones"]

    migration.db_sync(database='api')
    fakes.Cloud().aggregate('rack2', ['b1'], availability_zone='az2')
    with caplog.at_level(logging.INFO):
        seen = _refresh_until_zone(manager, 'b1', 'az2')
    assert seen == {'a1': 'nova', 'b1': 'az2'}
    assert 'The aggregates are read again' in caplog.text
