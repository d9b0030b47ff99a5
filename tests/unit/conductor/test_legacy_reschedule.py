"""Reschedules through the scheduler when the client speaks only API 1.0.

API 1.0 has no alternates, so a failed build makes the conductor ask the
scheduler again with the hosts tried so far (Nova before alternates). The
real conductor, scheduler and computes run in-process over fake://.
"""

import logging
import re

import pytest
import sqlalchemy as sa

from conductor.tasks import build
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler.objects import selection as selection_obj
from scheduler import rpcapi as scheduler_rpcapi
from tests.unit import inprocess

SMALL = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}
BIG = {'vcpus': 16, 'memory_mb': 65536, 'local_gb': 1000}
FILTERS = ['RetryFilter', 'ComputeFilter', 'RamFilter', 'CoreFilter',
           'DiskFilter']
# Host names that cannot occur in a UUID, so a fault can be searched.
BROKEN = ('qx1', 'qx2', 'qx3')


@pytest.fixture
def legacy_config(database, config):
    inprocess.configure(config, exact_ratios=True)
    config.config(scheduler='1.0', group='upgrade_levels')
    config.config(max_attempts=3, group='scheduler')
    config.config(enabled_filters=FILTERS, group='filter_scheduler')
    return config


def _allocations():
    with db_api.reader() as session:
        rows = session.execute(sa.select(
            models.Allocation.consumer_uuid,
            models.ComputeNode.host).join(
                models.ComputeNode,
                models.ComputeNode.id ==
                models.Allocation.compute_node_id)).all()
    return [(row.consumer_uuid, row.host) for row in rows]


def _usage():
    nodes = models.ComputeNode.__table__
    with db_api.reader() as session:
        return {row.host: (row.vcpus_used, row.memory_mb_used,
                           row.local_gb_used)
                for row in session.execute(sa.select(
                    nodes.c.host, nodes.c.vcpus_used, nodes.c.memory_mb_used,
                    nodes.c.local_gb_used))}


def _hosts_tried(fault):
    return re.search(r'Hosts tried: ([^.]*)\.', fault).group(1).split(', ')


def test_failed_build_is_rescheduled_through_the_scheduler(legacy_config):
    broken = dict(BIG, build_failure_rate=1.0)
    with inprocess.Cluster({'broken': broken, 'h2': SMALL,
                            'h3': SMALL}) as cluster:
        assert not scheduler_rpcapi.SchedulerAPI().client.can_send_version(
            '1.1')
        uuids = cluster.boot(vcpus=1, memory_mb=1024, root_gb=10, count=2)
        rows = cluster.wait_built(uuids)
    # RAMWeigher sends both to the broken host first (the most free RAM);
    # 1.0 gives no alternates, so only the scheduler could move them.
    for uuid in uuids:
        assert rows[uuid].vm_state == 'active', rows[uuid].fault
        assert rows[uuid].host in ('h2', 'h3')
    assert sorted(_allocations()) == sorted(
        (uuid, rows[uuid].host) for uuid in uuids)
    assert _usage()['broken'] == (0, 0, 0)


def test_every_host_broken_exceeds_max_retries(legacy_config):
    broken = dict(SMALL, build_failure_rate=1.0)
    with inprocess.Cluster({host: broken for host in BROKEN}) as cluster:
        uuids = cluster.boot(vcpus=1, memory_mb=1024, root_gb=10)
        rows = cluster.wait_built(uuids)
    row = rows[uuids[0]]
    assert row.vm_state == 'error'
    assert row.host is None
    assert row.fault.startswith('Exceeded maximum number of retries.')
    # RetryFilter kept each tried host out of the next attempt.
    assert sorted(_hosts_tried(row.fault)) == sorted(BROKEN)
    assert _allocations() == []
    assert set(_usage().values()) == {(0, 0, 0)}


def test_no_host_left_for_the_reschedule(legacy_config):
    legacy_config.config(max_attempts=5, group='scheduler')
    broken = dict(BIG, build_failure_rate=1.0)
    with inprocess.Cluster({'broken': broken, 'h2': SMALL}) as cluster:
        # Only the broken host has the memory; after it fails RetryFilter
        # leaves nothing.
        uuids = cluster.boot(vcpus=1, memory_mb=16384, root_gb=10)
        rows = cluster.wait_built(uuids)
    row = rows[uuids[0]]
    assert row.vm_state == 'error'
    assert row.fault.startswith('No valid host was found.')
    assert 'RetryFilter' in row.fault
    assert 'Traceback' not in row.fault
    assert _allocations() == []
    assert set(_usage().values()) == {(0, 0, 0)}


def test_without_retry_filter_tried_hosts_come_back(legacy_config, caplog):
    legacy_config.config(enabled_filters=FILTERS[1:],
                         group='filter_scheduler')
    legacy_config.config(max_attempts=2, group='scheduler')
    broken = dict(SMALL, build_failure_rate=1.0)
    with caplog.at_level(logging.WARNING):
        with inprocess.Cluster({BROKEN[0]: broken}) as cluster:
            uuids = cluster.boot(vcpus=1, memory_mb=1024, root_gb=10)
            rows = cluster.wait_built(uuids)
    row = rows[uuids[0]]
    assert row.vm_state == 'error'
    assert _hosts_tried(row.fault) == [BROKEN[0], BROKEN[0]]
    warnings = [record.getMessage() for record in caplog.records
                if 'RetryFilter is not enabled' in record.getMessage()]
    # One warning, for the one request that came back.
    assert len(warnings) == 1
    assert '%s/%s' % (BROKEN[0], BROKEN[0]) in warnings[0]
    assert 'enabled_filters' in warnings[0]
    assert _allocations() == []


def _send_by_legacy_reschedule(uuid, selection):
    build.BuildTask._take_placement(uuid, selection)


def _send_by_first_build(uuid, selection):
    # The task has no compute API: sending the build would fail the test.
    build.BuildTask(None, None)._send_to(None, uuid, None, selection, [])


@pytest.mark.parametrize('send', [_send_by_legacy_reschedule,
                                  _send_by_first_build])
def test_placement_of_a_reaped_instance_releases_its_claim(database, send):
    """The scheduler claimed for an instance that timed out meanwhile
    (a reschedule or a first build): the claim is given back, nothing is
    sent, and the instance stays in ERROR, off any host."""
    uuid = '0b6f3c1a-9e2d-4b7a-8c5f-1d2e3f4a5b6c'
    with db_api.writer() as session:
        node_id = db_compute_nodes.report_inventory(
            session, '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a', 'h2', 'h2',
            dict(SMALL))
        db_instances.create(session, uuid, flavor={}, request_spec={})
        db_instances.update(session, uuid, vm_state='error',
                            task_state=None, fault='timed out')
        assert claims.claim_resources(session, node_id, uuid,
                                      claims.Resources(1, 1024, 10))
    selection = selection_obj.Selection(
        compute_node_uuid=None, service_host='h2', nodename='h2',
        limits={}, allocation_request=None, claimed=True)

    send(uuid, selection)

    with db_api.reader() as session:
        row = db_instances.get(session, uuid)
    assert (row.vm_state, row.host, row.task_state, row.fault) == (
        'error', None, None, 'timed out')
    assert _allocations() == []
    assert _usage() == {'h2': (0, 0, 0)}
