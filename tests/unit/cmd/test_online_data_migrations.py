"""``gantt-manage db online_data_migrations``: a one-cell deployment's
aggregates and server groups move from ``[database]`` to the API
database, in batches, with Nova's output and exit codes; and the
``gantt-status`` check that says where they are."""

import json

import pytest
import sqlalchemy as sa

from scheduler.cmd import status
from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import instance_groups
from scheduler.db import mappings
from scheduler.db import models
from tests.unit.cmd import output

CELL1 = '11111111-1111-1111-1111-111111111111'
MEMBERS = ['5c3d2e1f-0a9b-4c8d-8e7f-00000000000%d' % index
           for index in range(3)]


@pytest.fixture
def before_cells(database):
    """[database] as a one-cell deployment left it: two aggregates (one
    a zone with two hosts) and an anti-affinity group with members; the
    uuids of the three."""
    with db_api.writer() as session:
        zone = db_aggregates.create(session, 'rack1', metadata={
            'availability_zone': 'az1', 'ssd': 'true'})
        db_aggregates.add_hosts(session, zone.id, ['h1', 'h2'])
        plain = db_aggregates.create(session, 'gpu')
        group = instance_groups.create(
            session, 'web', 'anti-affinity',
            rules={'max_server_per_host': 2}, project_id='p1')
        instance_groups.add_members(session, group.id, MEMBERS)
    return zone.uuid, plain.uuid, group.uuid


@pytest.fixture
def cells_now(before_cells, api_database, database):
    """The same deployment with [api_database] set and cell1 mapped."""
    with db_api.api_writer() as session:
        mappings.create_cell(session, CELL1, 'cell1', None, database)
    return before_cells


def cell_rows(model):
    with db_api.reader() as session:
        return session.scalar(sa.select(sa.func.count()).select_from(model))


def in_api():
    with db_api.api_reader() as session:
        return (db_aggregates.get_all(session),
                instance_groups.list_groups(session))


def test_everything_moves_once_with_its_uuids(cells_now, run):
    zone, plain, group = cells_now

    result = run('db', 'online_data_migrations')

    assert result.code == 0, result.err
    assert result.out.startswith('Running batches of 50 until complete\n')
    assert output.table(result.out) == [
        ['migrate_aggregates', '2', '2'],
        ['migrate_instance_groups_to_api_db', '1', '1']]
    aggregates, groups = in_api()
    assert [(agg.uuid, agg.name, sorted(agg.hosts), agg.metadata)
            for agg in aggregates] == [
        (zone, 'rack1', ['h1', 'h2'],
         {'availability_zone': 'az1', 'ssd': 'true'}),
        (plain, 'gpu', [], {})]
    [moved] = groups
    assert (moved.uuid, moved.name, moved.policy, moved.rules,
            moved.project_id, list(moved.members)) == (
        group, 'web', 'anti-affinity', {'max_server_per_host': 2}, 'p1',
        MEMBERS)
    for model in (models.Aggregate, models.AggregateHost,
                  models.AggregateMetadata, models.InstanceGroup,
                  models.InstanceGroupMember):
        assert cell_rows(model) == 0

    again = run('db', 'online_data_migrations')
    assert again.code == 0
    assert output.table(again.out) == [
        ['migrate_aggregates', '0', '0'],
        ['migrate_instance_groups_to_api_db', '0', '0']]


def test_max_count_moves_that_many_and_says_there_is_more(cells_now, run):
    codes = []
    for _ in range(4):
        result = run('db', 'online_data_migrations', '--max-count', '1')
        codes.append(result.code)
    assert codes == [1, 1, 1, 0]
    aggregates, groups = in_api()
    assert (len(aggregates), len(groups)) == (2, 1)


@pytest.mark.parametrize('value', ['0', '-3', 'many'])
def test_a_max_count_that_is_not_positive_is_127(cells_now, run, value):
    result = run('db', 'online_data_migrations', '--max-count', value)
    assert result.code == 127
    assert result.out == 'Must supply a positive value for max_count\n'
    assert in_api() == ([], [])


def test_a_move_cut_short_is_finished_by_the_next_run(cells_now, run):
    """The state a run leaves when it dies between the API database's
    commit and the cell's delete: the row is in both."""
    zone = cells_now[0]
    with db_api.api_writer() as session:
        copy = db_aggregates.create(session, 'rack1', metadata={
            'availability_zone': 'az1', 'ssd': 'true'}, uuid=zone)
        db_aggregates.add_hosts(session, copy.id, ['h1', 'h2'])

    assert run('db', 'online_data_migrations').code == 0

    aggregates, _groups = in_api()
    assert sorted(agg.name for agg in aggregates) == ['gpu', 'rack1']
    assert cell_rows(models.Aggregate) == 0


def test_a_name_the_api_database_has_stays_and_is_named(cells_now, run):
    zone = cells_now[0]
    with db_api.api_writer() as session:
        db_aggregates.create(session, 'rack1')

    result = run('db', 'online_data_migrations')

    assert result.code == 2
    assert output.table(result.out) == [
        ['migrate_aggregates', '2', '1'],
        ['migrate_instance_groups_to_api_db', '1', '1']]
    assert result.err == (
        'gantt-manage: error: migrate_aggregates: %s not moved: Invalid '
        'request: an aggregate named rack1 already exists.\n' % zone)
    with db_api.reader() as session:
        assert [agg.uuid for agg in db_aggregates.get_all(session)] == [zone]


def test_one_cell_has_nothing_to_move(before_cells, run):
    result = run('db', 'online_data_migrations')
    assert result.code == 1
    assert 'needs cells' in result.err
    assert cell_rows(models.Aggregate) == 2


@pytest.fixture
def check(conf_file, capsys):
    def run_check():
        code = status.main(['gantt-status', '--config-file', str(conf_file),
                            'upgrade', 'check', '--json'])
        out, _err = capsys.readouterr()
        found = {entry['check']: (entry['result'], entry['details'])
                 for entry in json.loads(out)['checks']}
        return code, found['Aggregates and server groups']
    return run_check


def test_the_upgrade_check_says_where_they_are(cells_now, check, run):
    code, (result, details) = check()
    assert result == 1
    assert 'cell cell1 holds 2 aggregate(s) and 1 server group(s)' in \
        details
    assert "'gantt-manage --config-file <that cell's> db " \
        "online_data_migrations'" in details

    assert run('db', 'online_data_migrations').code == 0

    code, (result, details) = check()
    assert (result, details) == (
        0, 'In the API database: 2 aggregate(s), 1 server group(s).')


def test_the_upgrade_check_wants_the_api_tables(api_database, database,
                                                check):
    from alembic import command
    from scheduler.db import migration

    command.downgrade(migration.get_alembic_config('api'), 'c3e5a7b9d1f2')

    _code, (result, details) = check()

    assert result == 2
    assert "run 'gantt-manage api_db sync'" in details


def test_the_upgrade_check_in_one_cell(database, check):
    _code, (result, details) = check()
    assert (result, details) == (0, 'One cell: in [database].')


def test_an_api_database_away_moves_nothing_and_loses_nothing(cells_now,
                                                             config):
    from oslo_db import exception as db_exc

    from scheduler.db import online_migrations

    config.config(connection='postgresql+psycopg2://gantt@127.0.0.1:1/gone',
                  db_max_retries=0, group='api_database')
    db_api.dispose_engine()
    mover = online_migrations.AggregateMove()

    with pytest.raises(db_exc.DBConnectionError):
        mover(50)

    assert cell_rows(models.Aggregate) == 2
    assert cell_rows(models.AggregateHost) == 2
