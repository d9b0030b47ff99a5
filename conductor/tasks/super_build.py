"""The super-conductor's builds: accepted in the API database, created in
the chosen host's cell, buried in cell0 when they get no host.

With ``[api_database] connection`` set, the conductor that accepts builds
is the super-conductor (Nova's cells v2 layout). Accepting a build writes,
for each instance, a build request (the request spec as it came) and an
instance mapping with no cell yet, in one API transaction; it is
idempotent as :meth:`BuildTask.accept` is (the same request again is
accepted once). The API database away for longer than the
``[api_database]`` retry budget refuses the build with the reason.

Once the scheduler answers, each instance is created in the cell of its
host (``Selection.cell_uuid`` when the scheduler sets it, else the host
mapping), in ``building``, with its request; then its mapping gets the
cell and its build request is deleted (one API transaction); then the
rest is :class:`BuildTask`'s, in that cell's database: the placement is
taken and ``build_and_run_instance`` is cast over the cell's broker
(one RPC client per ``transport_url``; None is the conductor's own).
Reschedules after a failed spawn are the cell conductor's business: the
compute reports to the conductor of its cell, which claims alternates in
its own ``[database]``; a super-conductor that also serves a cell's
computes (one broker) does the same for them, in its ``[database]``.

A build that gets no host (NoValidHost, a scheduler that did not answer,
a host without a cell) is created in cell0 in ERROR with the fault it
would have had in one cell, mapped to cell0, and its build request
deleted. A missing cell0 (``gantt-manage cell_v2 map_cell0``) or a cell0
database that cannot be written is logged as an error and the build
request is left with the fault, for an operator to see and a
super-conductor to try again.

Each build request is owned by the super-conductor process that
accepted it (``build_requests.owner``), which renews it while it works
on it (:mod:`conductor.tasks.resume_builds`). When the cell's database
stays away past the ``[database]`` retry budget while the instance is
created, the claim is released (tried once: the stray-claim reaper of
that cell frees it otherwise) and the build request is left behind with
the reason, waiting for that cell: it is scheduled again once the cell's
database answers. When the API database cannot take the mapping
afterwards, the new instance row is deleted again and its claim
released: an instance is never in two places, nor half in one. Mapping
the instance deletes its build request only if this process still owns
it; one that another super-conductor took over meanwhile (this one hung
past ``[conductor] build_request_grace_period``) is not mapped, and this
process deletes the row it created (by its id, never another's).

Example::

    task = super_build.SuperBuildTask(scheduler_api, compute_api)
    if task.accept([uuid], spec):      # build request + mapping
        task.schedule(ctxt, [uuid], spec)
    task.resumer.run(ctxt)             # periodically: renew, resume
"""

import contextvars

from oslo_db import exception as db_exc
from oslo_log import log as logging

from conductor.tasks import build
from conductor.tasks import instance_cell
from conductor.tasks import resume_builds
from scheduler import cells
from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import build_requests as db_build_requests
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler import exception
from scheduler.notifications import compute_task as compute_task_notes

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# What _record_build_requests answers for build requests this process
# recorded before.
OURS = 'ours'

# What _create_row answers when another super-conductor took the build
# over and created its instance.
LOST = 'lost'

# The cell an instance is being placed in by this thread: set while
# BuildTask's own steps run in that cell's database.
_placing = contextvars.ContextVar('gantt_super_build_cell', default=None)


def selected_cell(selection):
    """The CellMapping of a selected host, or None when the host is not
    mapped (``Selection.cell_uuid`` first, when the scheduler sets it).

    :raises: CellMappingNotFound, ApiDatabaseUnavailable
    """
    # Selection.cell_uuid is newer than this code: read it if it is set.
    if 'cell_uuid' in selection.fields and \
            selection.obj_attr_is_set('cell_uuid') and selection.cell_uuid:
        return cells.get_cell(selection.cell_uuid)
    return cells.host_cell(selection.service_host)


def _api_unavailable(error):
    return exception.ApiDatabaseUnavailable(
        url=config.redact_database_url(db_api.api_connection()),
        reason=db_api.describe_error(error))


