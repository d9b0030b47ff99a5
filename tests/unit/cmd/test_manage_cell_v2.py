"""gantt-manage cell_v2 and api_db, in-process against real databases:
an SQLite API database and SQLite cell databases (one run of the main
flow on PostgreSQL and on MariaDB too)."""

import contextlib
import uuid

import pytest
import sqlalchemy as sa

from scheduler import cells
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler.db import migration
from scheduler.db import services as db_services
from tests.fixtures import databases
from tests.unit.cmd import output

BROKER_1 = 'rabbit://gantt:s3cret-mq@mq1:5672/cell1'
BROKER_2 = 'rabbit://gantt:s3cret-mq@mq2:5672/cell2'
# Nothing listens on port 1: a cell whose database is down.
DOWN_DB = 'postgresql+psycopg2://gantt:s3cret-db@127.0.0.1:1/gantt_down'


@pytest.fixture
def second_cell():
    """The URL of a second cell database (migrated SQLite)."""
    with databases.cell_database('sqlite') as url:
        yield url


def add_node(cell_url, host, nodename=None):
    with db_api.target_cell(cell_url):
        with db_api.writer() as session:
            db_compute_nodes.report_inventory(
                session, str(uuid.uuid4()), host, nodename or host,
                dict(vcpus=4, memory_mb=8192, local_gb=100))


def nodes_mapped(cell_url):
    with db_api.target_cell(cell_url):
        with db_api.reader() as session:
            return {node.hypervisor_hostname: bool(node.mapped)
                    for node in db_compute_nodes.get_nodes(session)}


def create_cell(run, name, broker, database, *extra):
    result = run('cell_v2', 'create_cell', '--name', name,
                 '--transport-url', broker, '--database_connection',
                 database, '--verbose', *extra)
    assert result.code == 0, result.err
    return result.out.strip().splitlines()[-1]


def cell_rows():
    with db_api.api_reader() as session:
        return {row.name: row for row in mappings.list_cells(session)}


def host_mappings():
    with db_api.api_reader() as session:
        return {row.host: row.cell_name
                for row in mappings.list_host_mappings(session)}


# -- one cell ---------------------------------------------------------------

@pytest.mark.parametrize('verb', [
    ['map_cell0'], ['create_cell', '--name', 'x'], ['list_cells'],
    ['update_cell', '--cell_uuid', 'u'], ['delete_cell', '--cell_uuid', 'u'],
    ['list_hosts'], ['verify_instance', '--uuid', 'u']])
def test_without_api_database_each_verb_says_what_is_missing(database, run,
                                                             verb):
    result = run('cell_v2', *verb)
    assert result.code == 1
    assert result.out == ''
    assert result.err.count('\n') == 1
    assert '[api_database] connection' in result.err
    assert verb[0] in result.err


def test_without_api_database_api_db_refuses_and_cells_are_local(database,
                                                                 run):
    for action in ('sync', 'version'):
        result = run('api_db', action)
        assert result.code == 1
        assert '[api_database] connection' in result.err
    assert cells.get_cells() == [cells.LOCAL]


def test_without_api_database_discover_hosts_maps_the_nodes(database, run):
    add_node(None, 'compute1')
    assert cells.host_cell('compute1') is None

    result = run('cell_v2', 'discover_hosts', '--strict')

    assert result.code == 0, result.err
    assert nodes_mapped(None) == {'compute1': True}
    cells.clear_cache()
    assert cells.host_cell('compute1') == cells.LOCAL
    assert run('cell_v2', 'discover_hosts', '--strict').code == 1
    for option in (['--cell_uuid', 'u'], ['--by-service']):
        refused = run('cell_v2', 'discover_hosts', *option)
        assert refused.code == 1
        assert '[api_database] connection' in refused.err


