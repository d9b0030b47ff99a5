"""scheduler.cells.get_cells() and host_cell(): read from the API
database, cached, and a clear error when it is down."""

import pytest
import sqlalchemy as sa

from scheduler import cells
from scheduler.cells import registry
from scheduler.db import api as db_api
from scheduler.db import mappings
from scheduler import exception

CELL1 = '11111111-1111-1111-1111-111111111111'
CELL2 = '22222222-2222-2222-2222-222222222222'
DOWN_API = 'postgresql+psycopg2://gantt:s3cret@127.0.0.1:1/gantt_api'


def add_cell(uuid, name, database_connection, disabled=False):
    with db_api.api_writer() as session:
        return mappings.create_cell(session, uuid, name, 'rabbit://h/' + name,
                                    database_connection, disabled=disabled)


def test_one_cell_is_local_without_a_query(database, config):
    # [database] itself may be down: get_cells() reads nothing.
    config.config(connection=DOWN_API.replace('gantt_api', 'gantt'),
                  group='database')
    assert cells.get_cells() == [cells.LOCAL]


def test_cells_come_from_the_api_database_as_mappings(api_database):
    add_cell(CELL2, 'cell2', 'sqlite:///two', disabled=True)
    add_cell(CELL1, 'cell1', None)
    add_cell(cells.CELL0_UUID, 'cell0', 'sqlite:///zero')

    found = cells.get_cells()

    assert found == [
        cells.CellMapping(uuid=cells.CELL0_UUID, name='cell0',
                          database_connection='sqlite:///zero',
                          transport_url='rabbit://h/cell0'),
        cells.CellMapping(uuid=CELL1, name='cell1',
                          transport_url='rabbit://h/cell1'),
        cells.CellMapping(uuid=CELL2, name='cell2',
                          database_connection='sqlite:///two',
                          transport_url='rabbit://h/cell2', disabled=True)]
    assert [cell.is_cell0 for cell in found] == [True, False, False]


def _count_reads(monkeypatch):
    reads = []
    original = mappings.list_cells

    def counting(session):
        reads.append(1)
        return original(session)
    monkeypatch.setattr(mappings, 'list_cells', counting)
    return reads


def test_cells_are_read_once_per_cache_period(api_database, monkeypatch):
    add_cell(CELL1, 'cell1', None)
    reads = _count_reads(monkeypatch)

    for _ in range(50):
        assert [cell.name for cell in cells.get_cells()] == ['cell1']
    assert len(reads) == 1

    # A change made by another process is seen once the period is over.
    add_cell(CELL2, 'cell2', None)
    assert [cell.name for cell in cells.get_cells()] == ['cell1']
    monkeypatch.setattr(registry, 'CACHE_SECONDS', 0.0)
    cells.clear_cache()
    assert [cell.name for cell in cells.get_cells()] == ['cell1', 'cell2']
    assert [cell.name for cell in cells.get_cells()] == ['cell1', 'cell2']
    assert len(reads) == 3


def test_a_down_api_database_is_a_clear_error(config, monkeypatch):
    config.config(connection=DOWN_API, group='api_database')
    db_api.dispose_engine()
    cells.clear_cache()
    try:
        with pytest.raises(exception.ApiDatabaseUnavailable) as raised:
            cells.get_cells()
        message = str(raised.value)
        assert message.startswith('Cannot use the API database at '
                                  'postgresql+psycopg2://gantt:***@'
                                  '127.0.0.1:1/gantt_api')
        assert 'cell mappings' in message
        assert 's3cret' not in message
        assert isinstance(raised.value, exception.DatabaseUnavailable)
        with pytest.raises(exception.ApiDatabaseUnavailable):
            cells.host_cell('compute1')
    finally:
        db_api.dispose_engine()
        cells.clear_cache()


def test_cached_cells_are_served_while_the_api_database_is_away(
        api_database, config):
    add_cell(CELL1, 'cell1', None)
    assert [cell.name for cell in cells.get_cells()] == ['cell1']

    config.config(connection=DOWN_API, group='api_database')
    db_api.dispose_engine()

    assert [cell.name for cell in cells.get_cells()] == ['cell1']
    cells.clear_cache()
    with pytest.raises(exception.ApiDatabaseUnavailable):
        cells.get_cells()


