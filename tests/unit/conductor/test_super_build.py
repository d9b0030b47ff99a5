"""The super-conductor: builds accepted in the API database, created in
their host's cell, buried in cell0 when they get no host.

In-process services over the fake:// transport; three SQLite files: the
API database, cell1 (``[database]``: the scheduler and the computes'
conductor use it) and cell0. A lost cell database is oslo.db's
DBConnectionError raised by the cell engine itself for the instance
INSERTs (an engine event), so the retries, releases and rollbacks that
follow are the real ones.
"""

import contextlib
import sqlite3

from oslo_db import exception as db_exc
from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from conductor import rpcapi as conductor_rpcapi
from conductor.tasks import super_build
from scheduler import cells
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import api_models
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler.db import models
from scheduler import exception
from tests.fixtures import databases
from tests.fixtures import statements
from tests.unit import inprocess

HOST = {'vcpus': 8, 'memory_mb': 16384, 'local_gb': 200}
CELL1 = '11111111-1111-1111-1111-111111111111'


@pytest.fixture
def cell0_url():
    with databases.cell_database('sqlite') as url:
        yield url


@pytest.fixture
def supercell(database, api_database, config):
    """cell1 is [database]; cell0 not mapped yet (see map_cell0)."""
    inprocess.configure(config, exact_ratios=True)
    with db_api.api_writer() as session:
        mappings.create_cell(session, CELL1, 'cell1', None, database)
    cells.clear_cache()
    return config


def map_cell0(url):
    with db_api.api_writer() as session:
        mappings.create_cell(session, cells.CELL0_UUID, 'cell0', 'none:///',
                             url)
    cells.clear_cache()


def rows_in(url):
    with db_api.target_cell(url):
        with db_api.reader() as session:
            return {row.uuid: row
                    for row in db_instances.list_instances(session)}


def api_state():
    """{uuid: (cell name or None, build request fault or 'none')}."""
    with db_api.api_reader() as session:
        maps = mappings.list_instance_mappings(session)
        requests = mappings.build_requests_of(
            session, [row.instance_uuid for row in maps])
    return {row.instance_uuid: (
        row.cell_name, requests[row.instance_uuid].fault
        if row.instance_uuid in requests else 'none') for row in maps}


def allocations():
    with db_api.reader() as session:
        return session.scalar(sa.select(sa.func.count()).select_from(
            models.Allocation))


def wait_for(predicate, what):
    inprocess.Cluster.wait_until(predicate, 15, what)


def test_a_build_lands_in_its_cell_mapped_without_a_build_request(
        supercell, database, cell0_url):
    map_cell0(cell0_url)
    with inprocess.Cluster({'h1': HOST}) as cluster:
        uuids = cluster.boot(vcpus=1, memory_mb=512, root_gb=1, count=2)
        rows = cluster.wait_built(uuids)
        assert {row.vm_state for row in rows.values()} == {'active'}
        assert api_state() == {uuid: ('cell1', 'none') for uuid in uuids}
    assert rows_in(cell0_url) == {}
    assert allocations() == 2


def test_accepting_writes_build_requests_and_unmapped_mappings_once(
        supercell, database):
    task = super_build.SuperBuildTask(None, None)
    uuids = [uuidutils.generate_uuid() for _ in range(2)]
    spec = inprocess.Cluster.spec(1, 512, 1, count=2, project_id='p1')

    assert task.accept(uuids, spec) is True
    assert task.accept(uuids, spec) is False

    assert api_state() == {uuid: (None, None) for uuid in uuids}
    assert rows_in(database) == {}
    other = inprocess.Cluster.spec(2, 512, 1, count=2, project_id='p1')
    with pytest.raises(exception.InvalidRequest, match='already exists'):
        task.accept(uuids, other)


def test_asking_again_after_the_build_landed_builds_once(supercell,
                                                         cell0_url):
    map_cell0(cell0_url)
    with inprocess.Cluster({'h1': HOST}) as cluster:
        uuids = cluster.boot(vcpus=1, memory_mb=512, root_gb=1)
        cluster.wait_built(uuids)
        again = conductor_rpcapi.ComputeTaskAPI().schedule_and_build_instances(
            gantt_context.get_admin_context(), uuids,
            cluster.spec(1, 512, 1))
        assert again == uuids
    assert allocations() == 1
    assert api_state() == {uuids[0]: ('cell1', 'none')}