class SuperBuildTask(build.BuildTask):
    def __init__(self, scheduler_api, compute_api, workers=None,
                 owner=None):
        """``owner``: this process's name on its build requests (by
        default host, pid and a random part)."""
        super().__init__(scheduler_api, compute_api, workers=workers)
        self._computes = instance_cell.CellComputes(compute_api)
        self.leases = resume_builds.Leases(owner)
        self.resumer = resume_builds.Resumer(self)

    def accept(self, instance_uuids, request_spec):
        """Record a build request (owned by this process) and an
        unmapped instance mapping for each instance; True if recorded
        now, False if this same request was accepted before.

        :raises: InvalidRequest, ApiDatabaseUnavailable
        """
        request_spec.validate()
        try:
            recorded = _record_build_requests(instance_uuids, request_spec,
                                              self.leases.owner)
        except db_exc.DBError as error:
            raise _api_unavailable(error)
        if recorded is OURS:
            return self.leases.add_if_free(instance_uuids)
        if recorded:
            # Renewed from now on, until schedule() ends with them.
            self.leases.add(instance_uuids)
        return recorded

    def schedule(self, ctxt, instance_uuids, request_spec):
        """:meth:`BuildTask.schedule`, for build requests this process
        holds (accepted or taken over); it lets them go at the end,
        whatever happened."""
        try:
            super().schedule(ctxt, instance_uuids, request_spec)
        finally:
            self.leases.drop(instance_uuids)

    def bury_later(self, instance_uuids, request_spec, reason):
        """End held build requests in ERROR in cell0 with ``reason``, in
        the background."""
        self._in_background(self._bury, instance_uuids, request_spec,
                            reason)

    def _bury(self, instance_uuids, request_spec, reason):
        try:
            self._fail_all(instance_uuids, request_spec, reason)
        except Exception:
            LOG.exception('Burying %s in cell0 failed', instance_uuids)
        finally:
            self.leases.drop(instance_uuids)

    def reschedule(self, ctxt, instance_uuid, request_spec, host_list,
                   failure):
        """A compute of this conductor's own cell (``[database]``, its
        broker) failed a build: the cell conductor's reschedule, in that
        cell, the alternates sent over this conductor's transport."""
        token = _placing.set(cells.LOCAL)
        try:
            super().reschedule(ctxt, instance_uuid, request_spec, host_list,
                               failure)
        finally:
            _placing.reset(token)

    def _compute_for(self, selection):
        cell = _placing.get()
        return self._computes.for_url(None if cell is None
                                      else cell.transport_url)

    def _send_to(self, ctxt, instance_uuid, request_spec, selection,
                 alternates):
        if _placing.get() is not None:
            # An alternate after a superseded claim: same cell.
            super()._send_to(ctxt, instance_uuid, request_spec, selection,
                             alternates)
            return
        try:
            cell = selected_cell(selection)
        except (exception.CellMappingNotFound,
                exception.ApiDatabaseUnavailable) as error:
            self._fail_all([instance_uuid], request_spec,
                           'The cell of host %s is unknown: %s'
                           % (selection.service_host, error))
            return
        if cell is None or cell.is_cell0:
            self._fail_all([instance_uuid], request_spec,
                           'Host %s is not mapped to a cell (gantt-manage '
                           'cell_v2 discover_hosts)' % selection.service_host)
            return
        token = _placing.set(cell)
        try:
            with cells.target(cell):
                if _create_in_cell(instance_uuid, request_spec, cell,
                                   self.leases.owner):
                    super()._send_to(ctxt, instance_uuid, request_spec,
                                     selection, alternates)
        finally:
            _placing.reset(token)

    def _fail_all(self, instance_uuids, request_spec, reason):
        """End builds in ERROR: in their cell once they are in one, else
        in cell0 (created there, mapped to it, build requests deleted)."""
        if _placing.get() is not None:
            build.BuildTask._fail_all(instance_uuids, request_spec, reason)
            return
        text = reason if isinstance(reason, str) else build.error_text(reason)
        owner = self.leases.owner
        try:
            cell0 = cells.get_cell(cells.CELL0_UUID)
        except (exception.CellMappingNotFound,
                exception.ApiDatabaseUnavailable) as error:
            LOG.error('Cannot put the failed build of %s in cell0 (%s); '
                      'its build request is left to be tried again. Fault: %s',
                      instance_uuids,
                      'cell0 is not mapped (gantt-manage cell_v2 map_cell0)'
                      if isinstance(error, exception.CellMappingNotFound)
                      else build.error_text(error), text)
            _leave_build_requests(instance_uuids, text, owner)
            return
        created = {}
        with cells.target(cell0):
            try:
                build._record(instance_uuids, request_spec, created=created)
                build.BuildTask._fail_all(instance_uuids, request_spec,
                                          reason)
            except (db_exc.DBError, exception.DatabaseUnavailable,
                    exception.InvalidRequest) as error:
                LOG.error('Cannot put the failed build of %s in cell0 (%s); '
                          'its build request is left to be tried again. '
                          'Fault: %s',
                          instance_uuids, build.error_text(error), text)
                _undo_creations(created)
                _leave_build_requests(
                    instance_uuids, text, owner,
                    None if isinstance(error, exception.InvalidRequest)
                    else cell0.uuid)
                return
            try:
                lost = _map_to_cell(instance_uuids, cell0, owner)
            except db_exc.DBError as error:
                LOG.error('Mapping %s to cell0 failed (%s); deleting them '
                          'from cell0 again', instance_uuids,
                          db_api.describe_error(error))
                _undo_creations(created)
                _leave_build_requests(instance_uuids, text, owner)
                return
            _undo_creations({uuid: created[uuid] for uuid in lost
                             if uuid in created}, release_claims=False)


