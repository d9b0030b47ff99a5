"""The instances against their computes' last reports, and cell0's
instances (scheduler.db.report_checks), on every backend."""

import datetime
import uuid

import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_reports
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler.db import moves
from scheduler.db import report_checks
from tests.unit.db import test_claims as helpers

_INSTANCE = models.Instance.__table__
_REPORT = models.ComputeReport.__table__
# When the instances last changed, in these tests; reports are a minute
# after it (they post-date the change) or a minute before (they do not).
CHANGED = datetime.datetime(2026, 1, 1, 12, 0, 0)
LATER = CHANGED + datetime.timedelta(minutes=1)
EARLIER = CHANGED - datetime.timedelta(minutes=1)


def _instance(host='cmp1', vm_state='active', task_state=None,
              deleted=False):
    instance_uuid = str(uuid.uuid4())
    with db_api.writer() as session:
        db_instances.create(session, instance_uuid, flavor={'vcpus': 1},
                            request_spec=None)
        db_instances.update(session, instance_uuid, vm_state=vm_state,
                            task_state=task_state, host=host,
                            node=host and host + '-node')
        if deleted:
            db_instances.soft_delete(session, instance_uuid)
        session.execute(sa.update(_INSTANCE).where(
            _INSTANCE.c.uuid == instance_uuid).values(
            created_at=CHANGED, updated_at=CHANGED,
            deleted_at=CHANGED if deleted else None))
    return instance_uuid


def _report(host, running=(), spawning=(), at=LATER):
    with db_api.writer() as session:
        compute_reports.record(session, host,
                               {uuid_: host + '-node' for uuid_ in running},
                               spawning)
        session.execute(sa.update(_REPORT).where(_REPORT.c.host == host)
                        .values(reported_at=at))


def _migrate(instance_uuid, source, dest, status=moves.PRE_MIGRATING):
    with db_api.writer() as session:
        moves.create(session, instance_uuid, moves.RESIZE, source_host=source,
                     dest_host=dest, status=status)


def _found():
    with db_api.reader() as session:
        check = report_checks.find_report_problems(session)
    return ({(row.instance_uuid, row.host, row.why): row.detail
             for row in check.findings}, check.unreported_hosts)


def test_active_but_not_running_on_its_compute(any_database):
    missing = _instance()
    spawning = _instance()
    running = _instance()
    # Out: a report older than the instance's last change, a task under
    # way, a migration in progress, a host that never reported.
    changed_since = _instance('cmp2')
    busy = _instance(task_state='rebooting')
    moving = _instance()
    _migrate(moving, 'cmp1', 'cmp3')
    ended = _instance()
    _migrate(ended, 'cmp1', 'cmp3', status=moves.CONFIRMED)
    _instance('silent')
    _instance('cmp1', vm_state='error')
    _report('cmp1', running=[running], spawning=[spawning])
    _report('cmp2', at=EARLIER)

    found, unreported = _found()

    not_running = report_checks.NOT_RUNNING
    assert set(found) == {(missing, 'cmp1', not_running),
                          (spawning, 'cmp1', not_running),
                          (ended, 'cmp1', not_running)}
    assert found[(missing, 'cmp1', not_running)] == \
        'its compute reported it not running at 2026-01-01 12:01:00'
    assert 'reported it spawning' in found[(spawning, 'cmp1', not_running)]
    assert unreported == ['silent']
    assert not {changed_since, busy, moving} & {key[0] for key in found}


def test_running_on_a_compute_that_does_not_host_it(any_database):
    elsewhere = _instance('cmp2')
    deleted = _instance(deleted=True)
    failed = _instance(host=None, vm_state='error')
    unknown = str(uuid.uuid4())
    # Out: its own host, a change after the report, a move in progress
    # from or to the reporting host.
    own = _instance('cmp1')
    changed_since = _instance('cmp3')
    resizing = _instance('cmp2')
    _migrate(resizing, 'cmp1', 'cmp2')
    _report('cmp1', running=[elsewhere, deleted, failed, unknown, own,
                             resizing])
    _report('cmp4', running=[changed_since], at=EARLIER)

    found, _unreported = _found()

    kind = report_checks.RUNNING_NOT_HOSTED
    assert found == {
        (elsewhere, 'cmp1', kind): 'the instance is on host cmp2',
        (deleted, 'cmp1', kind): 'the instance is deleted',
        (failed, 'cmp1', kind): 'the instance is in ERROR without a host',
        (unknown, 'cmp1', kind): 'no such instance in this database',
    }


def test_a_migration_elsewhere_does_not_excuse_a_compute(any_database):
    moved = _instance('cmp2')
    _migrate(moved, 'cmp2', 'cmp3')
    _report('cmp1', running=[moved])
    found, _unreported = _found()
    assert set(found) == {(moved, 'cmp1', report_checks.RUNNING_NOT_HOSTED)}


def test_cell0_instances_with_a_host_or_a_claim(any_database):
    buried = _instance(host=None, vm_state='error')
    with_host = _instance('cmp1', vm_state='error')
    holding = _instance(host=None, vm_state='error')
    node = helpers.make_node('cmp9')
    with db_api.writer() as session:
        assert claims.claim_resources(session, node, holding,
                                      claims.Resources(1, 512, 1))
    with db_api.reader() as session:
        found = report_checks.find_cell0_problems(session)
    assert {(row.instance_uuid, row.why, row.detail) for row in found} == {
        (with_host, report_checks.CELL0_HOST, 'host cmp1, node cmp1-node'),
        (holding, report_checks.CELL0_CLAIM, 'a claim on node cmp9-node')}
    assert buried not in {row.instance_uuid for row in found}


def test_a_report_a_moment_after_a_change_says_nothing(any_database):
    # The compute took its list before the spawn report (or the delete)
    # that the conductor stamped just before the sync arrived.
    activated = _instance()
    deleted = _instance(deleted=True)
    _report('cmp1', running=[deleted],
            at=CHANGED + datetime.timedelta(seconds=2))
    assert _found() == ({}, [])
    _report('cmp1', running=[deleted],
            at=CHANGED + report_checks.REPORT_SLACK
            + datetime.timedelta(seconds=1))
    found, _unreported = _found()
    assert set(found) == {
        (activated, 'cmp1', report_checks.NOT_RUNNING),
        (deleted, 'cmp1', report_checks.RUNNING_NOT_HOSTED)}
