"""gantt-manage cell_v2 simple_cell_setup, map_cell_and_hosts,
map_instances, delete_host and map_cell0's database, in-process: SQLite
API and cell databases; map_cell0 on PostgreSQL and MariaDB with a
database of a scratch name, as a user who may create databases and as a
scratch one who may not."""

import os
import uuid

import pytest
import sqlalchemy as sa

from scheduler import cells
from scheduler.db import api as db_api
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler.db import migration
from scheduler.db import server_databases
from tests.fixtures import databases
from tests.unit.cmd import test_manage_cell_v2 as cell_v2_tests

BROKER = 'rabbit://gantt:s3cret-mq@mq1:5672/cell1'
add_node = cell_v2_tests.add_node
nodes_mapped = cell_v2_tests.nodes_mapped
host_mappings = cell_v2_tests.host_mappings
cell_rows = cell_v2_tests.cell_rows
create_cell = cell_v2_tests.create_cell


def add_instances(count, host=None, deleted=()):
    """``count`` instances in ``[database]`` (no mapping), oldest first
    (those whose index is in ``deleted`` soft-deleted); their uuids."""
    uuids = [str(uuid.uuid4()) for _ in range(count)]
    for index, instance_uuid in enumerate(uuids):
        with db_api.writer() as session:
            db_instances.create(session, instance_uuid, flavor={},
                                request_spec=None, project_id='p1')
            if host:
                db_instances.update(session, instance_uuid, host=host)
            if index in deleted:
                db_instances.soft_delete(session, instance_uuid)
    return uuids


def instance_mappings():
    """``{instance uuid: cell name}`` (the marker left out)."""
    with db_api.api_reader() as session:
        return {row.instance_uuid: row.cell_name
                for row in mappings.list_instance_mappings(session)}


def markers():
    with db_api.api_reader() as session:
        return session.execute(sa.text(
            'SELECT instance_uuid FROM instance_mappings WHERE project_id '
            '= :p'), {'p': mappings.MARKER_PROJECT}).scalars().all()


# -- --version --------------------------------------------------------------

def test_version_is_the_package_s(config, run):
    from scheduler import version
    for argv in (['--version'], ['version']):
        result = run(*argv)
        assert result.code == 0, result.err
        assert result.out.strip() == version.release()
        assert result.out.strip()[0].isdigit()


# -- simple_cell_setup, map_cell_and_hosts ----------------------------------

def test_simple_cell_setup_maps_cell0_the_cell_hosts_and_instances(
        api_database, database, run):
    add_node(None, 'compute1')
    add_node(None, 'compute2', 'compute2-a')
    add_node(None, 'compute2', 'compute2-b')
    uuids = add_instances(3, host='compute1', deleted=(1,))

    result = run('cell_v2', 'simple_cell_setup', '--transport-url', BROKER)

    assert result.code == 0, result.err
    assert 'Created the database of cell0' in result.out
    rows = cell_rows()
    assert set(rows) == {'cell0', None}
    assert rows['cell0'].database_connection == database + '_cell0'
    assert rows[None].database_connection == database
    assert rows[None].transport_url == BROKER
    assert os.path.exists(sa.engine.make_url(database).database + '_cell0')
    with db_api.target_cell(database + '_cell0'):
        assert migration.db_version() == migration.head_version()
    assert host_mappings() == {'compute1': None, 'compute2': None}
    assert all(nodes_mapped(None).values())
    # Deleted instances are mapped too, as Nova maps them.
    assert instance_mappings() == dict.fromkeys(uuids)
    assert {cell.name for cell in cells.get_cells()} == {None, 'cell0'}

    again = run('cell_v2', 'simple_cell_setup', '--transport-url', BROKER)
    assert again.code == 0, again.err
    assert 'Cell0 is already setup' in again.out
    assert 'All hosts are already mapped to cell(s).' in again.out
    assert len(cell_rows()) == 2
    db_api.dispose_engine()


def test_simple_cell_setup_without_hosts_or_broker_exits_1(
        api_database, database, run, conf_file):
    result = run('cell_v2', 'simple_cell_setup', '--transport-url', BROKER)
    assert result.code == 1
    assert result.out.splitlines()[-1] == \
        'No hosts found to map to cell, exiting.'
    assert set(cell_rows()) == {'cell0'}

    conf_file.write_text('[DEFAULT]\ntransport_url =\n')
    no_broker = run('cell_v2', 'simple_cell_setup')
    assert no_broker.code == 1
    assert 'Must specify --transport-url' in no_broker.err
    bad = run('cell_v2', 'simple_cell_setup', '--transport-url', 'rabbit://h:port/')
    assert bad.code == 1
    assert 'Invalid transport URL' in bad.err
    db_api.dispose_engine()


