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
    inprocess.use_fake_transport(config)
    config.config(reserved_host_memory_mb=0, report_interval=1)
    config.config(host_state_refresh_interval=3600, group='scheduler')
    return config


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