def _record_build_requests(instance_uuids, request_spec, owner):
    primitive = request_spec.obj_to_primitive()
    project_id = request_spec.obj_get('project_id') or ''

    @db_api.retry_on_api_db_error
    def write():
        with db_api.api_writer() as session:
            mapped = mappings.list_instance_mappings(session, instance_uuids)
            if mapped:
                requests = mappings.build_requests_of(session,
                                                      instance_uuids)
                if len(mapped) == len(instance_uuids) and all(
                        _accepted_as(row, requests.get(row.instance_uuid),
                                     primitive) for row in mapped):
                    # Still this process's to schedule if nothing
                    # here holds it (an earlier try whose answer was
                    # lost); else accepted before.
                    return OURS if len(requests) == len(instance_uuids) \
                        and all(row.owner == owner
                                for row in requests.values()) else False
                raise exception.InvalidRequest(
                    reason='instance %s already exists' % ', '.join(
                        sorted(row.instance_uuid for row in mapped)))
            for uuid in instance_uuids:
                mappings.create_instance_mapping(
                    session, uuid, project_id,
                    user_id=request_spec.obj_get('user_id'))
                mappings.create_build_request(session, uuid, project_id,
                                              primitive, owner=owner)
            return True

    return write()


def _accepted_as(mapping, build_request, primitive):
    """Whether a mapped instance was accepted with request ``primitive``:
    its build request's, else its row's in its cell."""
    if build_request is not None:
        return build._same_request(build_request.request_spec, primitive)
    if mapping.cell_id is None:
        return False
    try:
        with db_api.target_cell(mapping.database_connection):
            with db_api.reader() as session:
                rows = db_instances.list_instances(
                    session, uuids=[mapping.instance_uuid])
    except db_exc.DBError as error:
        raise exception.DatabaseUnavailable(
            url=config.redact_database_url(mapping.database_connection or
                                           CONF.database.connection),
            reason=db_api.describe_error(error))
    return bool(rows) and build._same_request(rows[0].request_spec,
                                              primitive)


def _create_in_cell(instance_uuid, request_spec, cell, owner):
    """Create the instance in ``cell`` (targeted), map it there and
    delete its build request (if ``owner`` still owns it); whether the
    build goes on."""
    try:
        row_id = _create_row(instance_uuid, request_spec, owner)
    except (db_exc.DBError, exception.InvalidRequest) as error:
        reason = ('Creating the instance in cell %s failed: %s'
                  % (cell.label(), build.error_text(error)))
        LOG.error('%s; releasing its claim, leaving its build request '
                  'to be scheduled again', reason)
        _release_once(instance_uuid)
        # A cell that does not answer is waited for; a refusal is not.
        _leave_build_requests(
            [instance_uuid], reason, owner,
            cell.uuid if isinstance(error, db_exc.DBError) else None)
        compute_task_notes.task_error(None, 'build_instances', instance_uuid,
                                      request_spec, reason,
                                      db_instances.ERROR)
        return False
    if row_id is LOST:
        LOG.warning('Another super-conductor took over the build of %s '
                    'and created it in cell %s; leaving it to that one',
                    instance_uuid, cell.label())
        return False
    try:
        lost = _map_to_cell([instance_uuid], cell, owner)
    except db_exc.DBError as error:
        reason = ('Mapping the instance to cell %s failed: %s'
                  % (cell.label(), db_api.describe_error(error)))
        LOG.error('%s; deleting instance %s from the cell again and '
                  'releasing its claim', reason, instance_uuid)
        _undo_creations({instance_uuid: row_id})
        _leave_build_requests([instance_uuid], reason, owner)
        return False
    if lost:
        # The claim is the new owner's business (its own claim may be
        # on the same node by now): only the row goes.
        LOG.warning('Another super-conductor took over the build of %s; '
                    'deleting the instance this one created in cell %s',
                    instance_uuid, cell.label())
        _undo_creations({instance_uuid: row_id}, release_claims=False)
        return False
    return True


