"""Checks of the instances against what their computes last reported,
and of cell0's instances: what ``gantt-manage db check`` reads besides
the claims (:mod:`scheduler.db.claim_checks`).

A compute is the one writer of "running" (``compute_reports``, replaced
by each instance sync). Its report is held against an instance only
when it post-dates the instance's last change (``updated_at``, else
``created_at``, or ``deleted_at``) by :data:`REPORT_SLACK` seconds: an
older report says nothing about the instance as it is now, and a
compute takes its list a moment before the conductor stamps it (a spawn
reported, or a delete, in between would otherwise look like a
disagreement).

* :data:`NOT_RUNNING`: an instance ACTIVE with no task under way and no
  migration in progress, on a host whose report does not list it as
  running. A host that never reported is not held against anything; its
  name is returned apart (:attr:`ReportCheck.unreported_hosts`).
* :data:`RUNNING_NOT_HOSTED`: a compute reports as running an instance
  that is placed on another host, has no host (ERROR after a failed
  build, say), is deleted, or is not in the cell's database at all.
  During a move both ends may run it: an instance with a migration in
  progress from or to that host is skipped.

Cell0 holds only builds that never got a host
(:func:`find_cell0_problems`): an instance there with a host
(:data:`CELL0_HOST`) or holding a claim (:data:`CELL0_CLAIM`) is wrong.

Example::

    with db_api.reader() as session:
        found = report_checks.find_report_problems(session)
    for finding in found.findings:
        print(finding.instance_uuid, finding.host, finding.why)
"""

import collections
import datetime

import sqlalchemy as sa

from scheduler.db import compute_reports
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler.db import moves

NOT_RUNNING = 'ACTIVE but not running on its compute'
RUNNING_NOT_HOSTED = 'running on a compute that does not host it'
CELL0_HOST = 'cell0 instance with a host'
CELL0_CLAIM = 'cell0 instance holding a claim'
KINDS = (NOT_RUNNING, RUNNING_NOT_HOSTED, CELL0_HOST, CELL0_CLAIM)

# How much later than an instance's last change a report must be to be
# held against it.
REPORT_SLACK = datetime.timedelta(seconds=10)

# Statements of an IN list go in chunks of this many values.
CHUNK = 500

InstanceFinding = collections.namedtuple(
    'InstanceFinding', 'instance_uuid host why detail')
ReportCheck = collections.namedtuple('ReportCheck',
                                     'findings unreported_hosts')

_INSTANCE = models.Instance.__table__
_MIGRATION = models.Migration.__table__
_ALLOC = models.Allocation.__table__
_NODE = models.ComputeNode.__table__


def _last_change(row):
    """When the instance's row last changed, and the slack after it
    within which a report says nothing about it."""
    return max(stamp for stamp in (row.created_at, row.updated_at,
                                   row.deleted_at)
               if stamp is not None) + REPORT_SLACK


def _moves_in_progress(session):
    """``{instance uuid: {source and destination hosts}}`` of the
    migrations in progress."""
    hosts = collections.defaultdict(set)
    for row in session.execute(
            sa.select(_MIGRATION.c.instance_uuid, _MIGRATION.c.source_host,
                      _MIGRATION.c.dest_host)
            .where(_MIGRATION.c.status.in_(moves.IN_PROGRESS))):
        hosts[row.instance_uuid].update(
            host for host in (row.source_host, row.dest_host) if host)
    return hosts


def _columns():
    return (_INSTANCE.c.uuid, _INSTANCE.c.host, _INSTANCE.c.vm_state,
            _INSTANCE.c.task_state, _INSTANCE.c.deleted,
            _INSTANCE.c.created_at, _INSTANCE.c.updated_at,
            _INSTANCE.c.deleted_at)