def test_a_down_api_database_is_one_line_naming_it(database, config, run):
    config.config(connection=DOWN_DB, group='api_database')
    db_api.dispose_engine()
    for command in (['cell_v2', 'list_cells'], ['api_db', 'sync'],
                    ['cell_v2', 'discover_hosts']):
        result = run(*command)
        assert result.code == 1
        assert result.err.startswith(
            'gantt-manage: error: Cannot use the API database at '
            'postgresql+psycopg2://gantt:***@127.0.0.1:1/gantt_down')
        assert result.err.count('\n') == 1
        assert 's3cret' not in result.err


# -- api_db and map_cell0 ---------------------------------------------------

def test_api_db_sync_then_version(config, run, tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'api.sqlite')
    config.config(connection=url, group='api_database')
    db_api.dispose_engine()
    before = run('api_db', 'version')
    assert before.code == 0, before.err
    assert 'Current revision: none' in before.out
    assert "run 'gantt-manage api_db sync'" in before.out
    # The cell_v2 verbs say what to run first.
    refused = run('cell_v2', 'list_cells')
    assert refused.code == 1
    assert 'api_db sync' in refused.err

    synced = run('api_db', 'sync')

    assert synced.code == 0, synced.err
    head = migration.head_version('api')
    assert head in synced.out
    assert 'Current revision: %s' % head in run('api_db', 'version').out


def test_map_cell0_defaults_to_the_database_name_plus_cell0(api_database,
                                                            database, run):
    result = run('cell_v2', 'map_cell0')
    assert result.code == 0, result.err
    assert run('cell_v2', 'map_cell0').out.strip() == 'Cell0 is already setup'

    cell0 = cell_rows()['cell0']
    assert cell0.uuid == cells.CELL0_UUID
    assert cell0.database_connection == database + '_cell0'
    assert cell0.transport_url == 'none:///'
    assert [cell.name for cell in cells.get_cells()] == ['cell0']
    assert cells.get_cells()[0].is_cell0


def test_db_sync_with_cells_upgrades_cell0_too(api_database, database, run,
                                               tmp_path):
    cell0_url = 'sqlite:///%s' % (tmp_path / 'cell0.sqlite')
    without = run('db', 'sync')
    assert 'cell0 mapping not found' in without.out
    assert run('cell_v2', 'map_cell0', '--database_connection',
               cell0_url).code == 0

    result = run('db', 'sync')

    assert result.code == 0, result.err
    assert 'cell0 database upgraded' in result.out
    with db_api.target_cell(cell0_url):
        assert migration.db_version() == migration.head_version()
    db_api.dispose_engine()


# -- create_cell, list_cells, update_cell -----------------------------------

def test_create_and_list_cells_masks_passwords(api_database, database,
                                               second_cell, run):
    uuid_1 = create_cell(run, 'cell1', BROKER_1, database)
    uuid_2 = create_cell(run, 'cell2', BROKER_2,
                         DOWN_DB, '--disabled')

    listed = run('cell_v2', 'list_cells')

    assert listed.code == 0
    assert 's3cret' not in listed.out
    rows = output.table(listed.out)
    assert [row[:2] for row in rows] == [['cell1', uuid_1],
                                         ['cell2', uuid_2]]
    assert rows[0][2] == 'rabbit://gantt:***@mq1:5672/cell1'
    assert rows[1][3] == ('postgresql+psycopg2://gantt:***@127.0.0.1:1/'
                          'gantt_down')
    assert [row[4] for row in rows] == ['False', 'True']
    verbose = output.table(run('cell_v2', 'list_cells', '--verbose').out)
    assert verbose[0][2] == BROKER_1
    assert verbose[1][3] == DOWN_DB
    assert [(cell.name, cell.disabled, cell.transport_url)
            for cell in cells.get_cells()] == [('cell1', False, BROKER_1),
                                               ('cell2', True, BROKER_2)]


