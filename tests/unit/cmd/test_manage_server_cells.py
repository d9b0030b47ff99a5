"""gantt-manage server list/show and cell_v2 verify_instance with cells:
instances found through their mappings, in cell1 ([database]), in cell0,
and builds still waiting for a cell (build requests)."""

from oslo_utils import uuidutils
import pytest

from scheduler import cells
from scheduler.cmd import manage_server_cells
from scheduler.db import api as db_api
from scheduler.db import build_requests as db_build_requests
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from tests.fixtures import databases
from tests.unit.cmd import output

CELL1 = '11111111-1111-1111-1111-111111111111'
DOWN_DB = 'postgresql+psycopg2://gantt:s3cret-db@127.0.0.1:1/gantt_down'


@pytest.fixture
def cell0_url():
    with databases.cell_database('sqlite') as url:
        yield url


def _instance(cell_url, uuid, cell_id, vm_state, host=None, fault=None):
    with db_api.target_cell(cell_url):
        with db_api.writer() as session:
            db_instances.create(session, uuid, flavor={}, request_spec={},
                                project_id='p1')
            db_instances.update(session, uuid, vm_state=vm_state,
                                task_state=None, host=host, node=host,
                                fault=fault)
    with db_api.api_writer() as session:
        mappings.create_instance_mapping(session, uuid, 'p1', cell_id)


@pytest.fixture
def servers(api_database, database, cell0_url):
    """{name: uuid}: 'active' in cell1, 'failed' in cell0, 'waiting' and
    'left' accepted without a cell ('waiting' in the hands of a
    super-conductor, 'left' left behind with a fault, waiting for
    cell1)."""
    with db_api.api_writer() as session:
        cell1 = mappings.create_cell(session, CELL1, 'cell1', None, database)
        cell0 = mappings.create_cell(session, cells.CELL0_UUID, 'cell0',
                                     'none:///', cell0_url)
    cells.clear_cache()
    uuids = {name: uuidutils.generate_uuid()
             for name in ('active', 'failed', 'waiting', 'left')}
    _instance(database, uuids['active'], cell1, 'active', host='c1')
    _instance(cell0_url, uuids['failed'], cell0, 'error',
              fault='No valid host was found. ')
    with db_api.api_writer() as session:
        for name in ('waiting', 'left'):
            mappings.create_instance_mapping(session, uuids[name], 'p1')
            mappings.create_build_request(session, uuids[name], 'p1', {},
                                          owner='super1:42:' + name)
        assert db_build_requests.leave(
            session, uuids['left'], 'super1:42:left',
            'Creating the instance in cell cell1 failed: gone', CELL1)
    return uuids


def _listed(out):
    """{uuid: (state, cell)} from a server list table (the state is the
    first known one on the line, the cell its last column)."""
    if 'No servers found.' in out:
        return {}
    found = {}
    for parts in output.table(out):
        state = next(part for part in parts
                     if part in ('active', 'error', 'building'))
        found[parts[0]] = (state, parts[-1])
    return found


def test_list_shows_every_cell_and_the_builds_without_one(servers, run):
    result = run('server', 'list')
    assert result.code == 0, result.err
    assert _listed(result.out) == {
        servers['active']: ('active', 'cell1'),
        servers['failed']: ('error', 'cell0'),
        servers['waiting']: ('building', '-'),
        servers['left']: ('building', '-')}

    by_host = _listed(run('server', 'list', '--host', 'c1').out)
    assert by_host == {servers['active']: ('active', 'cell1')}
    errors = _listed(run('server', 'list', '--state', 'ERROR').out)
    assert set(errors) == {servers['failed']}


def test_show_reads_the_instance_in_its_cell(servers, run):
    shown = run('server', 'show', servers['failed'])
    assert shown.code == 0, shown.err
    assert 'No valid host was found.' in shown.out
    assert 'cell0' in shown.out
    left = dict(output.table(run('server', 'show', servers['left']).out))
    assert (left['vm_state'], left['task_state'], left['owner'],
            left['waiting_for_cell']) == (
        'building', 'scheduling', '-', 'cell1')
    assert left['fault'] == \
        'Creating the instance in cell cell1 failed: gone'
    waiting = dict(output.table(run('server', 'show',
                                    servers['waiting']).out))
    assert (waiting['owner'], waiting['fault']) == ('super1:42:waiting',
                                                    '-')
    missing = run('server', 'show', uuidutils.generate_uuid())
    assert missing.code != 0
    assert 'could not be found' in missing.err


def test_verify_instance_names_cell1_and_cell0(servers, run):
    active = run('cell_v2', 'verify_instance', '--uuid', servers['active'])
    assert (active.code, CELL1 in active.out) == (0, True)
    failed = run('cell_v2', 'verify_instance', '--uuid', servers['failed'])
    assert (failed.code, cells.CELL0_UUID in failed.out) == (0, True)
    waiting = run('cell_v2', 'verify_instance', '--uuid',
                  servers['waiting'])
    assert waiting.code == 2


def test_a_cell_that_cannot_be_read_is_named_and_the_others_listed(
        servers, run):
    with db_api.api_writer() as session:
        mappings.create_cell(session, uuidutils.generate_uuid(), 'cell9',
                             None, DOWN_DB)
    cells.clear_cache()
    result = run('server', 'list')
    assert result.code == 0
    assert 'cell cell9 cannot be read' in result.err
    assert 's3cret-db' not in result.err
    assert len(_listed(result.out)) == 4


def test_names_are_written_in_the_instance_cell(servers, run):
    assert manage_server_cells.rename(servers['failed'], 'web-1') is True
    assert manage_server_cells.rename(servers['waiting'], 'web-2') is False
    shown = run('server', 'show', servers['failed']).out
    assert 'web-1' in shown