def test_no_valid_host_lands_in_cell0_with_its_fault(supercell, database,
                                                     cell0_url):
    map_cell0(cell0_url)
    with inprocess.Cluster({'h1': HOST}) as cluster:
        uuids = cluster.boot(vcpus=64, memory_mb=512, root_gb=1)
        # The row is written, then the mapping.
        wait_for(lambda: api_state()[uuids[0]][0] == 'cell0',
                 'the mapping to cell0')
    row = rows_in(cell0_url)[uuids[0]]
    assert row.vm_state == 'error'
    assert row.fault.startswith('No valid host was found.')
    assert api_state() == {uuids[0]: ('cell0', 'none')}
    assert rows_in(database) == {}
    assert allocations() == 0


def test_without_cell0_the_build_request_stays_with_the_fault(
        supercell, database, caplog):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        uuids = cluster.boot(vcpus=64, memory_mb=512, root_gb=1)
        wait_for(lambda: api_state()[uuids[0]][1] is not None,
                 'the fault on the build request')
    cell, fault = api_state()[uuids[0]]
    assert cell is None
    assert fault.startswith('No valid host was found.')
    assert rows_in(database) == {}
    assert 'cell0 is not mapped (gantt-manage cell_v2 map_cell0)' in \
        caplog.text


@contextlib.contextmanager
def statements_fail(engine, prefix, times):
    """``engine``'s database loses the connection for the next ``times``
    statements starting with ``prefix`` (-1: all of them)."""
    left = [times]

    def before(statement):
        if statement.startswith(prefix) and left[0]:
            left[0] -= 1
            raise db_exc.DBConnectionError(
                sqlite3.OperationalError('unable to open database file'))
    with statements.each_statement(before, engine):
        yield


def instance_inserts_fail(url, times):
    """The cell database at ``url`` loses the connection for the next
    ``times`` instance INSERTs (-1: all of them)."""
    with db_api.target_cell(url):
        engine = db_api.get_engine()
    return statements_fail(engine, 'INSERT INTO instances', times)


def _boot_while_failing(outage, cell0_url):
    """Boot one server while ``outage`` (a statements_fail context) is
    on; the build request's (cell, fault) once it has a fault."""
    map_cell0(cell0_url)
    with inprocess.Cluster({'h1': HOST}) as cluster:
        with outage:
            uuids = cluster.boot(vcpus=1, memory_mb=512, root_gb=1)
            wait_for(lambda: api_state()[uuids[0]][1] is not None,
                     'the fault on the build request')
    return api_state()[uuids[0]]


def test_a_cell_database_down_past_the_budget_keeps_the_build_request(
        supercell, database, cell0_url):
    supercell.config(db_max_retries=1, db_retry_interval=1,
                     group='database')
    cell, fault = _boot_while_failing(instance_inserts_fail(database, -1),
                                      cell0_url)
    assert cell is None
    assert fault.startswith('Creating the instance in cell cell1 failed')
    assert rows_in(database) == {} and rows_in(cell0_url) == {}
    # The scheduler's claim was released.
    assert allocations() == 0


def test_a_cell_database_back_within_the_budget_builds(supercell, database,
                                                       cell0_url):
    supercell.config(db_max_retries=3, db_retry_interval=1,
                     group='database')
    map_cell0(cell0_url)
    with inprocess.Cluster({'h1': HOST}) as cluster:
        with instance_inserts_fail(database, 1):
            uuids = cluster.boot(vcpus=1, memory_mb=512, root_gb=1)
            rows = cluster.wait_built(uuids)
    assert rows[uuids[0]].vm_state == 'active'
    assert api_state() == {uuids[0]: ('cell1', 'none')}


def test_the_api_database_down_after_the_creation_undoes_it(
        supercell, database, cell0_url):
    supercell.config(db_max_retries=1, db_retry_interval=1,
                     group='api_database')
    cell, fault = _boot_while_failing(statements_fail(
        db_api.api_engine(), 'UPDATE instance_mappings', -1), cell0_url)
    assert cell is None
    assert fault.startswith('Mapping the instance to cell cell1 failed')
    # Not half in cell1: its row and its claim are gone.
    assert rows_in(database) == {} and rows_in(cell0_url) == {}
    assert allocations() == 0


def test_the_api_database_down_refuses_the_build(supercell):
    supercell.config(connection='postgresql+psycopg2://u:pw@127.0.0.1:1/x',
                     db_max_retries=0, group='api_database')
    task = super_build.SuperBuildTask(None, None)
    with pytest.raises(exception.ApiDatabaseUnavailable) as error:
        task.accept([uuidutils.generate_uuid()],
                    inprocess.Cluster.spec(1, 512, 1))
    assert '127.0.0.1:1' in str(error.value)
    assert 'pw' not in str(error.value)


def test_build_requests_table_has_one_row_per_instance(api_database):
    table = api_models.BuildRequest.__table__
    assert {column.name for column in table.columns} >= {
        'instance_uuid', 'project_id', 'request_spec', 'created_at'}
