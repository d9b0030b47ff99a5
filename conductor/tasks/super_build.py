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
request stays, with the fault, for an operator to see.

When the cell's database stays away past the ``[database]`` retry budget
while the instance is created, the claim is released (tried once: the
stray-claim reaper of that cell frees it otherwise) and the build request
is kept with the reason; when the API database cannot take the mapping
afterwards, the new instance row is deleted again and its claim released:
an instance is never in two places, nor half in one.

Example::

    task = super_build.SuperBuildTask(scheduler_api, compute_api)
    if task.accept([uuid], spec):      # build request + mapping
        task.schedule(ctxt, [uuid], spec)
"""

import contextvars
import threading

from oslo_db import exception as db_exc
from oslo_log import log as logging

from compute import rpcapi as compute_rpcapi
from conductor.tasks import build
from scheduler import cells
from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler import exception
from scheduler.notifications import compute_task as compute_task_notes
from scheduler import rpc

CONF = conf.CONF
LOG = logging.getLogger(__name__)

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
    def __init__(self, scheduler_api, compute_api, workers=None):
        super().__init__(scheduler_api, compute_api, workers=workers)
        self._computes = {}
        self._computes_lock = threading.Lock()

    def accept(self, instance_uuids, request_spec):
        """Record a build request and an unmapped instance mapping for
        each instance; True if recorded now, False if this same request
        was accepted before.

        :raises: InvalidRequest, ApiDatabaseUnavailable
        """
        request_spec.validate()
        try:
            return _record_build_requests(instance_uuids, request_spec)
        except db_exc.DBError as error:
            raise _api_unavailable(error)

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
        url = None if cell is None else cell.transport_url
        with self._computes_lock:
            api = self._computes.get(url)
            if api is None:
                api = compute_rpcapi.ComputeAPI(
                    transport=rpc.cell_transport(CONF, url))
                self._computes[url] = api
            return api

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
                if _create_in_cell(instance_uuid, request_spec, cell):
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
        try:
            cell0 = cells.get_cell(cells.CELL0_UUID)
            with cells.target(cell0):
                build._record(instance_uuids, request_spec)
                build.BuildTask._fail_all(instance_uuids, request_spec,
                                          reason)
        except exception.CellMappingNotFound:
            LOG.error('Cannot put the failed build of %s in cell0: cell0 '
                      'is not mapped (gantt-manage cell_v2 map_cell0); '
                      'its build request stays. Fault: %s',
                      instance_uuids, text)
            _keep_build_requests(instance_uuids, text)
            return
        except (db_exc.DBError, exception.DatabaseUnavailable,
                exception.InvalidRequest) as error:
            LOG.error('Cannot put the failed build of %s in cell0 (%s); '
                      'its build request stays. Fault: %s', instance_uuids,
                      build.error_text(error), text)
            _keep_build_requests(instance_uuids, text)
            return
        _map_to_cell(instance_uuids, cell0)


def _record_build_requests(instance_uuids, request_spec):
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
                    return False
                raise exception.InvalidRequest(
                    reason='instance %s already exists' % ', '.join(
                        sorted(row.instance_uuid for row in mapped)))
            for uuid in instance_uuids:
                mappings.create_instance_mapping(
                    session, uuid, project_id,
                    user_id=request_spec.obj_get('user_id'))
                mappings.create_build_request(session, uuid, project_id,
                                              primitive)
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


def _create_in_cell(instance_uuid, request_spec, cell):
    """Create the instance in ``cell`` (targeted), map it there and
    delete its build request; whether the build goes on."""
    try:
        build._record([instance_uuid], request_spec)
    except (db_exc.DBError, exception.InvalidRequest) as error:
        reason = ('Creating the instance in cell %s failed: %s'
                  % (cell.label(), build.error_text(error)))
        LOG.error('%s; releasing its claim, keeping its build request',
                  reason)
        _release_once(instance_uuid)
        _keep_build_requests([instance_uuid], reason)
        compute_task_notes.task_error(None, 'build_instances', instance_uuid,
                                      request_spec, reason,
                                      db_instances.ERROR)
        return False
    try:
        _map_to_cell([instance_uuid], cell, raise_errors=True)
    except db_exc.DBError as error:
        reason = ('Mapping the instance to cell %s failed: %s'
                  % (cell.label(), db_api.describe_error(error)))
        LOG.error('%s; deleting instance %s from the cell again and '
                  'releasing its claim', reason, instance_uuid)
        _undo_create(instance_uuid)
        _keep_build_requests([instance_uuid], reason)
        return False
    return True


@db_api.retry_on_db_error
def _undo_create(instance_uuid):
    with db_api.writer() as session:
        claims.release_resources(session, instance_uuid)
        db_instances.purge(session, instance_uuid)


def _release_once(instance_uuid):
    """Release the instance's claim in the targeted cell, trying once."""
    try:
        with db_api.writer() as session:
            claims.release_resources(session, instance_uuid)
    except db_exc.DBError as error:
        LOG.warning('Could not release the claim of %s (%s); the cell '
                    'conductor releases stray claims later', instance_uuid,
                    db_api.describe_error(error))


def _map_to_cell(instance_uuids, cell, raise_errors=False):
    """Map the instances to ``cell`` and delete their build requests, in
    one API transaction (retried within the ``[api_database]`` budget)."""
    @db_api.retry_on_api_db_error
    def write():
        with db_api.api_writer() as session:
            cell_id = mappings.get_cell(session, cell.uuid).id
            for uuid in instance_uuids:
                mappings.set_instance_cell(session, uuid, cell_id)
                mappings.delete_build_request(session, uuid)
    try:
        write()
    except db_exc.DBError as error:
        if raise_errors:
            raise
        LOG.error('Mapping %s to cell %s failed: %s', instance_uuids,
                  cell.label(), db_api.describe_error(error))


def _keep_build_requests(instance_uuids, fault):
    """Write why the build requests stay (tried within the budget)."""
    @db_api.retry_on_api_db_error
    def write():
        with db_api.api_writer() as session:
            for uuid in instance_uuids:
                mappings.set_build_request_fault(session, uuid, fault)
    try:
        write()
    except db_exc.DBError as error:
        LOG.error('Could not record the fault of the build requests of %s: '
                  '%s', instance_uuids, db_api.describe_error(error))
