"""The reaper's second duty: claims no consumer holds legitimately are
released after ``[conductor] stray_allocation_grace_period``, each kind
named, once however many conductors reap."""

import datetime
import uuid as uuid_lib

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
from scheduler.db import moves
from tests.unit.db import test_claims

ONE = claims.Resources(1, 512, 10)


def _uuid():
    return str(uuid_lib.uuid4())


def _node(session, host):
    return db_compute_nodes.report_inventory(
        session, _uuid(), host, host,
        {'vcpus': 16, 'memory_mb': 32768, 'local_gb': 1000})


def _instance(session, node_id, vm_state, host='cmp1', task_state=None):
    uuid = _uuid()
    db_instances.create(session, uuid, flavor={'vcpus': 1}, request_spec={})
    assert claims.claim_resources(session, node_id, uuid, ONE)
    db_instances.update(session, uuid, vm_state=vm_state,
                        task_state=task_state, host=host, node=host)
    return uuid


def _age_allocations(seconds, consumers=None):
    table = models.Allocation.__table__
    query = sa.update(table).values(
        created_at=models.utcnow() - datetime.timedelta(seconds=seconds))
    if consumers is not None:
        query = query.where(table.c.consumer_uuid.in_(consumers))
    with db_api.writer() as session:
        session.execute(query)


@pytest.fixture
def strays(any_database, config):
    """One stray claim of each kind and four legitimate ones, all ten
    minutes old; a grace period of five minutes."""
    config.config(stray_allocation_grace_period=300, group='conductor')
    with db_api.writer() as session:
        cmp1, cmp2 = _node(session, 'cmp1'), _node(session, 'cmp2')
        stray = {
            claim_checks.STRAY_ERROR: _instance(session, cmp1, 'error',
                                                host=None),
            claim_checks.STRAY_OFFLOADED: _instance(session, cmp1,
                                              'shelved_offloaded', host=None),
            claim_checks.STRAY_SUPERSEDED: _instance(session, cmp2, 'active'),
            claim_checks.STRAY_UNKNOWN: _uuid(),
        }
        assert claims.claim_resources(session, cmp1,
                                      stray[claim_checks.STRAY_UNKNOWN], ONE)
        deleted = _instance(session, cmp1, 'active')
        db_instances.soft_delete(session, deleted)
        stray[claim_checks.STRAY_DELETED] = deleted
        active = _instance(session, cmp1, 'active')
        ended = moves.create(session, active, moves.MIGRATION,
                             status=moves.CONFIRMED).uuid
        assert claims.claim_resources(session, cmp2, ended, ONE)
        stray[claim_checks.STRAY_MIGRATION_ENDED] = ended
        resizing = _instance(session, cmp2, 'active', task_state='resize_prep')
        moving = moves.create(session, resizing, moves.MIGRATION,
                              status=moves.FINISHED).uuid
        assert claims.claim_resources(session, cmp1, moving, ONE)
        legit = [active, resizing, moving,
                 _instance(session, cmp1, 'building', host=None,
                           task_state='scheduling'),
                 _instance(session, cmp1, 'error')]   # ERROR on its host
    _age_allocations(600)
    return stray, legit


def _holders():
    with db_api.reader() as session:
        return set(session.execute(
            sa.select(models.Allocation.consumer_uuid)).scalars())


def _assert_consistent():
    with db_api.reader() as session:
        assert claim_checks.find_inconsistent_nodes(session) == []


def test_each_kind_is_found_by_name(strays):
    stray, _legit = strays
    with db_api.reader() as session:
        found = claim_checks.find_stray_allocations(session)
    assert sorted((row.consumer_uuid, row.why) for row in found) == sorted(
        (consumer, kind) for kind, consumer in stray.items())


def test_reaper_releases_each_kind_and_keeps_the_rest(strays, caplog):
    stray, legit = strays
    ctxt = gantt_context.get_admin_context()

    assert reaper.reap_stray_claims(ctxt) == len(stray)

    assert _holders() == set(legit)
    _assert_consistent()
    with db_api.reader() as session:
        assert claim_checks.find_stray_allocations(session) == []
    warnings = [record.getMessage() for record in caplog.records
                if record.levelname == 'WARNING']
    for kind, consumer in stray.items():
        assert any(kind in text and consumer in text and '1 vCPU' in text
                   for text in warnings), (kind, warnings)
    assert reaper.reap_stray_claims(ctxt) == 0


def test_grace_period_protects_young_claims(strays):
    stray, legit = strays
    young = [stray[claim_checks.STRAY_UNKNOWN],
             stray[claim_checks.STRAY_ERROR]]
    _age_allocations(10, young)

    assert reaper.reap_stray_claims(gantt_context.get_admin_context()) == \
        len(stray) - 2

    assert _holders() == set(legit) | set(young)
    _assert_consistent()


def test_two_reapers_at_once_release_each_claim_once(strays):
    stray, legit = strays
    ctxt = gantt_context.get_admin_context()

    counts = test_claims.race(2, lambda i: reaper.reap_stray_claims(ctxt))

    assert sum(counts) == len(stray)
    assert _holders() == set(legit)
    _assert_consistent()
