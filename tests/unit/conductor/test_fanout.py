"""Fanout casts reach the real scheduler service, in-process.

The schedulers' host cache refresh is slowed to an hour, so whatever the
scheduler knows beyond its first load came through a cast.
"""

import pytest

from scheduler import context as gantt_context
from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.objects import aggregate as aggregate_obj
from scheduler import rpcapi as scheduler_rpcapi
from tests.unit import inprocess

HOST = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}


@pytest.fixture
def slow_refresh_config(database, config):
    return inprocess.configure(config, refresh_interval=3600)


def _scheduler_manager(cluster):
    return next(server.manager for server in cluster.services
                if server.binary == 'gantt-scheduler')


def _zones(cluster):
    table = _scheduler_manager(cluster).driver.host_manager.snapshot()
    return {state.host: state.availability_zone for state in table.states}


def test_aggregate_fanout_applies_before_any_refresh(slow_refresh_config):
    with inprocess.Cluster({'h1': HOST, 'h2': HOST}) as cluster:
        assert _zones(cluster) == {'h1': 'nova', 'h2': 'nova'}
        with db_api.writer() as session:
            agg = db_aggregates.create(
                session, 'rack', metadata={'availability_zone': 'az1'})
            agg = db_aggregates.add_host(session, agg.id, 'h2')
        api = scheduler_rpcapi.SchedulerAPI()
        ctxt = gantt_context.get_admin_context()
        assert api.update_aggregates(
            ctxt, [aggregate_obj.Aggregate.from_db(agg)])
        cluster.wait_until(lambda: _zones(cluster)['h2'] == 'az1', 10,
                           'the scheduler to apply the fanout')
        uuids = cluster.boot(vcpus=1, memory_mb=512, root_gb=1, count=2,
                             availability_zone='az1')
        rows = cluster.wait_built(uuids)
        assert {row.host for row in rows.values()} == {'h2'}

        assert api.delete_aggregate(ctxt,
                                    aggregate_obj.Aggregate.from_db(agg))
        cluster.wait_until(lambda: _zones(cluster)['h2'] == 'nova', 10,
                           'the scheduler to forget the aggregate')


def test_malformed_fanout_is_dropped(slow_refresh_config, caplog):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        manager = _scheduler_manager(cluster)
        manager.update_aggregates(None, aggregates=['not an aggregate'])
        manager.delete_aggregate(None, aggregate={'id': 1})
        assert _zones(cluster) == {'h1': 'nova'}
    assert 'Dropped update_aggregates' in caplog.text
    assert 'Dropped delete_aggregate' in caplog.text


def _instances_by_host(cluster):
    manager = _scheduler_manager(cluster).driver.host_manager
    table = manager.request_snapshot()
    return {state.host: set(state.instances) for state in table.states}


def _compute(cluster, host):
    return next(server.manager for server in cluster.services
                if server.host == host and server.binary == 'gantt-compute')


def test_computes_keep_the_scheduler_view_of_instances(slow_refresh_config):
    slow_refresh_config.config(max_attempts=2, group='scheduler')
    broken = dict(HOST, memory_mb=16384, build_failure_rate=1.0)
    with inprocess.Cluster({'broken': broken, 'h2': HOST}) as cluster:
        host_manager = _scheduler_manager(cluster).driver.host_manager
        [uuid] = cluster.boot(vcpus=1, memory_mb=512, root_gb=1)
        rows = cluster.wait_built([uuid])
        assert rows[uuid].host == 'h2'
        # The claim put it on 'broken'; the failed build took it off
        # (delete_instance_info) and h2's spawn reported it.
        cluster.wait_until(
            lambda: _instances_by_host(cluster) == {'broken': set(),
                                                    'h2': {uuid}},
            10, 'the computes to report the instance')
        assert host_manager.stats['instance_updates'] >= 2

        # A view out of step is put right by the next sync, from SQL.
        host_manager.update_instance_info('broken', {uuid: None})
        resyncs = host_manager.stats['instance_resyncs']
        _compute(cluster, 'broken').sync_scheduler_instance_info(
            gantt_context.get_admin_context())
        cluster.wait_until(
            lambda: host_manager.stats['instance_resyncs'] > resyncs, 10,
            'the scheduler to resync')
        assert _instances_by_host(cluster) == {'broken': set(),
                                               'h2': {uuid}}


def test_without_tracking_computes_stay_silent(slow_refresh_config):
    slow_refresh_config.config(track_instance_changes=False,
                               group='filter_scheduler')
    with inprocess.Cluster({'h1': HOST}) as cluster:
        host_manager = _scheduler_manager(cluster).driver.host_manager
        uuids = cluster.boot(vcpus=1, memory_mb=512, root_gb=1, count=2)
        cluster.wait_built(uuids)
        _compute(cluster, 'h1').sync_scheduler_instance_info(
            gantt_context.get_admin_context())
        assert _instances_by_host(cluster) == {'h1': set(uuids)}
        assert host_manager.stats['instance_updates'] == 0
        assert host_manager.stats['instance_resyncs'] == 0


def test_malformed_instance_casts_are_dropped(slow_refresh_config, caplog):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        manager = _scheduler_manager(cluster)
        manager.update_instance_info(None, host_name='h1',
                                     instance_info=[{'uuid': 'x'}])
        manager.delete_instance_info(None, host_name='h1',
                                     instance_uuid='not-a-uuid')
        manager.sync_instance_info(None, host_name=None, instance_uuids=[])
        assert _instances_by_host(cluster) == {'h1': set()}
    for method in ('update_instance_info', 'delete_instance_info',
                   'sync_instance_info'):
        assert 'Dropped %s' % method in caplog.text