def test_create_cell_refuses_a_duplicate_and_a_missing_url(
        api_database, database, second_cell, run, conf_file):
    create_cell(run, 'cell1', BROKER_1, database)

    duplicate = run('cell_v2', 'create_cell', '--name', 'again',
                    '--transport-url', BROKER_2, '--database_connection',
                    database)
    assert duplicate.code == 2
    assert ('The specified transport_url and/or database_connection '
            'combination already exists for another cell with uuid'
            in duplicate.err)

    # oslo.messaging's default is rabbit://: only an empty value is none.
    conf_file.write_text('[DEFAULT]\ntransport_url =\n')
    no_broker = run('cell_v2', 'create_cell', '--name', 'cell2')
    assert no_broker.code == 1
    assert 'Must specify --transport-url' in no_broker.err

    bad = run('cell_v2', 'create_cell', '--transport-url', 'rabbit://a:b@',
              '--database_connection', 'not a url')
    assert bad.code == 1
    assert 'Invalid database connection' in bad.err
    assert set(cell_rows()) == {'cell1'}

    # Both URLs from the configuration file, as Nova.
    conf_file.write_text('[DEFAULT]\ntransport_url = %s\n' % BROKER_2)
    from_config = run('cell_v2', 'create_cell', '--name', 'cell2',
                      '--database_connection', second_cell)
    assert from_config.code == 0, from_config.err
    assert 'using the value [DEFAULT]/transport_url' in from_config.out
    assert cell_rows()['cell2'].transport_url == BROKER_2


def test_update_cell_changes_and_its_exit_codes(api_database, database,
                                                second_cell, run):
    uuid_1 = create_cell(run, 'cell1', BROKER_1, database)
    create_cell(run, 'cell2', BROKER_2, second_cell)
    run('cell_v2', 'map_cell0')
    assert [cell.name for cell in cells.get_cells()] == ['cell0', 'cell1',
                                                         'cell2']

    def update(*args):
        return run('cell_v2', 'update_cell', '--cell_uuid', uuid_1, *args)

    assert update('--name', 'east', '--disable').code == 0
    assert (cell_rows()['east'].disabled, cell_rows()['east'].uuid) == (
        True, uuid_1)
    # gantt-manage cleared the cache: the change is seen at once.
    assert [(c.name, c.disabled) for c in cells.get_cells()
            if c.uuid == uuid_1] == [('east', True)]
    assert 'already disabled' in update('--disable').out
    assert update('--enable').code == 0
    assert cell_rows()['east'].disabled is False

    assert update('--disable', '--enable').code == 4
    assert update('--transport-url', BROKER_2).code == 3
    assert update('--database_connection', 'not a url').code == 2
    cell0 = run('cell_v2', 'update_cell', '--cell_uuid', cells.CELL0_UUID,
                '--disable')
    assert cell0.code == 5
    assert 'Cell0 cannot be disabled.' in cell0.err
    missing = run('cell_v2', 'update_cell', '--cell_uuid', 'nope')
    assert missing.code == 1
    assert 'Cell with uuid nope was not found.' in missing.err
    assert cell_rows()['east'].transport_url == BROKER_1


# -- discover_hosts, list_hosts ---------------------------------------------

def test_discover_hosts_maps_every_cell_once(api_database, database,
                                             second_cell, run):
    run('cell_v2', 'map_cell0')
    uuid_1 = create_cell(run, 'cell1', BROKER_1, database)
    uuid_2 = create_cell(run, 'cell2', BROKER_2, second_cell)
    add_node(database, 'compute1')
    add_node(database, 'compute2', 'compute2-a')
    add_node(database, 'compute2', 'compute2-b')
    add_node(second_cell, 'compute3')

    result = run('cell_v2', 'discover_hosts', '--verbose')

    assert result.code == 0, result.err
    assert 'Found 3 cell mappings.' in result.out
    assert 'Skipping cell0 since it does not contain hosts.' in result.out
    assert "Getting computes from cell 'cell2': %s" % uuid_2 in result.out
    assert 'Found 2 unmapped computes in cell: %s' % uuid_1 in result.out
    assert host_mappings() == {'compute1': 'cell1', 'compute2': 'cell1',
                               'compute3': 'cell2'}
    assert all(nodes_mapped(database).values())
    assert nodes_mapped(second_cell) == {'compute3': True}
    assert cells.host_cell('compute3').uuid == uuid_2
    assert cells.host_cell('compute3').database_connection == second_cell
    assert cells.host_cell('unknown') is None

    listed = run('cell_v2', 'list_hosts')
    assert output.table(listed.out) == [
        ['cell1', uuid_1, 'compute1'], ['cell1', uuid_1, 'compute2'],
        ['cell2', uuid_2, 'compute3']]
    only_2 = run('cell_v2', 'list_hosts', '--cell_uuid', uuid_2)
    assert output.table(only_2.out) == [['cell2', uuid_2, 'compute3']]
    assert run('cell_v2', 'list_hosts', '--cell_uuid', 'nope').code == 1

    # A node added later to a mapped host is mapped; nothing else moves.
    add_node(second_cell, 'compute3', 'compute3-b')
    again = run('cell_v2', 'discover_hosts', '--strict')
    assert again.code == 1     # no new host
    assert nodes_mapped(second_cell) == {'compute3': True,
                                         'compute3-b': True}
    assert len(host_mappings()) == 3


