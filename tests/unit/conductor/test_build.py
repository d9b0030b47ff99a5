"""Builds through the real conductor, scheduler and computes, in-process.

The transport is oslo.messaging's fake:// and the database the test's
SQLite file; nothing is mocked.
"""

import re

import pytest
import sqlalchemy as sa

from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler import rpcapi as scheduler_rpcapi
from tests.unit import inprocess

SMALL = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}
BIG = {'vcpus': 16, 'memory_mb': 65536, 'local_gb': 1000}


@pytest.fixture
def cluster_config(database, config):
    return inprocess.configure(config, exact_ratios=True)


def _allocations():
    with db_api.reader() as session:
        rows = session.execute(sa.select(
            models.Allocation.consumer_uuid,
            models.ComputeNode.host).join(
                models.ComputeNode,
                models.ComputeNode.id ==
                models.Allocation.compute_node_id)).all()
    return {row.consumer_uuid: row.host for row in rows}


def test_build_lands_on_hosts_and_claims(cluster_config):
    with inprocess.Cluster({'h1': SMALL, 'h2': BIG}) as cluster:
        uuids = cluster.boot(vcpus=2, memory_mb=2048, root_gb=10, count=3)
        rows = cluster.wait_built(uuids)
    assert {row.vm_state for row in rows.values()} == {'active'}
    # RAMWeigher: the big host has the most free RAM for all three.
    assert {row.host for row in rows.values()} == {'h2'}
    assert _allocations() == {uuid: 'h2' for uuid in uuids}


def test_no_valid_host_is_recorded_with_the_filter(cluster_config):
    with inprocess.Cluster({'h1': SMALL, 'h2': BIG}) as cluster:
        uuids = cluster.boot(vcpus=2, memory_mb=128 * 1024, root_gb=10)
        rows = cluster.wait_built(uuids)
    row = rows[uuids[0]]
    assert row.vm_state == 'error'
    assert row.host is None
    assert 'No valid host' in row.fault
    assert 'RamFilter' in row.fault
    assert 'Traceback' not in row.fault
    assert _allocations() == {}


def test_failed_build_moves_to_an_alternate(cluster_config):
    cluster_config.config(max_attempts=3, group='scheduler')
    broken = dict(BIG, build_failure_rate=1.0)
    with inprocess.Cluster({'broken': broken, 'h2': SMALL,
                            'h3': SMALL}) as cluster:
        uuids = cluster.boot(vcpus=1, memory_mb=1024, root_gb=10)
        rows = cluster.wait_built(uuids)
    row = rows[uuids[0]]
    assert row.vm_state == 'active'
    assert row.host in ('h2', 'h3')
    # The claim on the broken host was dropped; only the alternate's stays.
    assert _allocations() == {uuids[0]: row.host}


def test_max_retries_exceeded_names_the_hosts_tried(cluster_config):
    cluster_config.config(max_attempts=2, group='scheduler')
    broken = dict(SMALL, build_failure_rate=1.0)
    hosts = ('qx1', 'qx2', 'qx3')   # names that cannot occur in a UUID
    with inprocess.Cluster({host: broken for host in hosts}) as cluster:
        uuids = cluster.boot(vcpus=1, memory_mb=1024, root_gb=10)
        rows = cluster.wait_built(uuids)
    row = rows[uuids[0]]
    assert row.vm_state == 'error'
    assert 'Exceeded maximum number of retries' in row.fault
    tried = re.search(r'Hosts tried: ([^.]*)\.', row.fault).group(1)
    tried = tried.split(', ')
    assert len(tried) == 2 and len(set(tried)) == 2
    assert set(tried) <= set(hosts)
    assert _allocations() == {}


def test_capped_client_steps_down_to_legacy_dicts(cluster_config):
    cluster_config.config(scheduler='1.0', group='upgrade_levels')
    with inprocess.Cluster({'h1': SMALL, 'h2': BIG}) as cluster:
        api = scheduler_rpcapi.SchedulerAPI()
        assert not api.client.can_send_version('1.1')
        spec = cluster.spec(vcpus=1, memory_mb=1024, root_gb=1, count=2)
        uuids = ['2f1d1b8e-6a2b-4bb8-9d2a-0c0f5a3c9d0%d' % i
                 for i in range(2)]
        selections = api.select_destinations(
            gantt_context.get_admin_context(), spec, uuids,
            return_alternates=True)
    assert [len(alternates) for alternates in selections] == [1, 1]
    assert all(s[0].service_host == 'h2' and s[0].claimed
               for s in selections)
    assert _allocations() == {uuid: 'h2' for uuid in uuids}


def test_current_client_gets_alternates(cluster_config):
    cluster_config.config(max_attempts=3, group='scheduler')
    with inprocess.Cluster({'h1': SMALL, 'h2': BIG, 'h3': SMALL}) as cluster:
        api = scheduler_rpcapi.SchedulerAPI()
        spec = cluster.spec(vcpus=1, memory_mb=1024, root_gb=1)
        uuid = '2f1d1b8e-6a2b-4bb8-9d2a-0c0f5a3c9d0a'
        [alternates] = api.select_destinations(
            gantt_context.get_admin_context(), spec, [uuid],
            return_alternates=True)
    assert len(alternates) == 3
    assert alternates[0].claimed and alternates[0].service_host == 'h2'
    assert not any(s.claimed for s in alternates[1:])
    assert {s.service_host for s in alternates[1:]} == {'h1', 'h3'}
    assert _allocations() == {uuid: 'h2'}
