"""``gantt-manage db archive_deleted_rows`` and ``db purge``: Nova's
arguments, exit codes and output, on one database and over cells."""

import datetime

import pytest
import sqlalchemy as sa

from scheduler import cells
from scheduler.cmd import manage_archive
from scheduler.db import api as db_api
from scheduler.db import mappings
from scheduler.db import models
from tests.fixtures import databases
from tests.unit.cmd import output
from tests.unit.db import test_archive as helpers

CELL1 = '11111111-1111-1111-1111-111111111111'
CELL2 = '22222222-2222-2222-2222-222222222222'
GONE = 'postgresql+psycopg2://gantt@127.0.0.1:1/gone'


def _deleted(count, migrations=0, deleted_at=None):
    uuids = [helpers.make_instance(migrations=migrations)
             for _ in range(count)]
    for instance_uuid in uuids:
        helpers.delete(instance_uuid, deleted_at=deleted_at)
    return uuids


# -- arguments and exit codes ------------------------------------------------

@pytest.mark.parametrize('max_rows, message', [
    ('-1', 'Must supply a positive value for max_rows'),
    (str(manage_archive.MAX_INT + 1), 'max rows must be <= 2147483647'),
])
def test_invalid_max_rows_exits_2(database, run, max_rows, message):
    result = run('db', 'archive_deleted_rows', '--max_rows', max_rows)
    assert (result.code, result.out.strip()) == (2, message)


def test_max_rows_that_is_not_a_number_is_bad_usage(database, run):
    result = run('db', 'archive_deleted_rows', '--max_rows', 'many')
    assert result.code == 2
    assert "invalid int value: 'many'" in result.err


def test_invalid_before(database, run):
    result = run('db', 'archive_deleted_rows', '--before', 'soon')
    assert result.code == 4
    assert result.out.startswith("Invalid value for --before: 'soon' is "
                                 "not a date")
    result = run('db', 'purge', '--before', 'soon')
    assert result.code == 2
    assert result.out.startswith('Invalid value for --before:')


def test_purge_needs_before_or_all(database, run):
    result = run('db', 'purge')
    assert (result.code, result.out) == (
        1, 'Either --before or --all is required\n')


def test_all_cells_without_a_readable_api_database(database, run, config):
    config.config(connection=GONE, group='api_database')
    cells.clear_cache()
    try:
        result = run('db', 'archive_deleted_rows', '--all-cells')
        assert result.code == 3
        assert result.out.startswith('Failed to connect to API DB')
        result = run('db', 'purge', '--all', '--all-cells')
        assert (result.code, result.out) == (
            4, 'Unable to get cell list from API DB. Is it configured?\n')
    finally:
        cells.clear_cache()


def test_a_database_not_synced_is_refused(config, run):
    with databases.empty_database('sqlite', config):
        result = run('db', 'archive_deleted_rows')
    assert result.code == 1
    assert "run 'gantt-manage db sync'" in result.err


# -- archive ------------------------------------------------------------------

def test_nothing_to_archive_exits_0(database, run):
    assert run('db', 'archive_deleted_rows') == (0, '', '')
    result = run('db', 'archive_deleted_rows', '--verbose')
    assert (result.code, result.out) == (0, 'Nothing was archived.\n')


def test_archive_exits_1_and_prints_rows_per_table(any_database, run):
    live = helpers.make_instance(migrations=1)
    _deleted(2, migrations=1)

    result = run('db', 'archive_deleted_rows', '--verbose')

    assert result.code == 1, result.err
    assert result.out.splitlines()[0].split() == [
        'Table', 'Number', 'of', 'Rows', 'Archived']
    assert output.table(result.out) == [['instances', '2'],
                                        ['migrations', '2']]
    assert helpers.rows(helpers._INSTANCE) == [live]
    assert run('db', 'archive_deleted_rows').code == 0


def test_max_rows_without_until_complete_is_one_batch(any_database, run):
    _deleted(3)
    result = run('db', 'archive_deleted_rows', '--max_rows', '2',
                 '--verbose')
    assert result.code == 1
    assert output.table(result.out) == [['instances', '2']]
    assert len(helpers.rows(helpers._INSTANCE)) == 1


def test_until_complete_archives_everything_in_batches(any_database, run):
    _deleted(5, migrations=1)

    result = run('db', 'archive_deleted_rows', '--max_rows', '4',
                 '--until-complete', '--verbose')

    assert result.code == 1, result.err
    # 'Archiving..', a dot after each of the three batches that moved
    # rows (2 instances with their migrations each, then 1; the empty
    # fourth ends it), '.complete'.
    assert result.out.splitlines()[0] == 'Archiving......complete'
    assert output.table(result.out) == [['instances', '5'],
                                        ['migrations', '5']]
    assert helpers.rows(helpers._INSTANCE) == []
    assert helpers.rows(helpers._MIGRATION) == []