def test_discover_hosts_reports_a_host_in_two_cells(api_database, database,
                                                    second_cell, run):
    create_cell(run, 'cell1', BROKER_1, database)
    uuid_2 = create_cell(run, 'cell2', BROKER_2, second_cell)
    add_node(database, 'twin')
    add_node(second_cell, 'twin')

    result = run('cell_v2', 'discover_hosts')

    assert result.code == 2
    assert 'Duplicate host mapping' in result.err
    assert host_mappings() == {'twin': 'cell1'}
    assert nodes_mapped(database) == {'twin': True}
    assert nodes_mapped(second_cell) == {'twin': False}
    assert uuid_2 in result.err


def test_discover_hosts_skips_a_cell_that_is_down(api_database, database,
                                                  run):
    create_cell(run, 'down', BROKER_2, DOWN_DB)
    create_cell(run, 'cell1', BROKER_1, database)
    add_node(database, 'compute1')

    result = run('cell_v2', 'discover_hosts')

    assert result.code == 1
    assert 'was skipped' in result.err
    assert '127.0.0.1:1' in result.err
    assert 's3cret' not in result.err
    assert host_mappings() == {'compute1': 'cell1'}
    # The top-level command does the same and names each node's cell.
    add_node(database, 'compute2')
    top = run('discover_hosts')
    assert top.code == 1
    assert output.table(top.out)[0][::3] == ['compute2', 'cell1']


def test_discover_hosts_by_service(api_database, database, run):
    create_cell(run, 'cell1', BROKER_1, database)
    with db_api.writer() as session:
        db_services.report_alive(session, 'svc-only', 'gantt-compute',
                                 'compute')
    add_node(database, 'svc-only')

    assert run('cell_v2', 'discover_hosts', '--by-service').code == 0

    assert host_mappings() == {'svc-only': 'cell1'}
    assert nodes_mapped(database) == {'svc-only': True}


# -- delete_cell, verify_instance -------------------------------------------

def add_instance(cell_url, instance_uuid, cell_uuid, deleted=False):
    with db_api.target_cell(cell_url):
        with db_api.writer() as session:
            db_instances.create(session, instance_uuid, flavor={},
                                request_spec=None)
            if deleted:
                db_instances.soft_delete(session, instance_uuid)
    with db_api.api_writer() as session:
        cell_id = None if cell_uuid is None else \
            mappings.get_cell(session, cell_uuid).id
        mappings.create_instance_mapping(session, instance_uuid, 'p1',
                                         cell_id=cell_id)


