"""Resume the super-conductor's build requests that nobody works on.

A build request (:mod:`conductor.tasks.super_build`) lives from the
moment a super-conductor accepts a build until its instance is mapped to
a cell, or buried in cell0. Two things leave one behind:

* the super-conductor process dies (or hangs) between accepting the
  build and mapping its instance: Nova leaves such a build for good;
* the database of the cell its instance was being created in stays away
  past the ``[database]`` retry budget: the build request is left with
  the reason, waiting for that cell.

Each super-conductor process owns the build requests it works on and
runs :meth:`Resumer.run` when it starts and every ``[conductor]
build_request_poll_interval`` seconds:

1. it renews the build requests it holds (:class:`Leases`);
2. it takes over, one conditional UPDATE each (two processes never both
   win one), those whose owner has not renewed them for ``[conductor]
   build_request_grace_period`` seconds (or left them behind that long
   ago: cell0 not mapped, the API database away when mapping), and
   those waiting for a cell whose database answered at this run and the
   one before (by then the schedulers, which re-read a cell at each host
   cache refresh, see its hosts again);
3. it removes what an earlier attempt may have left in the cells: a row
   of the instance, of the same request, that was never mapped, and the
   instance's claims. A cell that cannot be read holds the build back:
   it waits for that cell, since an instance must never end up in two;
4. it schedules the instances of each request again, together (a build
   is never built twice: its instance is created and mapped once), or,
   when they were accepted longer than ``[DEFAULT]
   instance_build_timeout`` ago, puts them in cell0 in ERROR with a
   fault saying so.

The process that lost a build request while it still worked on it (it
hung past the grace period) can no longer map the instance: it deletes
the row it created instead (``super_build._map_to_cell``). After an
API database outage, a process first renews its own and only takes
others' over at its next run, once their owners had a run to renew.

Example::

    task = super_build.SuperBuildTask(scheduler_api, compute_api)
    resumed, buried = task.resumer.run(ctxt)   # from a periodic task
"""

import collections
import datetime
import json
import os
import threading
import time

from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import uuidutils
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from conductor.tasks import build
from scheduler import cells
from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import build_requests as db_build_requests
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler.db import models
from scheduler import exception
from scheduler.objects import request_spec as request_spec_obj

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# Seconds a probe of a cell's database may take before the cell counts as
# not answering.
PROBE_TIMEOUT = 10.0

TIMED_OUT = ('Build timed out after %d seconds before it reached a cell '
             '([DEFAULT] instance_build_timeout)')

DATABASE_ERRORS = (db_exc.DBError, sa_exc.SQLAlchemyError,
                   exception.DatabaseUnavailable)


def check_options():
    """Refuse a grace period that live owners could not renew within.

    :raises: ConfigError
    """
    interval = CONF.conductor.build_request_poll_interval
    grace = CONF.conductor.build_request_grace_period
    if grace <= 2 * interval:
        raise exception.ConfigError(
            reason='[conductor] build_request_grace_period (%d) must be '
                   'more than twice [conductor] build_request_poll_interval '
                   '(%d): a live super-conductor would lose its builds to '
                   'another' % (grace, interval))


def process_owner():
    """This process's name on its build requests: host, pid and a random
    part (a restarted process with the same pid is another owner)."""
    return '%s:%d:%s' % (CONF.host, os.getpid(),
                         uuidutils.generate_uuid()[:8])


class Leases:
    """The build requests this process works on, renewed by
    :meth:`Resumer.run` while they are held."""

    def __init__(self, owner=None):
        self.owner = owner or process_owner()
        self._held = collections.Counter()
        self._lock = threading.Lock()

    def add(self, instance_uuids):
        with self._lock:
            self._held.update(instance_uuids)

    def add_if_free(self, instance_uuids):
        """Hold ``instance_uuids`` if none of them is held; whether it
        did."""
        with self._lock:
            if any(uuid in self._held for uuid in instance_uuids):
                return False
            self._held.update(instance_uuids)
            return True

    def drop(self, instance_uuids):
        with self._lock:
            self._held.subtract(instance_uuids)
            for uuid in instance_uuids:
                if self._held[uuid] <= 0:
                    del self._held[uuid]

    def held(self):
        with self._lock:
            return set(self._held)


