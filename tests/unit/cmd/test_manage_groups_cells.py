"""``gantt-manage aggregate`` and ``server-group`` with cells: they read
and write the API database, find hosts through their host mappings and
members through their instance mappings, and an API database without
the tables (not synced) or away is one line saying what to do."""

import pytest
import sqlalchemy as sa

from scheduler import cells
from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import instance_groups
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler.db import models
from tests.fixtures import databases
from tests.unit.cmd import output
from tests.unit.scheduler import fakes

CELL1 = '11111111-1111-1111-1111-111111111111'
CELL2 = '22222222-2222-2222-2222-222222222222'
GONE = 'postgresql+psycopg2://gantt@127.0.0.1:1/gone'


@pytest.fixture
def two_cells(api_database, database):
    """cell1 ([database]) with compute a1, cell2 with b1; both mapped.
    Host c1 is mapped to cell2 but has no compute service there."""
    with databases.cell_database('sqlite') as second:
        urls = {CELL1: database, CELL2: second}
        with db_api.api_writer() as session:
            for uuid, name in ((CELL1, 'cell1'), (CELL2, 'cell2')):
                mappings.create_cell(session, uuid, name, None, urls[uuid])
            cell1 = mappings.get_cell(session, CELL1).id
            cell2 = mappings.get_cell(session, CELL2).id
            mappings.create_host_mapping(session, 'a1', cell1)
            mappings.create_host_mapping(session, 'b1', cell2)
            mappings.create_host_mapping(session, 'c1', cell2)
        cells.clear_cache()
        fakes.Cloud().add_node('a1')
        with db_api.target_cell(second):
            fakes.Cloud().add_node('b1')
        yield urls
        cells.clear_cache()


def _cell_rows(url, model):
    with db_api.target_cell(url), db_api.reader() as session:
        return session.scalar(sa.select(sa.func.count()).select_from(model))


def test_aggregates_are_written_in_the_api_database(two_cells, run):
    assert run('aggregate', 'create', 'rack', '--availability-zone',
               'az1').code == 0
    assert run('aggregate', 'add-host', 'rack', 'a1').code == 0
    result = run('aggregate', 'add-host', 'rack', 'b1')
    assert result.code == 0, result.err

    with db_api.api_reader() as session:
        [aggregate] = db_aggregates.get_all(session)
    assert (aggregate.name, sorted(aggregate.hosts),
            aggregate.availability_zone) == ('rack', ['a1', 'b1'], 'az1')
    for url in two_cells.values():
        assert _cell_rows(url, models.Aggregate) == 0
    listed = output.table(run('aggregate', 'list').out)
    assert [row[1:4] for row in listed] == [['rack', 'az1', 'a1, b1']]


@pytest.mark.parametrize('host', ['nowhere', 'c1'])
def test_a_host_without_a_compute_in_its_cell_is_refused(two_cells, run,
                                                         host):
    assert run('aggregate', 'create', 'rack').code == 0

    result = run('aggregate', 'add-host', 'rack', host)

    assert result.code == 1
    assert result.err == ('gantt-manage: error: Compute host %s could not '
                          'be found.\n' % host)
    with db_api.api_reader() as session:
        assert db_aggregates.get(session, 'rack').hosts == frozenset()


def test_server_groups_are_in_the_api_database_with_hosts_from_cells(
        two_cells, run):
    result = run('server-group', 'create', 'web', 'anti-affinity')
    assert result.code == 0, result.err
    on_a1, on_b1 = fakes.uuids(2)
    for uuid, host, cell in ((on_a1, 'a1', CELL1), (on_b1, 'b1', CELL2)):
        with db_api.target_cell(two_cells[cell]), \
                db_api.writer() as session:
            db_instances.create(session, uuid, {'vcpus': 1}, {})
            db_instances.update(session, uuid, host=host)
        with db_api.api_writer() as session:
            mappings.create_instance_mapping(
                session, uuid, 'p',
                cell_id=mappings.get_cell(session, cell).id)
    with db_api.api_writer() as session:
        group = instance_groups.get(session, 'web')
        instance_groups.add_members(session, group.id, [on_a1, on_b1])

    shown = run('server-group', 'show', 'web').out

    fields = {row[0]: row[-1] for row in output.table(shown)}
    assert fields['hosts'] == 'a1, b1'
    assert '%s (a1)' % on_a1 in shown and '%s (b1)' % on_b1 in shown
    assert _cell_rows(two_cells[CELL1], models.InstanceGroup) == 0
    assert run('server-group', 'delete', 'web').code == 0
    with db_api.api_reader() as session:
        assert instance_groups.list_groups(session) == []


@pytest.mark.parametrize('command', [
    ('aggregate', 'list'), ('aggregate', 'create', 'rack'),
    ('server-group', 'list'), ('server-group', 'create', 'web', 'affinity')])
def test_an_api_database_not_synced_says_to_sync_it(database, config,
                                                    tmp_path, run, command):
    config.config(connection='sqlite:///%s' % (tmp_path / 'api.sqlite'),
                  group='api_database')
    db_api.dispose_engine()

    result = run(*command)

    assert result.code == 1
    assert result.err.count('\n') == 1
    assert "run 'gantt-manage api_db sync'" in result.err
    assert 'The API database at' in result.err


def test_an_api_database_away_is_one_line(database, config, run):
    config.config(connection=GONE, group='api_database')
    db_api.dispose_engine()

    result = run('server-group', 'list')

    assert result.code == 1
    assert result.err.startswith('gantt-manage: error: Cannot use the API '
                                 'database at postgresql+psycopg2://***@'
                                 '127.0.0.1:1/gone')
    assert result.err.count('\n') == 1