def test_map_cell_and_hosts_maps_new_hosts_to_the_same_cell(
        api_database, database, run):
    nothing = run('cell_v2', 'map_cell_and_hosts', '--transport-url', BROKER)
    assert nothing.code == 0
    assert nothing.out.strip() == 'No hosts found to map to cell, exiting.'
    add_node(None, 'compute1')

    first = run('cell_v2', 'map_cell_and_hosts', '--name', 'cell1',
                '--transport-url', BROKER, '--verbose')

    assert first.code == 0, first.err
    cell_uuid = first.out.strip().splitlines()[-1]
    assert cell_rows()['cell1'].uuid == cell_uuid
    assert host_mappings() == {'compute1': 'cell1'}
    assert nodes_mapped(None) == {'compute1': True}
    add_node(None, 'compute2')
    second = run('cell_v2', 'map_cell_and_hosts', '--transport-url', BROKER,
                 '--verbose')
    assert second.code == 0, second.err
    assert second.out.splitlines() == [
        'Host compute1 is already mapped to cell %s' % cell_uuid, cell_uuid]
    assert host_mappings() == {'compute1': 'cell1', 'compute2': 'cell1'}
    assert cells.host_cell('compute2').uuid == cell_uuid
    third = run('cell_v2', 'map_cell_and_hosts', '--transport-url', BROKER)
    assert third.out.strip() == 'All hosts are already mapped to cell(s).'
    assert set(cell_rows()) == {'cell1'}


def test_map_cell_and_hosts_uses_the_cell_of_this_database(
        api_database, database, run):
    cell_uuid = create_cell(run, 'cell1', BROKER, database)
    add_node(None, 'compute1')
    assert run('cell_v2', 'map_cell_and_hosts').code == 0
    assert host_mappings() == {'compute1': 'cell1'}
    assert [row.uuid for row in cell_rows().values()] == [cell_uuid]


# -- map_instances ----------------------------------------------------------

def test_map_instances_in_batches_with_a_marker(api_database, database,
                                                run):
    cell_uuid = create_cell(run, 'cell1', BROKER, database)
    uuids = add_instances(5, deleted=(4,))
    # One mapped already (e.g. by the super-conductor): left as it is.
    with db_api.api_writer() as session:
        mappings.create_instance_mapping(session, uuids[1], 'p1',
                                         cell_id=cell_rows()['cell1'].id)

    def map_some(*extra):
        return run('cell_v2', 'map_instances', '--cell_uuid', cell_uuid,
                   *extra)

    first = map_some('--max-count', '2')
    assert (first.code, first.out, first.err) == (1, '', '')
    assert set(instance_mappings()) == set(uuids[:2])
    assert markers() == [uuids[1].replace('-', ' ')]
    assert map_some('--max-count', '2').code == 1
    assert set(instance_mappings()) == set(uuids[:4])
    last = map_some('--max-count', '2')
    assert last.code == 0
    assert instance_mappings() == dict.fromkeys(uuids, 'cell1')
    assert markers() == []
    # Done, no marker: a run starts from the first instance again (as
    # Nova's), mapping nothing twice.
    assert map_some('--max-count', '5').code == 1
    assert map_some('--max-count', '6').code == 0
    assert map_some().code == 0
    assert len(instance_mappings()) == 5


def test_map_instances_reset_and_bad_arguments(api_database, database, run):
    cell_uuid = create_cell(run, 'cell1', BROKER, database)
    uuids = add_instances(3)

    def map_some(*extra):
        return run('cell_v2', 'map_instances', '--cell_uuid', cell_uuid,
                   *extra)

    assert map_some('--max-count', '2').code == 1
    with db_api.api_writer() as session:
        session.execute(sa.text('DELETE FROM instance_mappings WHERE '
                                'instance_uuid = :u'), {'u': uuids[0]})
    # Without --reset it goes on after the marker: uuids[0] stays unmapped.
    assert map_some('--max-count', '5').code == 0
    assert set(instance_mappings()) == set(uuids[1:])
    assert map_some('--max-count', '1', '--reset').code == 1
    assert set(instance_mappings()) == set(uuids)

    for bad in ('0', '-3', 'many'):
        refused = map_some('--max-count', bad)
        assert refused.code == 127
        assert refused.err == ('gantt-manage: error: Must supply a positive '
                               'value for max-count\n')
    missing = run('cell_v2', 'map_instances', '--cell_uuid', 'nope')
    assert missing.code == 1
    assert 'Cell with uuid nope was not found.' in missing.err
    usage = run('cell_v2', 'map_instances')
    assert usage.code == 2
    assert '--cell_uuid' in usage.err


# -- delete_host ------------------------------------------------------------