class Resumer:
    """What one super-conductor process resumes, run after run."""

    def __init__(self, task):
        """``task``: the SuperBuildTask that schedules and buries."""
        self.task = task
        # Waiting cells whose database answered at the previous run.
        self._answered = set()
        # Whether the API database answered the previous run (None:
        # first run).
        self._api_answered = None

    def run(self, ctxt):
        """Renew, take over, resume; ``(resumed, buried)`` counts."""
        leases = self.task.leases
        try:
            with db_api.api_writer() as session:
                db_build_requests.renew(session, leases.owner,
                                        leases.held())
        except DATABASE_ERRORS as error:
            if self._api_answered is not False:
                LOG.warning('Cannot renew the build requests of %s in the '
                            'API database: %s', leases.owner,
                            db_api.describe_error(error))
            self._api_answered = False
            return 0, 0
        answered_before = self._api_answered is not False
        self._api_answered = True
        if not answered_before:
            LOG.info('The API database answers again; build requests '
                     'nobody renewed are taken over from the next run')
            return 0, 0
        try:
            return self._resume(ctxt)
        except DATABASE_ERRORS as error:
            LOG.warning('Resuming build requests stopped: %s',
                        db_api.describe_error(error))
            return 0, 0

    def _resume(self, ctxt):
        now = models.utcnow()
        cutoff = now - datetime.timedelta(
            seconds=CONF.conductor.build_request_grace_period)
        held = self.task.leases.held()
        with db_api.api_reader() as session:
            rows = [row for row in db_build_requests.unowned(session, cutoff)
                    if row.instance_uuid not in held]
        waiting = {row.waiting_cell_uuid for row in rows if _waits(row)}
        answering = _answering(waiting)
        ready = answering & self._answered
        self._answered = answering
        chosen = [row for row in rows
                  if not _waits(row) or row.waiting_cell_uuid in ready]
        if not chosen:
            return 0, 0
        taken = self._take([row.instance_uuid for row in chosen], cutoff)
        if not taken:
            return 0, 0
        why = {row.instance_uuid: _why(row, cutoff) for row in chosen}
        try:
            with db_api.api_reader() as session:
                requests = mappings.build_requests_of(session, taken)
            held_back, released = _clear_cells(requests)
        except BaseException:
            # Not left held (and renewed) for ever: taken over again
            # after the grace period.
            self.task.leases.drop(taken)
            raise
        if held_back is not None:
            cell, error = held_back
            fault = ('Waiting for cell %s, which could not be checked for '
                     'what an earlier attempt left there: %s'
                     % (cell.label(), db_api.describe_error(error)))
            LOG.warning('Build requests %s: %s', sorted(requests), fault)
            self._give_back(sorted(requests), fault, cell.uuid)
            return 0, 0
        if released:
            # Let the schedulers' host caches see the room given back
            # before they are asked (one refresh each).
            time.sleep(2 * CONF.scheduler.host_state_refresh_interval)
        return self._restart(ctxt, requests, why, now)

    def _take(self, instance_uuids, cutoff):
        owner = self.task.leases.owner

        @db_api.retry_on_api_db_error
        def write():
            with db_api.api_writer() as session:
                return [uuid for uuid in instance_uuids
                        if db_build_requests.take(session, uuid, owner,
                                                  cutoff)]
        taken = write()
        self.task.leases.add(taken)
        return taken

    def _give_back(self, instance_uuids, fault, waiting_cell_uuid):
        owner = self.task.leases.owner
        try:
            with db_api.api_writer() as session:
                for uuid in instance_uuids:
                    db_build_requests.leave(session, uuid, owner, fault,
                                            waiting_cell_uuid)
        finally:
            self.task.leases.drop(instance_uuids)

    def _restart(self, ctxt, requests, why, now):
        """Schedule the taken build requests again, request by request,
        or bury those past the build timeout; the counts."""
        timeout = CONF.instance_build_timeout
        groups = collections.defaultdict(list)
        for uuid, request in requests.items():
            expired = timeout > 0 and request.created_at < \
                now - datetime.timedelta(seconds=timeout)
            groups[(_request_key(request.request_spec), expired)].append(
                uuid)
        resumed = buried = 0
        for (_key, expired), uuids in groups.items():
            first = requests[uuids[0]]
            try:
                spec = request_spec_obj.RequestSpec.obj_from_primitive(
                    first.request_spec)
            except Exception as error:
                fault = 'Its request spec cannot be read: %s' % error
                LOG.error('Build requests %s: %s', uuids, fault)
                self._give_back(uuids, fault, None)
                continue
            if expired:
                fault = TIMED_OUT % timeout
                if first.fault:
                    fault += '; last error: %s' % first.fault
                LOG.warning('Build requests %s: %s', uuids, fault)
                self.task.bury_later(uuids, spec, fault)
                buried += len(uuids)
                continue
            LOG.info('Scheduling the build of %s again (%s)', uuids,
                     why[uuids[0]])
            self.task.schedule_later(ctxt, uuids, spec)
            resumed += len(uuids)
        return resumed, buried