def test_before_keeps_the_recently_deleted(any_database, run):
    now = models.utcnow()
    _deleted(2, deleted_at=now - datetime.timedelta(days=3))
    recent = _deleted(1, deleted_at=now)
    before = (now - datetime.timedelta(days=1)).strftime('%Y-%m-%d %H:%M')

    result = run('db', 'archive_deleted_rows', '--before', before,
                 '--verbose')

    assert result.code == 1
    assert output.table(result.out) == [['instances', '2']]
    assert helpers.rows(helpers._INSTANCE) == recent


def test_archive_then_purge(database, run):
    _deleted(1, migrations=1)

    result = run('db', 'archive_deleted_rows', '--purge', '--verbose')

    assert result.code == 1
    assert 'Rows were archived, running purge...' in result.out
    assert result.out.rstrip().splitlines()[-2:] == [
        'DB: Deleted 1 rows from shadow_instances based on timestamp '
        'column (n/a)',
        'DB: Deleted 1 rows from shadow_migrations based on timestamp '
        'column (n/a)']
    assert helpers.rows(helpers.SHADOW_INSTANCES) == []


# -- purge --------------------------------------------------------------------

def test_purge_before_and_all(any_database, run):
    now = models.utcnow()
    _deleted(2, deleted_at=now - datetime.timedelta(days=3))
    recent = _deleted(1, deleted_at=now)
    helpers.archive_until_done()
    before = (now - datetime.timedelta(days=1)).isoformat()

    result = run('db', 'purge', '--before', before, '--verbose')
    assert (result.code, result.out) == (
        0, 'DB: Deleted 2 rows from shadow_instances based on timestamp '
           'column deleted_at\n')
    assert helpers.rows(helpers.SHADOW_INSTANCES) == recent
    assert run('db', 'purge', '--before', before) == (3, '', '')

    assert run('db', 'purge', '--all') == (0, '', '')
    assert helpers.rows(helpers.SHADOW_INSTANCES) == []
    assert run('db', 'purge', '--all', '--verbose') == (3, '', '')


# -- cells --------------------------------------------------------------------

def _map_cell(uuid, name, url):
    with db_api.api_writer() as session:
        mappings.create_cell(session, uuid, name, None, url)
    cells.clear_cache()


def _in_cell(url, count):
    with db_api.target_cell(url):
        return _deleted(count, migrations=1)


def _shadow_count(url):
    with db_api.target_cell(url), db_api.reader() as session:
        return session.scalar(sa.select(sa.func.count()).select_from(
            helpers.SHADOW_INSTANCES))


def test_all_cells_covers_every_cell_and_cell0(api_database, database,
                                               run):
    with databases.cell_database('sqlite') as second, \
            databases.cell_database('sqlite') as cell0:
        _map_cell(cells.CELL0_UUID, 'cell0', cell0)
        _map_cell(CELL1, 'cell1', database)
        _map_cell(CELL2, 'cell2', second)
        _in_cell(cell0, 1)
        _in_cell(database, 2)
        _in_cell(second, 1)

        # Without --all-cells: [database] only.
        result = run('db', 'archive_deleted_rows', '--verbose')
        assert output.table(result.out) == [['instances', '2'],
                                            ['migrations', '2']]
        _in_cell(database, 1)
        result = run('db', 'archive_deleted_rows', '--all-cells',
                     '--until-complete', '--verbose')
        assert result.code == 1, result.err
        assert output.table(result.out) == [
            ['cell0.instances', '1'], ['cell0.migrations', '1'],
            ['cell1.instances', '1'], ['cell1.migrations', '1'],
            ['cell2.instances', '1'], ['cell2.migrations', '1']]
        assert [_shadow_count(url) for url in (cell0, database, second)] \
            == [1, 3, 1]

        result = run('db', 'purge', '--all', '--all-cells', '--verbose')
        assert result.code == 0, result.err
        assert ('Cell %s(cell2): Deleted 1 rows from shadow_instances '
                'based on timestamp column (n/a)' % CELL2) in result.out
        assert 'Cell %s(cell1): Deleted 3 rows' % CELL1 in result.out
        assert [_shadow_count(url) for url in (cell0, database, second)] \
            == [0, 0, 0]


def test_all_cells_max_rows_is_a_limit_over_all_cells(api_database,
                                                      database, run):
    with databases.cell_database('sqlite') as second:
        _map_cell(CELL1, 'cell1', database)
        _map_cell(CELL2, 'cell2', second)
        _in_cell(database, 1)
        _in_cell(second, 2)

        result = run('db', 'archive_deleted_rows', '--all-cells',
                     '--max_rows', '3', '--verbose')

        assert result.code == 1
        assert output.table(result.out) == [
            ['cell1.instances', '1'], ['cell1.migrations', '1'],
            ['cell2.instances', '1'], ['cell2.migrations', '1']]
