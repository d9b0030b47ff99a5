"""The conductor's reaper: builds stuck in BUILDING time out, their claims
are released, and a spawn reported after that is refused."""

import datetime

import pytest
import sqlalchemy as sa

from conductor.tasks import reaper
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import claim_checks
from scheduler.db import claims
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import models
from tests.unit import inprocess
from tests.unit.db import test_claims

FLAVOR = {'vcpus': 1, 'memory_mb': 512, 'root_gb': 10}
ONE = claims.Resources(1, 512, 10)
UUIDS = {name: '7c1e2a4e-0d6b-4f0e-9a55-00000000000%d' % index
         for index, name in enumerate(('stuck', 'stuck_unplaced', 'young',
                                       'active'))}


def _add_node(session):
    return db_compute_nodes.report_inventory(
        session, '5b8c9f6e-3a1d-4c8e-8f3b-6d2e1a0b9c7d', 'cmp1', 'cmp1',
        {'vcpus': 8, 'memory_mb': 16384, 'local_gb': 500})


def _add_instance(session, uuid, node_id=None, vm_state='building',
                  age=0):
    db_instances.create(session, uuid, flavor=FLAVOR, request_spec={})
    if node_id is not None:
        assert claims.claim_resources(session, node_id, uuid, ONE)
        db_instances.update(session, uuid, host='cmp1', node='cmp1',
                            task_state='spawning')
    if vm_state != 'building':
        db_instances.update(session, uuid, vm_state=vm_state,
                            task_state=None)
    created = models.utcnow() - datetime.timedelta(seconds=age)
    table = models.Instance.__table__
    session.execute(sa.update(table).where(table.c.uuid == uuid)
                    .values(created_at=created))


def _state():
    with db_api.reader() as session:
        instances = {row.uuid: row for row in
                     db_instances.list_instances(session)}
        allocations = sorted(row.consumer_uuid for row in session.execute(
            sa.select(models.Allocation.consumer_uuid)))
        nodes = models.ComputeNode.__table__
        usage = tuple(session.execute(sa.select(
            nodes.c.vcpus_used, nodes.c.memory_mb_used,
            nodes.c.local_gb_used)).one())
        bad = claim_checks.find_inconsistent_nodes(session)
    assert not bad
    return instances, allocations, usage


@pytest.fixture
def stuck_builds(any_database, config):
    """Two instances building for 120s (one placed, one not), one building
    for 1s, one ACTIVE for 120s; a timeout of 60s."""
    config.config(instance_build_timeout=60)
    with db_api.writer() as session:
        node_id = _add_node(session)
        _add_instance(session, UUIDS['stuck'], node_id, age=120)
        _add_instance(session, UUIDS['stuck_unplaced'], age=120)
        _add_instance(session, UUIDS['young'], node_id, age=1)
        _add_instance(session, UUIDS['active'], node_id, vm_state='active',
                      age=120)
    return config


def test_reaps_old_builds_and_releases_their_claims(stuck_builds):
    ctxt = gantt_context.get_admin_context()

    assert reaper.reap_stuck_builds(ctxt) == 2

    instances, allocations, usage = _state()
    for name in ('stuck', 'stuck_unplaced'):
        row = instances[UUIDS[name]]
        assert row.vm_state == 'error'
        assert row.task_state is None
        assert row.host is None and row.node is None
        assert row.fault == (
            'Build timed out after 60 seconds ([DEFAULT] '
            'instance_build_timeout); its claims were released')
    assert instances[UUIDS['young']].vm_state == 'building'
    assert instances[UUIDS['young']].host == 'cmp1'
    assert instances[UUIDS['active']].vm_state == 'active'
    assert allocations == sorted([UUIDS['young'], UUIDS['active']])
    assert usage == (2, 1024, 20)

    # A second pass finds nothing and gives nothing back twice.
    assert reaper.reap_stuck_builds(ctxt) == 0
    assert _state()[1:] == (allocations, usage)


def test_zero_timeout_reaps_nothing(stuck_builds):
    stuck_builds.config(instance_build_timeout=0)
    before = _state()

    assert reaper.reap_stuck_builds(gantt_context.get_admin_context()) == 0

    after = _state()
    assert after[1:] == before[1:] == (
        sorted([UUIDS['stuck'], UUIDS['young'], UUIDS['active']]),
        (3, 1536, 30))
    assert {uuid: row.vm_state for uuid, row in after[0].items()} == {
        uuid: row.vm_state for uuid, row in before[0].items()}


def test_concurrent_reapers_reap_each_instance_once(stuck_builds,
                                                    any_database):
    ctxt = gantt_context.get_admin_context()

    counts = test_claims.race(4, lambda i: reaper.reap_stuck_builds(ctxt))

    assert sorted(counts)[-1] >= 1 and sum(counts) == 2
    _instances, allocations, usage = _state()
    assert allocations == sorted([UUIDS['young'], UUIDS['active']])
    assert usage == (2, 1024, 20)


@pytest.fixture
def slow_spawn(database, config):
    inprocess.configure(config, exact_ratios=True)
    config.config(instance_build_timeout=1)
    config.config(periodic_task_interval=1, group='conductor')
    config.config(spawn_time=3.0, group='fake_virt')
    return config


def test_spawn_reported_after_the_timeout_is_refused(slow_spawn, caplog):
    def forgotten():
        return any('forgetting it' in record.getMessage()
                   for record in caplog.records)

    with inprocess.Cluster({'h1': {'vcpus': 4, 'memory_mb': 8192,
                                   'local_gb': 100}}) as cluster:
        [uuid] = cluster.boot(vcpus=1, memory_mb=512, root_gb=10)
        rows = cluster.wait_built([uuid], timeout=10)
        agent = next(service.manager for service in cluster.services
                     if service.host == 'h1')
        # Reaped while the compute still spawns it.
        assert rows[uuid].vm_state == 'error'
        assert 'Build timed out after 1 seconds' in rows[uuid].fault
        assert agent._building['h1'] == 1
        assert not forgotten()
        with db_api.reader() as session:
            assert claims.get_allocations(session, uuid) == []
        # The spawn ends; its ACTIVE report is refused and the compute
        # forgets the instance.
        cluster.wait_until(forgotten, 10, 'the compute to forget it')
        assert agent._stats('h1')[1] == 0
        with db_api.reader() as session:
            row = db_instances.get(session, uuid)
            nodes = models.ComputeNode.__table__
            usage = tuple(session.execute(sa.select(
                nodes.c.vcpus_used, nodes.c.memory_mb_used,
                nodes.c.local_gb_used)).one())
            assert claims.get_allocations(session, uuid) == []
    assert row.vm_state == 'error' and row.host is None
    assert usage == (0, 0, 0)