def _waits(row):
    """Whether a build request was left waiting for a cell's database."""
    return row.owner is None and row.waiting_cell_uuid is not None


def _why(row, cutoff):
    if _waits(row):
        return 'the database of cell %s answers again' % \
            row.waiting_cell_uuid
    if row.owner is None:
        return 'left behind: %s' % row.fault
    return 'its owner %s stopped renewing it at %s' % (
        row.owner, row.updated_at or row.created_at)


def _answering(cell_uuids):
    """Those of ``cell_uuids`` whose database answers now (a cell no
    longer mapped counts as answering: nothing waits for it)."""
    probes = {}
    for uuid in cell_uuids:
        try:
            cell = cells.get_cell(uuid)
        except exception.CellMappingNotFound:
            probes[uuid] = None
            continue
        probes[uuid] = _Probe(cell)
    for probe in probes.values():
        if probe is not None:
            probe.wait(PROBE_TIMEOUT)
    return {uuid for uuid, probe in probes.items()
            if probe is None or probe.answered}


class _Probe:
    """``SELECT 1`` on a cell's database in a thread of its own, so that
    a database that hangs cannot hold the run."""

    def __init__(self, cell):
        self.cell = cell
        self.answered = False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='probe-%s' % cell.label())
        self._thread.start()

    def _run(self):
        try:
            with cells.target(self.cell), db_api.reader() as session:
                session.execute(sa.text('SELECT 1'))
        except DATABASE_ERRORS as error:
            LOG.debug('Cell %s does not answer yet: %s', self.cell.label(),
                      db_api.describe_error(error))
            return
        self.answered = True

    def wait(self, timeout):
        self._thread.join(timeout)


def _clear_cells(requests):
    """Remove, in every cell, the rows and claims an earlier attempt left
    for the build requests ``requests`` (``{uuid: row}``); ``(None, how
    many claims it released)``, or ``((cell, error), ...)`` for the
    first cell that could not be read."""
    released = 0
    for cell in cells.get_cells():
        try:
            with cells.target(cell):
                released += _clear_cell(cell, requests)
        except DATABASE_ERRORS as error:
            return (cell, error), released
    return None, released


def _clear_cell(cell, requests):
    """In the targeted cell: delete the rows of the instances that were
    created for the same request and never mapped, and release the
    claims of the instances; a row of another request (a uuid a client
    chose twice) is left alone, with its claims. How many claims it
    released."""
    released = 0
    with db_api.writer() as session:
        foreign = set()
        for row in db_instances.list_instances(session,
                                               uuids=list(requests)):
            if not _same_build(row.request_spec,
                               requests[row.uuid].request_spec):
                foreign.add(row.uuid)
                continue
            db_instances.purge_row(session, row.id)
            LOG.warning('Deleted instance %s (%s) that an earlier attempt '
                        'left in cell %s without mapping it', row.uuid,
                        row.vm_state, cell.label())
        for uuid in claims.consumers_holding(session, requests) - foreign:
            count = len(claims.release_resources(session, uuid))
            released += count
            LOG.warning('Released %d claim(s) an earlier attempt left for '
                        '%s in cell %s', count, uuid, cell.label())
    return released


def _without_group(primitive):
    """A RequestSpec primitive's fields (:func:`build.request_fields`)
    without ``instance_group`` (which scheduling adds from the ``group``
    hint)."""
    value = build.request_fields(json.loads(json.dumps(primitive)))
    if isinstance(value, dict) and isinstance(value.get('fields'), dict):
        value['fields'].pop('instance_group', None)
    return value


def _same_build(stored, primitive):
    return _without_group(stored) == _without_group(primitive)


def _request_key(primitive):
    """Build requests of one request share this."""
    return json.dumps(build.request_fields(primitive), sort_keys=True)
