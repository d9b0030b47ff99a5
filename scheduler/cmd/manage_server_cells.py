"""``gantt-manage server list/show`` with cells: instances found through
their mappings.

With ``[api_database] connection`` set, an instance lives in its cell's
database (cell0 for the builds that got no host) and the API database
says which: ``instance_mappings``. A build the super-conductor accepted
and has not yet created in a cell is only a build request; it is shown
as ``building`` (task ``scheduling``) until it lands in a cell or in
cell0: ``server show`` gives the super-conductor working on it
(``owner``, none while nobody does) and, for one left behind, why
(``fault``) and the cell whose database it waits for
(``waiting_for_cell``); a super-conductor schedules it again (see
``conductor/tasks/resume_builds.py``). A cell whose database cannot be
read is named on stderr and the others are listed::

    rows = manage_server_cells.list_instances(host='compute1')
    for cell_name, row in rows: ...
    cell_name, row = manage_server_cells.get_instance(uuid)
"""

import collections
import sys

from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from scheduler import cells
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler.db import models
from scheduler import exception

# The columns of an instance row a build request has an answer for.
BuildRow = collections.namedtuple('BuildRow', [
    'uuid', 'display_name', 'vm_state', 'task_state', 'host', 'node',
    'created_at', 'project_id', 'fault', 'request_spec', 'owner',
    'waiting_for_cell'])

# What a listing shows as the cell of a build request.
NO_CELL = '-'


def build_row(request):
    """A :class:`BuildRow` for a ``build_requests`` row: still building,
    whatever held it back so far (its ``fault``)."""
    return BuildRow(
        uuid=request.instance_uuid, display_name=None,
        vm_state=db_instances.BUILDING, task_state='scheduling', host=None,
        node=None, created_at=request.created_at,
        project_id=request.project_id, fault=request.fault,
        request_spec=request.request_spec, owner=request.owner,
        waiting_for_cell=_cell_label(request.waiting_cell_uuid))


def _cell_label(uuid):
    if uuid is None:
        return None
    try:
        return cells.get_cell(uuid).label()
    except (exception.CellMappingNotFound, exception.DatabaseUnavailable):
        return uuid


def _warn(cell, error):
    sys.stderr.write('gantt-manage: warning: cell %s cannot be read: %s\n'
                     % (cell.label(), config.mask_secrets(
                         db_api.describe_error(error))))


def list_instances(uuids=None, host=None, vm_state=None,
                   include_deleted=False):
    """``[(cell name, row)]``: the instances of every cell, then the
    build requests not yet in a cell (unless ``host`` is asked for)."""
    found = []
    for cell in cells.get_cells():
        try:
            with cells.target(cell):
                with db_api.reader() as session:
                    rows = db_instances.list_instances(
                        session, uuids=uuids, host=host, vm_state=vm_state,
                        include_deleted=include_deleted)
        except (db_exc.DBError, sa_exc.SQLAlchemyError,
                exception.DatabaseUnavailable) as error:
            _warn(cell, error)
            continue
        found.extend((cell.label(), row) for row in rows)
    if host is not None:
        return found
    with db_api.api_reader() as session:
        unplaced = [row.instance_uuid for row in
                    mappings.list_instance_mappings(session, uuids)
                    if row.cell_id is None]
        requests = mappings.build_requests_of(session, unplaced)
    for uuid in unplaced:
        if uuid not in requests:
            continue
        row = build_row(requests[uuid])
        if vm_state is None or row.vm_state == vm_state:
            found.append((NO_CELL, row))
    return found


def get_instance(uuid):
    """``(cell name, row)`` of one instance, through its mapping.

    :raises: InstanceNotFound
    """
    with db_api.api_reader() as session:
        mapping = mappings.get_instance_mapping(session, uuid)
        requests = mappings.build_requests_of(session, [uuid])
    if mapping is None:
        raise exception.InstanceNotFound(uuid=uuid)
    if mapping.cell_id is None:
        if uuid not in requests:
            raise exception.InstanceNotFound(uuid=uuid)
        return NO_CELL, build_row(requests[uuid])
    with db_api.target_cell(mapping.database_connection):
        with db_api.reader() as session:
            row = db_instances.get(session, uuid)
    return mapping.cell_name or mapping.cell_uuid, row


def rename(uuid, name):
    """Set the display name of an instance in its cell; False while it
    has no cell yet (a build request has no name)."""
    with db_api.api_reader() as session:
        mapping = mappings.get_instance_mapping(session, uuid)
    if mapping is None or mapping.cell_id is None:
        return False
    with db_api.target_cell(mapping.database_connection):
        with db_api.writer() as session:
            db_instances.update(session, uuid, display_name=name)
    return True


def fields_of(row):
    """``[[field, value]]`` of an instance row or a BuildRow."""
    if isinstance(row, BuildRow):
        return [[name, getattr(row, name)] for name in BuildRow._fields]
    return [[column.name, getattr(row, column.name)]
            for column in models.Instance.__table__.columns]