def test_delete_cell_exit_codes_and_force(api_database, database, run):
    uuid_1 = create_cell(run, 'cell1', BROKER_1, database)
    add_node(database, 'compute1')
    run('cell_v2', 'discover_hosts')

    def delete(*args):
        return run('cell_v2', 'delete_cell', '--cell_uuid', uuid_1, *args)

    assert delete().code == 2
    alive = str(uuid.uuid4())
    add_instance(database, alive, uuid_1)
    assert delete('--force').code == 3
    with db_api.writer() as session:
        db_instances.soft_delete(session, alive)
    with db_api.writer() as session:
        session.execute(sa.text('DELETE FROM compute_nodes'))
    with db_api.api_writer() as session:
        session.execute(sa.text('DELETE FROM host_mappings'))
    last_words = delete()
    assert last_words.code == 4
    assert 'all instances have been deleted' in last_words.err
    add_node(database, 'compute2')
    run('cell_v2', 'discover_hosts')

    assert delete('--force').code == 0

    assert cell_rows() == {}
    assert host_mappings() == {}
    # Its node is unmapped: a later discovery may map it again.
    assert nodes_mapped(database) == {'compute2': False}
    assert run('cell_v2', 'delete_cell', '--cell_uuid', uuid_1).code == 1


def test_delete_cell_whose_database_is_down_changes_nothing(api_database,
                                                           database, run):
    uuid_down = create_cell(run, 'down', BROKER_2, DOWN_DB)
    with db_api.api_writer() as session:
        mappings.create_host_mapping(
            session, 'compute9', mappings.get_cell(session, uuid_down).id)

    result = run('cell_v2', 'delete_cell', '--cell_uuid', uuid_down,
                 '--force')

    assert result.code == 1
    assert 'postgresql+psycopg2://gantt:***@127.0.0.1:1' in result.err
    assert 's3cret' not in result.err
    assert result.err.count('\n') == 1
    assert set(cell_rows()) == {'down'}
    assert host_mappings() == {'compute9': 'down'}


def test_verify_instance_exit_codes(api_database, database, run):
    uuid_1 = create_cell(run, 'cell1', BROKER_1, database)
    alive, gone, archived, unscheduled = (str(uuid.uuid4())
                                          for _ in range(4))
    add_instance(database, alive, uuid_1)
    add_instance(database, gone, uuid_1, deleted=True)
    add_instance(database, archived, uuid_1)
    add_instance(database, unscheduled, None)
    with db_api.writer() as session:
        session.execute(sa.text('DELETE FROM instances WHERE uuid = :u'),
                        {'u': archived})

    def verify(instance, *extra):
        return run('cell_v2', 'verify_instance', '--uuid', instance, *extra)

    result = verify(alive)
    assert result.code == 0
    assert result.out.strip() == 'Instance %s is in cell: cell1 (%s)' % (
        alive, uuid_1)
    assert verify(str(uuid.uuid4())).code == 1
    assert verify(unscheduled).code == 2
    assert 'has been deleted' in verify(gone).out
    assert verify(gone).code == 3
    assert verify(archived).code == 4
    quiet = verify(archived, '--quiet')
    assert (quiet.code, quiet.out) == (4, '')


# -- on PostgreSQL and MariaDB ----------------------------------------------

def test_main_flow_on_each_backend(any_api_database, config, run):
    backend = databases.backend_of(any_api_database)
    with contextlib.ExitStack() as stack:
        cell_1 = stack.enter_context(databases.cell_database(backend))
        cell_2 = stack.enter_context(databases.cell_database(backend))
        config.config(connection=cell_1, group='database')
        uuid_1 = create_cell(run, 'cell1', BROKER_1, cell_1)
        uuid_2 = create_cell(run, 'cell2', BROKER_2, cell_2)
        add_node(cell_1, 'compute1')
        add_node(cell_2, 'compute2')

        assert run('cell_v2', 'discover_hosts').code == 0

        assert host_mappings() == {'compute1': 'cell1', 'compute2': 'cell2'}
        assert output.table(run('cell_v2', 'list_hosts').out) == [
            ['cell1', uuid_1, 'compute1'], ['cell2', uuid_2, 'compute2']]
        instance = str(uuid.uuid4())
        add_instance(cell_2, instance, uuid_2)
        assert run('cell_v2', 'verify_instance', '--uuid',
                   instance).code == 0
        assert run('cell_v2', 'delete_cell', '--cell_uuid',
                   uuid_2).code == 2
        db_api.dispose_engine()