def _create_row(instance_uuid, request_spec, owner):
    """Create the instance in the targeted cell; its row's id (None if
    not known), or :data:`LOST`.

    A row of the same request that this call did not write was left by
    a super-conductor that lost this build request (it hung past the
    grace period): it is replaced if ``owner`` still owns the build
    request; if not, the row is the new owner's and nothing is touched
    (LOST).

    :raises: DBError, InvalidRequest (a row of another request)
    """
    created = {}
    build._record([instance_uuid], request_spec, created=created)
    if instance_uuid in created:
        return created[instance_uuid]
    if not _owns(instance_uuid, owner):
        return LOST
    _purge_rows(instance_uuid)
    build._record([instance_uuid], request_spec, created=created)
    return created.get(instance_uuid)


@db_api.retry_on_api_db_error
def _owns(instance_uuid, owner):
    with db_api.api_reader() as session:
        request = mappings.build_requests_of(session, [instance_uuid]).get(
            instance_uuid)
    return request is not None and request.owner == owner


@db_api.retry_on_db_error
def _purge_rows(instance_uuid):
    """Delete the instance's rows in the targeted cell (never mapped:
    this process owns its build request), not its claims."""
    with db_api.writer() as session:
        for row in db_instances.list_instances(session,
                                               uuids=[instance_uuid]):
            db_instances.purge_row(session, row.id)


def _undo_creations(created, release_claims=True):
    """Delete the rows this process created (``{uuid: row id}``, None:
    not known) in the targeted cell, and (``release_claims``) the claims
    of each instance whose row was still there; tried within the
    ``[database]`` budget, logged if that fails (a build request taken
    over later clears what is left)."""
    for uuid, row_id in created.items():
        try:
            _undo_create(uuid, row_id, release_claims)
        except db_exc.DBError as error:
            LOG.error('Could not delete instance %s (row %s) again: %s',
                      uuid, row_id, db_api.describe_error(error))


@db_api.retry_on_db_error
def _undo_create(instance_uuid, row_id, release_claims):
    with db_api.writer() as session:
        if row_id is not None and db_instances.purge_row(session, row_id) \
                and release_claims:
            claims.release_resources(session, instance_uuid)


def _release_once(instance_uuid):
    """Release the instance's claim in the targeted cell, trying once;
    not if the cell has an instance of that uuid (another super-conductor
    created it there after taking the build over)."""
    try:
        with db_api.writer() as session:
            if not db_instances.list_instances(session,
                                               uuids=[instance_uuid]):
                claims.release_resources(session, instance_uuid)
    except db_exc.DBError as error:
        LOG.warning('Could not release the claim of %s (%s); the cell '
                    'conductor releases stray claims later', instance_uuid,
                    db_api.describe_error(error))


def _map_to_cell(instance_uuids, cell, owner):
    """Map the instances to ``cell`` and delete their build requests, in
    one API transaction (retried within the ``[api_database]`` budget);
    only those ``owner`` still owns. The uuids it no longer owned.

    :raises: DBError past the budget
    """
    @db_api.retry_on_api_db_error
    def write():
        lost = []
        with db_api.api_writer() as session:
            cell_id = mappings.get_cell(session, cell.uuid).id
            for uuid in instance_uuids:
                if db_build_requests.finish(session, uuid, owner):
                    mappings.set_instance_cell(session, uuid, cell_id)
                    continue
                mapping = mappings.get_instance_mapping(session, uuid)
                # Mapped here by an earlier try whose answer was lost.
                if mapping is None or mapping.cell_id != cell_id:
                    lost.append(uuid)
        return lost
    return write()


def _leave_build_requests(instance_uuids, fault, owner,
                          waiting_cell_uuid=None):
    """Leave the build requests behind with why (and the cell they wait
    for), to be scheduled again (:mod:`conductor.tasks.resume_builds`);
    tried within the budget. Without the API database they stay this
    process's until it stops renewing them."""
    @db_api.retry_on_api_db_error
    def write():
        with db_api.api_writer() as session:
            return [uuid for uuid in instance_uuids
                    if not db_build_requests.leave(session, uuid, owner,
                                                   fault, waiting_cell_uuid)]
    try:
        lost = write()
    except db_exc.DBError as error:
        LOG.error('Could not record the fault of the build requests of %s: '
                  '%s', instance_uuids, db_api.describe_error(error))
        return
    if lost:
        LOG.warning('The build requests of %s were taken over by another '
                    'super-conductor meanwhile', lost)
