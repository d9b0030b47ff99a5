"""gantt-manage db check with cells: every cell database (cell0's
instances, the others' claims and instances against their computes'
reports) and the API database, each problem labelled with its cell; a
cell that is down is named and skipped. SQLite databases throughout (the
checks themselves run on every backend in tests/unit/db)."""

import datetime
import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import compute_reports
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler.db import models
from scheduler.db import report_checks
from tests.fixtures import databases
from tests.unit.cmd import output

BROKER = 'rabbit://gantt:s3cret-mq@mq1:5672/cell'
# Nothing listens on port 1: a cell whose database is down.
DOWN_DB = 'postgresql+psycopg2://gantt:s3cret-db@127.0.0.1:1/gantt_down'


@pytest.fixture
def second_cell():
    """The URL of a second cell database (migrated SQLite)."""
    with databases.cell_database('sqlite') as url:
        yield url


@pytest.fixture
def cell0(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'cell0.sqlite')
    yield url
    db_api.dispose_engine()


def _create_cell(run, name, database):
    result = run('cell_v2', 'create_cell', '--name', name, '--transport-url',
                 BROKER + name, '--database_connection', database, '--verbose')
    assert result.code == 0, result.err
    return result.out.strip().splitlines()[-1]


def _active_instance(cell_url, host, cell_uuid, reported=True):
    """An ACTIVE instance on ``host`` in the cell, mapped to it; its
    compute reports it running unless not ``reported``."""
    instance_uuid = str(uuid.uuid4())
    with db_api.target_cell(cell_url), db_api.writer() as session:
        db_compute_nodes.report_inventory(
            session, str(uuid.uuid4()), host, host,
            dict(vcpus=4, memory_mb=8192, local_gb=100))
        db_instances.create(session, instance_uuid, flavor={'vcpus': 1},
                            request_spec=None)
        db_instances.update(session, instance_uuid, vm_state='active',
                            task_state=None, host=host, node=host)
        # Changed well before the compute's report (REPORT_SLACK).
        before = models.utcnow() - datetime.timedelta(minutes=1)
        session.execute(sa.update(models.Instance).where(
            models.Instance.uuid == instance_uuid).values(
            created_at=before, updated_at=before))
    with db_api.target_cell(cell_url), db_api.writer() as session:
        compute_reports.record(
            session, host, {instance_uuid: host} if reported else {}, [])
    _map(instance_uuid, cell_uuid)
    return instance_uuid


def _map(instance_uuid, cell_uuid):
    with db_api.api_writer() as session:
        mappings.create_instance_mapping(
            session, instance_uuid, 'p1',
            cell_id=mappings.get_cell(session, cell_uuid).id)


def test_every_cell_and_the_api_database_labelled(api_database, database,
                                                  second_cell, cell0, run):
    assert run('cell_v2', 'map_cell0', '--database_connection',
               cell0).code == 0
    assert run('db', 'sync').code == 0
    uuid_1 = _create_cell(run, 'cell1', database)
    uuid_2 = _create_cell(run, 'cell2', second_cell)
    _active_instance(database, 'compute1', uuid_1)
    fine_in_2 = _active_instance(second_cell, 'compute2', uuid_2)

    ok = run('db', 'check')

    assert ok.code == 0, ok.out + ok.err
    assert ok.out.splitlines()[0] == \
        'ok: 3 cell(s) and the API database are consistent.'
    assert '  cell0: ok: 0 instance(s)' in ok.out
    assert '  cell2: ok: 1 compute node(s)' in ok.out
    assert '  API database: ok: 2 instance mapping(s)' in ok.out

    # The second cell: an instance its compute does not run; the API
    # database: a mapping to that cell of an instance it does not have.
    not_running = _active_instance(second_cell, 'compute3', uuid_2,
                                   reported=False)
    nowhere = str(uuid.uuid4())
    _map(nowhere, uuid_2)
    bad = run('db', 'check')

    assert bad.code == 1, bad.out + bad.err
    assert 'cell1: ok: 1 compute node(s)' in bad.out
    assert 'cell2: 1 problem(s), listed below.' in bad.out
    assert 'API database: 1 problem(s), listed below.' in bad.out
    [row] = output.table(bad.out)
    assert row[:4] == [not_running, 'cell2', 'compute3',
                       report_checks.NOT_RUNNING]
    assert '  1 %s' % report_checks.NOT_RUNNING in bad.out
    api_table = bad.out[bad.out.rindex('\nInstance '):]
    assert output.table(api_table) == [
        [nowhere, 'cell2', 'mapped to a cell that does not have it',
         'it is in no cell']]
    assert fine_in_2 not in bad.out

    # A cell whose database is down is named, its password masked; the
    # others are still checked.
    _create_cell(run, 'down', DOWN_DB)
    down = run('db', 'check')
    assert down.code == 1
    assert 'gantt-manage: error: cell down was not checked: cannot use ' \
        'the database at postgresql+psycopg2://gantt:***@127.0.0.1:1/' \
        'gantt_down' in down.err
    assert 'down: not checked' in down.out
    assert 's3cret' not in down.out + down.err
    assert 'cell2: 1 problem(s)' in down.out
    assert output.table(down.out)[0][0] == not_running