def test_delete_host_exit_codes(api_database, database, second_cell, run):
    uuid_1 = create_cell(run, 'cell1', BROKER, database)
    uuid_2 = create_cell(run, 'cell2', BROKER + '2', second_cell)
    add_node(None, 'busy')
    add_node(None, 'idle', 'idle-a')
    add_node(None, 'idle', 'idle-b')
    add_node(second_cell, 'elsewhere')
    assert run('cell_v2', 'discover_hosts').code == 0
    add_instances(1, host='busy')
    add_instances(1, host='idle', deleted=(0,))

    def delete(cell_uuid, host):
        return run('cell_v2', 'delete_host', '--cell_uuid', cell_uuid,
                   '--host', host)

    cases = [(('nope', 'idle'), 1, 'Cell with uuid nope was not found.'),
             ((uuid_1, 'unknown'), 2, 'The host unknown was not found.'),
             ((uuid_1, 'elsewhere'), 3, 'The host elsewhere was not found '
              'in the cell %s.' % uuid_1),
             ((uuid_1, 'busy'), 4, 'There are instances on the host busy.')]
    for args, code, message in cases:
        result = delete(*args)
        assert (result.code, result.err) == (
            code, 'gantt-manage: error: %s\n' % message)
    assert len(host_mappings()) == 3

    done = delete(uuid_1, 'idle')

    assert (done.code, done.out, done.err) == (0, '', '')
    assert host_mappings() == {'busy': 'cell1', 'elsewhere': 'cell2'}
    assert nodes_mapped(None) == {'busy': True, 'idle-a': False,
                                  'idle-b': False}
    assert cells.host_cell('idle') is None
    assert delete(uuid_2, 'elsewhere').code == 0
    # A later discovery maps it again.
    assert run('cell_v2', 'discover_hosts').code == 0
    assert host_mappings()['idle'] == 'cell1'


@pytest.fixture
def second_cell():
    with databases.cell_database('sqlite') as url:
        yield url


# -- map_cell0's database ---------------------------------------------------

def test_map_cell0_creates_the_sqlite_file_or_says_why_not(
        api_database, database, run, tmp_path):
    missing_dir = 'sqlite:///%s' % (tmp_path / 'no' / 'cell0.sqlite')
    refused = run('cell_v2', 'map_cell0', '--database_connection',
                  missing_dir)
    assert refused.code == 1
    assert refused.err.count('\n') == 1
    assert 'the directory %s does not exist' % (tmp_path / 'no') in \
        refused.err
    assert cell_rows() == {}

    result = run('cell_v2', 'map_cell0')

    assert result.code == 0, result.err
    assert result.out.startswith('Created the database of cell0 at sqlite')
    assert os.path.exists(sa.engine.make_url(database).database + '_cell0')
    assert run('cell_v2', 'map_cell0').out.strip() == \
        'Cell0 is already setup'


@pytest.fixture(params=('postgresql', 'mariadb'))
def server(request):
    """A backend name and the admin URL of its server (a database of a
    scratch name is made on it and dropped at the end)."""
    name = databases.NAME_PREFIX + uuid.uuid4().hex[:12] + '_cell0'
    url = sa.engine.make_url(databases.ADMIN_URLS[request.param]).set(
        database=name)
    yield request.param, url
    databases.drop_database(url.render_as_string(hide_password=False))


@pytest.fixture
def scratch_user(server):
    """A user of the server who may log in but not create databases;
    dropped at the end."""
    backend, _url = server
    name = databases.NAME_PREFIX + 'user_' + uuid.uuid4().hex[:8]
    admin = sa.create_engine(databases.ADMIN_URLS[backend],
                             isolation_level='AUTOCOMMIT')
    if backend == 'postgresql':
        create = ['CREATE ROLE %s LOGIN NOCREATEDB' % name]
        drop = ['DROP ROLE IF EXISTS %s' % name]
    else:
        # '%%' reaches the server as '%' (pymysql formats the statement).
        create = ["CREATE USER '%s'@'%%%%'" % name,
                  "CREATE USER '%s'@'localhost'" % name]
        drop = ["DROP USER IF EXISTS '%s'@'%%%%'" % name,
                "DROP USER IF EXISTS '%s'@'localhost'" % name]
    try:
        with admin.connect() as connection:
            for statement in create:
                connection.exec_driver_sql(statement)
        yield name
    finally:
        with admin.connect() as connection:
            for statement in drop:
                connection.exec_driver_sql(statement)
        admin.dispose()


def test_map_cell0_creates_its_database_on_the_server(api_database,
                                                      database, run, server):
    backend, url = server
    cell0 = url.render_as_string(hide_password=False)
    assert not server_databases.database_exists(cell0)

    result = run('cell_v2', 'map_cell0', '--database_connection', cell0)

    assert result.code == 0, result.err
    assert 'Created the database of cell0' in result.out
    assert server_databases.database_exists(cell0)
    assert cell_rows()['cell0'].database_connection == cell0
    # db sync builds its schema there.
    assert run('db', 'sync').code == 0
    with db_api.target_cell(cell0):
        assert migration.db_version() == migration.head_version()
    db_api.dispose_engine()
    again = run('cell_v2', 'map_cell0')
    assert (again.code, again.out) == (0, 'Cell0 is already setup\n')


def test_map_cell0_as_a_user_who_may_not_create_databases(
        api_database, database, run, server, scratch_user):
    backend, url = server
    cell0 = url.set(username=scratch_user).render_as_string(
        hide_password=False)

    result = run('cell_v2', 'map_cell0', '--database_connection', cell0)

    assert result.code == 1
    assert result.out == ''
    assert result.err.count('\n') == 1
    assert result.err.startswith('gantt-manage: error: cannot create the '
                                 'database %s on ' % url.database)
    assert 'Create it as a user who may' in result.err
    assert cell_rows() == {}
    assert not server_databases.database_exists(
        url.render_as_string(hide_password=False))