def _not_running(session, reports, moving, unreported):
    settled_active = (
        sa.select(*_columns())
        .where(_INSTANCE.c.vm_state == db_instances.ACTIVE,
               _INSTANCE.c.task_state.is_(None), _INSTANCE.c.deleted == 0,
               _INSTANCE.c.host.is_not(None))
        .order_by(_INSTANCE.c.host, _INSTANCE.c.uuid))
    for row in session.execute(settled_active):
        report = reports.get(row.host)
        if report is None:
            unreported.add(row.host)
            continue
        if row.uuid in (report.running or {}) or row.uuid in moving or \
                _last_change(row) >= report.reported_at:
            continue
        said = ('spawning' if row.uuid in (report.spawning or ())
                else 'not running')
        yield InstanceFinding(row.uuid, row.host, NOT_RUNNING,
                              'its compute reported it %s at %s' % (
                                  said, _stamp(report.reported_at)))


def _stamp(value):
    return value.isoformat(sep=' ', timespec='seconds')


def _instances_of(session, uuids):
    """``{uuid: row}`` of the cell's instance rows of ``uuids``, deleted
    ones too."""
    uuids = sorted(uuids)
    found = {}
    for start in range(0, len(uuids), CHUNK):
        for row in session.execute(
                sa.select(*_columns()).where(
                    _INSTANCE.c.uuid.in_(uuids[start:start + CHUNK]))):
            found[row.uuid] = row
    return found


def _not_hosted_reason(row, host):
    """Why ``host`` should not run the instance of ``row``; None if it
    is its host."""
    if row is None:
        return 'no such instance in this database'
    if row.deleted or row.vm_state == db_instances.DELETED:
        return 'the instance is deleted'
    if not row.host:
        if row.vm_state == db_instances.ERROR:
            return 'the instance is in ERROR without a host'
        return 'the instance has no host (%s)' % row.vm_state
    if row.host != host:
        return 'the instance is on host %s' % row.host
    return None


def _running_not_hosted(session, reports, moving):
    listed = sorted((host, uuid) for host, report in reports.items()
                    for uuid in (report.running or {}))
    rows = _instances_of(session, {uuid for _host, uuid in listed})
    for host, uuid in listed:
        row = rows.get(uuid)
        if host in moving.get(uuid, ()):
            continue
        if row is not None and \
                _last_change(row) >= reports[host].reported_at:
            continue
        reason = _not_hosted_reason(row, host)
        if reason is not None:
            yield InstanceFinding(uuid, host, RUNNING_NOT_HOSTED, reason)


def find_report_problems(session):
    """The instances that disagree with their computes' last reports
    (see the module's docstring): a :class:`ReportCheck` whose
    ``findings`` are :class:`InstanceFinding`\\ s (``why`` is
    :data:`NOT_RUNNING` or :data:`RUNNING_NOT_HOSTED`) and whose
    ``unreported_hosts`` are the hosts of ACTIVE instances that never
    reported (sorted)."""
    reports = compute_reports.get_all(session)
    moving = _moves_in_progress(session)
    unreported = set()
    findings = list(_not_running(session, reports, moving, unreported))
    findings.extend(_running_not_hosted(session, reports, moving))
    return ReportCheck(findings, sorted(unreported))


def find_cell0_problems(session):
    """Cell0's instances (the session's database is cell0's) that have a
    host, or hold a claim: ``[InstanceFinding]``."""
    findings = [
        InstanceFinding(row.uuid, row.host, CELL0_HOST,
                        'host %s, node %s' % (row.host or '-',
                                              row.node or '-'))
        for row in session.execute(
            sa.select(_INSTANCE.c.uuid, _INSTANCE.c.host, _INSTANCE.c.node)
            .where(sa.or_(_INSTANCE.c.host.is_not(None),
                          _INSTANCE.c.node.is_not(None)))
            .order_by(_INSTANCE.c.uuid))]
    claims = (sa.select(_ALLOC.c.consumer_uuid, _NODE.c.host,
                        _NODE.c.hypervisor_hostname)
              .outerjoin(_NODE, _NODE.c.id == _ALLOC.c.compute_node_id)
              .where(_ALLOC.c.consumer_uuid.in_(sa.select(_INSTANCE.c.uuid)))
              .order_by(_ALLOC.c.consumer_uuid))
    findings.extend(
        InstanceFinding(row.consumer_uuid, row.host, CELL0_CLAIM,
                        'a claim on node %s' % (row.hypervisor_hostname
                                                or '-'))
        for row in session.execute(claims))
    return findings