def test_host_cell_follows_the_host_mappings(api_database):
    cell_id = add_cell(CELL1, 'cell1', 'sqlite:///one')
    with db_api.api_writer() as session:
        mappings.create_host_mapping(session, 'compute1', cell_id)

    assert cells.host_cell('compute1') == cells.CellMapping(
        uuid=CELL1, name='cell1', database_connection='sqlite:///one',
        transport_url='rabbit://h/cell1')
    assert cells.host_cell('compute2') is None
    # Answers, "not mapped" too, are cached like the cells.
    with db_api.api_writer() as session:
        mappings.create_host_mapping(session, 'compute2', cell_id)
    assert cells.host_cell('compute2') is None
    cells.clear_cache()
    assert cells.host_cell('compute2').uuid == CELL1


def test_api_sessions_ignore_the_targeted_cell(api_database, database):
    add_cell(CELL1, 'cell1', None)
    with db_api.target_cell(database):
        with db_api.api_reader() as session:
            assert session.execute(sa.text(
                'SELECT count(*) FROM cell_mappings')).scalar() == 1


def test_without_api_database_api_sessions_use_database(database):
    # One cell: the API sessions are [database]'s.
    with db_api.api_reader() as session:
        assert session.execute(sa.text(
            'SELECT count(*) FROM compute_nodes')).scalar() == 0
    assert db_api.api_connection() == database


def test_get_cell_finds_cached_and_new_cells(api_database):
    add_cell(CELL1, 'cell1', 'sqlite:///one')
    assert cells.get_cell(CELL1).name == 'cell1'
    assert cells.get_cell(None) is cells.LOCAL

    # Mapped after the list was cached: still found, by one more read.
    add_cell(CELL2, 'cell2', 'sqlite:///two')
    assert cells.get_cell(CELL2).database_connection == 'sqlite:///two'

    with pytest.raises(exception.CellMappingNotFound):
        cells.get_cell('33333333-3333-3333-3333-333333333333')


def test_get_cell_is_local_without_api_database(database):
    assert cells.get_cell(CELL1) is cells.LOCAL


def test_target_sends_sessions_to_the_cell_database(database):
    cell = cells.CellMapping(uuid=CELL1, name='cell1',
                             database_connection='sqlite:///elsewhere')
    with cells.target(cell):
        assert db_api.targeted_connection() == 'sqlite:///elsewhere'
    with cells.target(cells.LOCAL):
        assert db_api.targeted_connection() == \
            db_api.CONF.database.connection
    assert db_api.targeted_connection() == db_api.CONF.database.connection


def test_reload_reads_now_and_the_last_list_outlives_its_period(
        api_database, config, monkeypatch):
    add_cell(CELL1, 'cell1', None)
    assert registry.cached_cells() is None
    assert [cell.name for cell in cells.get_cells()] == ['cell1']

    # Mapped elsewhere: get_cells() serves its cache, reload_cells()
    # reads it now and caches it for everyone.
    add_cell(CELL2, 'cell2', None)
    assert [cell.name for cell in cells.get_cells()] == ['cell1']
    monkeypatch.setattr(registry, 'CACHE_SECONDS', 0.0)
    assert [cell.name for cell in registry.reload_cells()] == [
        'cell1', 'cell2']
    assert [cell.name for cell in registry.cached_cells()] == [
        'cell1', 'cell2']

    # The API database goes away: reloading says so and keeps the list,
    # which cached_cells() serves however old it is.
    config.config(connection=DOWN_API, group='api_database')
    with pytest.raises(exception.ApiDatabaseUnavailable):
        registry.reload_cells()
    with pytest.raises(exception.ApiDatabaseUnavailable):
        cells.get_cells()
    assert [cell.name for cell in registry.cached_cells()] == [
        'cell1', 'cell2']
    cells.clear_cache()
    assert registry.cached_cells() is None


def test_a_reload_that_began_before_a_change_here_is_not_cached(
        api_database, monkeypatch):
    add_cell(CELL1, 'cell1', None)
    original = mappings.list_cells

    def read_then_a_change(session):
        rows = original(session)
        # gantt-manage cell_v2 in this process, while the read runs.
        add_cell(CELL2, 'cell2', None)
        cells.clear_cache()
        return rows
    monkeypatch.setattr(mappings, 'list_cells', read_then_a_change)

    assert [cell.name for cell in registry.reload_cells()] == ['cell1']

    monkeypatch.setattr(mappings, 'list_cells', original)
    assert registry.cached_cells() is None
    assert [cell.name for cell in cells.get_cells()] == ['cell1', 'cell2']
