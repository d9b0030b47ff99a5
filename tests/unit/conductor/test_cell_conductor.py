"""What a conductor does for its own cell: reschedules from alternates in
its cell's database, and no moves to another cell.

In-process services over fake:// and SQLite. The scheduler on this
branch reads hosts from one database only; a scheduler that reads every
cell (another branch) may offer a host of another cell for a move, and
that answer is played here by wrapping the real scheduler client so that
it returns a host this cell's database does not have.
"""

from oslo_utils import uuidutils
import pytest

from conductor.tasks import common
from scheduler.db import api as db_api
from scheduler.db import mappings
from scheduler import exception
from scheduler.objects import selection as selection_obj
from scheduler import rpcapi as scheduler_rpcapi
from tests.unit.conductor import move_checks as checks
from tests.unit.conductor import test_super_build as super_checks
from tests.unit import inprocess

HOST = {'vcpus': 8, 'memory_mb': 16384, 'local_gb': 200}
FAILING = dict(HOST, build_failure_rate=1.0)


@pytest.fixture
def cluster_config(database, config):
    return inprocess.configure(config, exact_ratios=True)


@pytest.fixture
def supercell(database, api_database, config, cell0_url):
    inprocess.configure(config, exact_ratios=True)
    with db_api.api_writer() as session:
        mappings.create_cell(session, super_checks.CELL1, 'cell1', None,
                             database)
    super_checks.map_cell0(cell0_url)
    return config


cell0_url = super_checks.cell0_url


def test_reschedules_use_alternates_and_exhaustion_stays_in_the_cell(
        supercell, database, cell0_url, caplog):
    # One conductor serves both roles here (one broker): a compute's
    # failure report is handled as a cell conductor does.
    # h1 (the most free RAM: first choice) fails every build.
    small = {'vcpus': 2, 'memory_mb': 4096, 'local_gb': 40}
    with inprocess.Cluster({'h1': FAILING, 'h2': small}) as cluster:
        [good] = cluster.boot(vcpus=1, memory_mb=512, root_gb=1)
        [bad] = cluster.boot(vcpus=4, memory_mb=512, root_gb=1)
        rows = cluster.wait_built([good, bad])
    assert (rows[good].vm_state, rows[good].host) == ('active', 'h2')
    assert 'Build of %s failed on h1/h1' % good in caplog.text
    assert super_checks.api_state()[good] == ('cell1', 'none')
    assert rows[bad].vm_state == 'error'
    assert 'Exhausted all hosts' in rows[bad].fault
    assert super_checks.rows_in(cell0_url) == {}
    assert super_checks.api_state()[bad] == ('cell1', 'none')
    assert super_checks.allocations() == 1


def _offer_a_host_of_another_cell(monkeypatch):
    real = scheduler_rpcapi.SchedulerAPI.select_destinations

    def other_cell(self, ctxt, spec, uuids, return_objects=True,
                   return_alternates=False):
        real(self, ctxt, spec, uuids, return_objects=return_objects,
             return_alternates=return_alternates)
        return [[selection_obj.Selection(
            compute_node_uuid=uuidutils.generate_uuid(),
            service_host='c2', nodename='c2', claimed=True)]]
    monkeypatch.setattr(scheduler_rpcapi.SchedulerAPI,
                        'select_destinations', other_cell)


def test_a_move_to_another_cell_is_refused(cluster_config, monkeypatch):
    with inprocess.Cluster({'h1': checks.BIG, 'h2': checks.SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        _offer_a_host_of_another_cell(monkeypatch)
        with pytest.raises(exception.NoValidHost,
                           match='moving a server to another cell is not '
                                 'supported'):
            checks.api().migrate_server(checks.ctxt(), uuid)
    row = checks.instance(uuid)
    assert (row.vm_state, row.task_state, row.host) == ('active', None, 'h1')
    assert checks.allocations() == {uuid: ('h1',) + checks.CLAIM}
    checks.assert_consistent()


def test_a_node_this_cell_does_not_have_is_refused(database):
    selection = selection_obj.Selection(
        compute_node_uuid=uuidutils.generate_uuid(), service_host='h9',
        nodename='h9')
    with pytest.raises(exception.CrossCellMoveNotSupported,
                       match="Instance u1 cannot move to host h9: the "
                             "instance is in this conductor's cell and the "
                             "host in another cell"):
        common.refuse_other_cell('u1', inprocess.Cluster.spec(1, 512, 1),
                                 selection)


def test_the_super_conductor_runs_operations_in_the_instance_cell(
        supercell, database, cell0_url):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        [buried] = cluster.boot(vcpus=64, memory_mb=512, root_gb=1)
        super_checks.wait_for(
            lambda: super_checks.api_state()[buried][0] == 'cell0',
            'the mapping to cell0')
        # cell0's row, not [database]'s (cell1): found and deleted there.
        answer = checks.api().delete_instance(checks.ctxt(), buried)
        assert answer['vm_state'] == 'deleted'
        assert super_checks.rows_in(cell0_url)[buried].vm_state == 'deleted'

        with pytest.raises(exception.InstanceNotFound):
            checks.api().shelve_instance(checks.ctxt(),
                                         uuidutils.generate_uuid())
        waiting, elsewhere = (uuidutils.generate_uuid() for _ in range(2))
        with db_api.api_writer() as session:
            mappings.create_instance_mapping(session, waiting, 'p1')
            cell9 = mappings.create_cell(
                session, uuidutils.generate_uuid(), 'cell9',
                'rabbit://u:p@mq9:5672/', database)
            mappings.create_instance_mapping(session, elsewhere, 'p1', cell9)
        with pytest.raises(exception.InvalidRequest,
                           match='still being scheduled'):
            checks.api().shelve_instance(checks.ctxt(), waiting)
        with pytest.raises(exception.InvalidRequest,
                           match='in cell cell9, which has a broker of its '
                                 'own'):
            checks.api().migrate_server(checks.ctxt(), elsewhere)
