"""Shelve, offload and unshelve through the real conductor, scheduler and
computes, in-process (fake:// transport, the test's SQLite file), called
through the real RPC client conductor.rpcapi.ComputeTaskAPI."""

import concurrent.futures
import datetime

import pytest
import sqlalchemy as sa

from conductor import rpcapi as conductor_rpcapi
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler import exception
from scheduler import host_cache
from tests.unit.conductor import sql_state
from tests.unit import inprocess

HOST = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}
FLAVOR = {'vcpus': 2, 'memory_mb': 2048, 'root_gb': 10}


@pytest.fixture
def cluster_config(database, config):
    return inprocess.configure(config, exact_ratios=True)


def _api():
    return conductor_rpcapi.ComputeTaskAPI()


def _boot(cluster, **flavor):
    [uuid] = cluster.boot(**(flavor or FLAVOR))
    row = cluster.wait_built([uuid])[uuid]
    assert row.vm_state == 'active'
    return row


def _shelve_task(cluster):
    conductor = cluster.services[0]
    return conductor.manager.compute_task_mgr.shelve_task


def _compute(cluster, host):
    [agent] = [s.manager for s in cluster.services if s.host == host and
               s.binary == 'gantt-compute']
    return agent


def _age(uuid, seconds):
    """Make the instance look last changed ``seconds`` ago."""
    with db_api.writer() as session:
        session.execute(
            sa.update(models.Instance.__table__)
            .where(models.Instance.uuid == uuid)
            .values(updated_at=models.utcnow()
                    - datetime.timedelta(seconds=seconds)))


def test_shelve_offloads_at_once_and_releases_the_claim(cluster_config):
    cluster_config.config(shelved_offload_time=0)
    with inprocess.Cluster({'h1': HOST}) as cluster:
        row = _boot(cluster)
        assert row.uuid in _compute(cluster, 'h1')._instances
        answer = _api().shelve_instance(sql_state.ctxt(), row.uuid)
        still_on_agent = row.uuid in _compute(cluster, 'h1')._instances
    assert (answer['vm_state'], answer['task_state']) == (
        'shelved_offloaded', None)
    assert (answer['host'], answer['node']) == (None, None)
    assert not still_on_agent
    assert sql_state.allocations() == {}
    assert sql_state.usage() == {'h1': (0, 0, 0)}
    sql_state.assert_consistent()


def test_shelve_without_offload_keeps_host_and_claim(cluster_config):
    cluster_config.config(shelved_offload_time=-1)
    with inprocess.Cluster({'h1': HOST, 'h2': HOST}) as cluster:
        row = _boot(cluster)
        answer = _api().shelve_instance(sql_state.ctxt(), row.uuid)
        assert (answer['vm_state'], answer['host']) == ('shelved', row.host)
        _age(row.uuid, 10 ** 6)
        assert _shelve_task(cluster).offload_expired(sql_state.ctxt()) == 0
        assert sql_state.instance(row.uuid).vm_state == 'shelved'
        assert sql_state.allocations() == {row.uuid: row.host}
        # Unshelving a shelved (not offloaded) instance: where it is.
        answer = _api().unshelve_instance(sql_state.ctxt(), row.uuid)
    assert (answer['vm_state'], answer['task_state'], answer['host']) == (
        'active', None, row.host)
    assert sql_state.allocations() == {row.uuid: row.host}
    sql_state.assert_consistent()


def test_periodic_offload_after_the_shelved_time(cluster_config):
    cluster_config.config(shelved_offload_time=30)
    with inprocess.Cluster({'h1': HOST}) as cluster:
        row = _boot(cluster)
        _api().shelve_instance(sql_state.ctxt(), row.uuid)
        task = _shelve_task(cluster)
        # Not yet: shelved for less than 30 s.
        assert task.offload_expired(sql_state.ctxt()) == 0
        assert sql_state.allocations() == {row.uuid: 'h1'}
        _age(row.uuid, 31)
        # Two conductors at once: one offloads it.
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            counts = list(pool.map(
                lambda _: task.offload_expired(sql_state.ctxt()), range(2)))
        after = sql_state.instance(row.uuid)
    assert sorted(counts) == [0, 1]
    assert (after.vm_state, after.task_state, after.host) == (
        'shelved_offloaded', None, None)
    assert sql_state.allocations() == {}
    assert sql_state.usage() == {'h1': (0, 0, 0)}
    sql_state.assert_consistent()


def test_unshelve_lands_and_claims(cluster_config):
    with inprocess.Cluster({'h1': HOST, 'h2': HOST}) as cluster:
        row = _boot(cluster)
        _api().shelve_instance(sql_state.ctxt(), row.uuid)
        answer = _api().unshelve_instance(sql_state.ctxt(), row.uuid)
        host = answer['host']
        on_agent = row.uuid in _compute(cluster, host)._instances
    assert (answer['vm_state'], answer['task_state']) == ('active', None)
    assert host in ('h1', 'h2') and answer['node'] == host
    assert on_agent
    assert sql_state.allocations() == {row.uuid: host}
    assert sql_state.usage()[host] == (2, 2048, 10)
    sql_state.assert_consistent()


def test_unshelve_without_room_stays_offloaded(cluster_config):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        row = _boot(cluster)
        _api().shelve_instance(sql_state.ctxt(), row.uuid)
        cluster.wait_scheduler_sees(
            'h1', lambda state: not any(
                state.used(resource) for resource in host_cache.RESOURCES),
            'with nothing claimed')
        # Something else takes the whole host meanwhile.
        big = _boot(cluster, vcpus=4, memory_mb=8192, root_gb=100)
        with pytest.raises(exception.NoValidHost) as caught:
            _api().unshelve_instance(sql_state.ctxt(), row.uuid)
    after = sql_state.instance(row.uuid)
    assert str(caught.value).startswith(
        'Unshelve of %s found no host: No valid host' % row.uuid)
    assert (after.vm_state, after.task_state, after.host) == (
        'shelved_offloaded', None, None)
    assert after.fault.startswith('Unshelve of %s found no host' % row.uuid)
    assert 'RamFilter' in after.fault
    assert 'Traceback' not in after.fault
    assert sql_state.allocations() == {big.uuid: 'h1'}
    sql_state.assert_consistent()


def test_bad_shelve_requests_change_nothing(cluster_config):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        active = _boot(cluster)
        offloaded = _boot(cluster, vcpus=1, memory_mb=512, root_gb=1)
        ctxt = sql_state.ctxt()
        api = _api()
        api.shelve_instance(ctxt, offloaded.uuid)
        before = sql_state.snapshot()
        unknown = '00000000-0000-4000-8000-000000000000'
        for call, uuid, error, words in [
                (api.shelve_instance, unknown, exception.InstanceNotFound,
                 unknown),
                (api.unshelve_instance, unknown, exception.InstanceNotFound,
                 unknown),
                (api.unshelve_instance, active.uuid,
                 exception.InstanceInvalidState, 'vm_state active'),
                (api.shelve_instance, offloaded.uuid,
                 exception.InstanceInvalidState,
                 'vm_state shelved_offloaded'),
                (api.shelve_instance, 'not-a-uuid',
                 exception.InvalidRequest, 'must be a UUID'),
                (api.unshelve_instance, 42, exception.InvalidRequest,
                 'must be a UUID')]:
            with pytest.raises(error) as caught:
                call(ctxt, uuid)
            assert words in str(caught.value), (call, uuid)
            assert sql_state.snapshot() == before, (call, uuid)
