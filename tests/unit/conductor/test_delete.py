"""Delete (compute_task 1.2) through the real conductor, scheduler and
compute services in-process: everything the server held is released, the
schedulers stop counting it, and a delete cut short is finished by the
conductor's periodic task."""

import datetime

import pytest
import sqlalchemy as sa

from conductor import rpcapi as conductor_rpcapi
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler import exception
from tests.unit.conductor import sql_state
from tests.unit import inprocess

HOST = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}
FLAVOR = {'vcpus': 2, 'memory_mb': 2048, 'root_gb': 10}
UNKNOWN = '00000000-0000-4000-8000-0000000000aa'


@pytest.fixture
def cluster_config(database, config):
    # The schedulers' cache refreshes slowly: what they forget of a
    # deleted server, they heard through the delete's fanout.
    return inprocess.configure(config, refresh_interval=3600,
                               exact_ratios=True)


def _api():
    return conductor_rpcapi.ComputeTaskAPI()


def _boot_active(cluster):
    [uuid] = cluster.boot(**FLAVOR)
    row = cluster.wait_built([uuid])[uuid]
    assert row.vm_state == 'active'
    return row


def _service(cluster, binary, host=None):
    return next(server for server in cluster.services
                if server.binary == binary
                and (host is None or server.host == host))


def _scheduler_view(cluster):
    manager = _service(cluster, 'gantt-scheduler').manager
    table = manager.driver.host_manager.request_snapshot()
    return {state.host: set(state.instances) for state in table.states}


def _host_of(uuid):
    try:
        return sql_state.instance(uuid).host
    except exception.InstanceNotFound:
        return None   # not recorded yet


def _assert_deleted(uuid):
    row = sql_state.instance(uuid)
    assert (row.vm_state, row.task_state, row.host, row.node) == (
        'deleted', None, None, None)
    assert row.deleted == row.id and row.deleted_at is not None
    assert uuid not in sql_state.allocations()
    sql_state.assert_consistent()
    return row


def test_delete_releases_everything_and_tells_the_schedulers(
        cluster_config):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        row = _boot_active(cluster)
        compute = _service(cluster, 'gantt-compute', 'h1').manager
        cluster.wait_until(
            lambda: _scheduler_view(cluster) == {'h1': {row.uuid}}, 10,
            'the scheduler to count the server')
        assert sql_state.usage() == {'h1': (2, 2048, 10)}

        answer = _api().delete_instance(sql_state.ctxt(), row.uuid)

        assert (answer['uuid'], answer['vm_state'],
                answer['task_state']) == (row.uuid, 'deleted', None)
        _assert_deleted(row.uuid)
        assert sql_state.usage() == {'h1': (0, 0, 0)}
        assert row.uuid not in compute._instances
        cluster.wait_until(lambda: _scheduler_view(cluster) == {'h1': set()},
                           10, 'the scheduler to forget the server')


def test_delete_again_answers_the_deleted_server(cluster_config):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        row = _boot_active(cluster)
        _api().delete_instance(sql_state.ctxt(), row.uuid)
        first = _assert_deleted(row.uuid)

        again = _api().delete_instance(sql_state.ctxt(), row.uuid)

        assert again['vm_state'] == 'deleted'
        assert tuple(_assert_deleted(row.uuid)) == tuple(first)


def test_unknown_or_malformed_uuid_is_refused_and_changes_nothing(
        cluster_config):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        _boot_active(cluster)
        before = sql_state.snapshot()
        with pytest.raises(exception.InstanceNotFound, match=UNKNOWN):
            _api().delete_instance(sql_state.ctxt(), UNKNOWN)
        with pytest.raises(exception.InvalidRequest, match='must be a UUID'):
            _api().delete_instance(sql_state.ctxt(), 'not-a-uuid')
        assert sql_state.snapshot() == before


def test_delete_refused_while_another_task_is_under_way(cluster_config):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        row = _boot_active(cluster)
        with db_api.writer() as session:
            session.execute(sa.update(models.Instance.__table__)
                            .where(models.Instance.uuid == row.uuid)
                            .values(task_state='resize_prep'))
        before = sql_state.snapshot()
        with pytest.raises(exception.InstanceInvalidState,
                           match='resize_prep'):
            _api().delete_instance(sql_state.ctxt(), row.uuid)
        assert sql_state.snapshot() == before


def test_delete_of_a_building_server_wins_over_its_spawn(cluster_config,
                                                         caplog):
    cluster_config.config(spawn_time=1.5, group='fake_virt')
    with inprocess.Cluster({'h1': HOST}) as cluster:
        compute = _service(cluster, 'gantt-compute', 'h1').manager
        [uuid] = cluster.boot(**FLAVOR)
        cluster.wait_until(lambda: _host_of(uuid) == 'h1', 10,
                           'the build to reach its compute')
        assert sql_state.instance(uuid).vm_state == 'building'

        answer = _api().delete_instance(sql_state.ctxt(), uuid)

        assert answer['vm_state'] == 'deleted'
        # The spawn ends after the delete: its ACTIVE report is refused
        # and the compute forgets the server.
        cluster.wait_until(
            lambda: any('forgetting it' in record.getMessage()
                        for record in caplog.records), 10,
            'the refused spawn report')
        assert uuid not in compute._instances
        _assert_deleted(uuid)
        assert sql_state.usage() == {'h1': (0, 0, 0)}


def test_delete_when_the_compute_is_down_is_local(cluster_config, caplog):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        row = _boot_active(cluster)
        sql_state.set_service('h1', forced_down=True)
        compute = _service(cluster, 'gantt-compute', 'h1').manager

        answer = _api().delete_instance(sql_state.ctxt(), row.uuid)

        assert answer['vm_state'] == 'deleted'
        _assert_deleted(row.uuid)
        assert sql_state.usage() == {'h1': (0, 0, 0)}
        # The compute was not asked: it still counts the server.
        assert row.uuid in compute._instances
    assert any('is down: deleting instance %s locally' % row.uuid
               in record.getMessage() for record in caplog.records)


def test_interrupted_delete_is_finished_by_the_periodic_task(
        cluster_config):
    cluster_config.config(delete_retry_interval=30, group='conductor')
    with inprocess.Cluster({'h1': HOST}) as cluster:
        row = _boot_active(cluster)
        # A conductor died right after it took the server for deletion.
        with db_api.writer() as session:
            session.execute(sa.update(models.Instance.__table__)
                            .where(models.Instance.uuid == row.uuid)
                            .values(task_state='deleting'))
        manager = _service(cluster, 'gantt-conductor').manager
        tasks = manager.compute_task_mgr

        # Too recent: left alone.
        assert tasks.delete_task.finish_interrupted(sql_state.ctxt()) == 0
        assert sql_state.instance(row.uuid).vm_state == 'active'

        with db_api.writer() as session:
            session.execute(
                sa.update(models.Instance.__table__)
                .where(models.Instance.uuid == row.uuid)
                .values(updated_at=models.utcnow()
                        - datetime.timedelta(seconds=31)))
        tasks.run_periodic_tasks(sql_state.ctxt())

        _assert_deleted(row.uuid)
        assert sql_state.usage() == {'h1': (0, 0, 0)}
        assert tasks.delete_task.finish_interrupted(sql_state.ctxt()) == 0
