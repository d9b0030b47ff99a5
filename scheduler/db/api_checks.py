"""Checks of the API database against the cells: the invariants the
super-conductor (``conductor/tasks/super_build.py``) keeps, for
``gantt-manage db check``.

How the super-conductor writes them: accepting a build writes its
instance mapping (no cell) and its build request in one transaction;
the instance is then created in its cell (or buried in cell0), and only
then, in one transaction, is the mapping pointed at that cell and the
build request deleted. A server group's members are added after the
build was accepted. Hence:

* :data:`MAPPED_NOT_THERE`: a mapping that names a cell whose database
  has no row of the instance (deleted rows count: they are there), and
  no build request.
* :data:`UNMAPPED_ORPHAN`: a mapping with no cell and no build request
  (nothing will ever place that instance).
* :data:`BUILD_REQUEST_LEFT`: a build request of an instance whose row
  is in a cell, not renewed by its owner for longer than the grace
  period (a build in flight has both for a moment).
* :data:`MEMBER_NOWHERE`: a server group member whose instance has no
  row in any cell and no build request.

Read the API database first (:func:`read_api`), then the cells: a
mapping read before a cell's rows were read names a row created before
it, so that only a build request needs the grace period. A cell that
could not be read tells nothing: what would need it is skipped::

    with db_api.api_reader() as session:
        state = api_checks.read_api(session)
    rows = {cell.uuid: set_of_instance_uuids_read_in_that_cell}
    for finding in api_checks.find_api_problems(state, rows, set(), cutoff):
        print(finding.instance_uuid, finding.cell, finding.why)
"""

import collections

import sqlalchemy as sa

from scheduler.db import api_models
from scheduler.db import mappings

MAPPED_NOT_THERE = 'mapped to a cell that does not have it'
UNMAPPED_ORPHAN = 'mapping with no cell and no build request'
BUILD_REQUEST_LEFT = 'build request of an instance already in a cell'
MEMBER_NOWHERE = 'server group member that exists nowhere'
KINDS = (MAPPED_NOT_THERE, UNMAPPED_ORPHAN, BUILD_REQUEST_LEFT,
         MEMBER_NOWHERE)

ApiFinding = collections.namedtuple('ApiFinding',
                                    'instance_uuid cell why detail')
ApiState = collections.namedtuple(
    'ApiState', 'cells instance_mappings build_requests members')

_BUILD = api_models.BuildRequest.__table__
_GROUP = api_models.InstanceGroup.__table__
_MEMBER = api_models.InstanceGroupMember.__table__


def read_api(session):
    """What the checks need of the API database, in one transaction:
    ``cells`` ({uuid: label}), ``instance_mappings`` (rows),
    ``build_requests`` ({instance uuid: row}, without their spec) and
    ``members`` ([(group uuid, group name, instance uuid)])."""
    cells = {row.uuid: row.name or row.uuid
             for row in mappings.list_cells(session)}
    requests = {row.instance_uuid: row for row in session.execute(
        sa.select(_BUILD.c.instance_uuid, _BUILD.c.owner,
                  _BUILD.c.created_at, _BUILD.c.updated_at))}
    members = session.execute(
        sa.select(_GROUP.c.uuid, _GROUP.c.name, _MEMBER.c.instance_uuid)
        .join(_GROUP, _GROUP.c.id == _MEMBER.c.group_id)
        .order_by(_MEMBER.c.instance_uuid, _GROUP.c.uuid)).all()
    return ApiState(cells, mappings.list_instance_mappings(session),
                    requests, [tuple(row) for row in members])


def _mapping_problems(state, located, rows_of, unread):
    for mapping in state.instance_mappings:
        uuid = mapping.instance_uuid
        if uuid in state.build_requests:
            continue     # a build still being placed
        if mapping.cell_uuid is None:
            yield ApiFinding(uuid, '-', UNMAPPED_ORPHAN,
                             'nothing will place it')
            continue
        if mapping.cell_uuid in unread or \
                uuid in rows_of.get(mapping.cell_uuid, ()):
            continue
        elsewhere = located.get(uuid)
        yield ApiFinding(
            uuid, state.cells.get(mapping.cell_uuid, mapping.cell_uuid),
            MAPPED_NOT_THERE,
            'its row is in cell %s' % state.cells.get(elsewhere, elsewhere)
            if elsewhere else 'it is in no cell')


def _build_request_problems(state, located, cutoff):
    for uuid, request in sorted(state.build_requests.items()):
        cell = located.get(uuid)
        last_sign = request.updated_at or request.created_at
        if cell is None or last_sign >= cutoff:
            continue
        yield ApiFinding(uuid, state.cells.get(cell, cell),
                         BUILD_REQUEST_LEFT,
                         'owner %s, last renewed %s' % (
                             request.owner or '-',
                             last_sign.isoformat(sep=' ',
                                                 timespec='seconds')))


def _member_problems(state, located, unread):
    mapped = {row.instance_uuid: row.cell_uuid
              for row in state.instance_mappings}
    for group_uuid, group_name, uuid in state.members:
        if uuid in located or uuid in state.build_requests:
            continue
        cell = mapped.get(uuid)
        # Its row may be in a cell that could not be read.
        if unread and (cell is None or cell in unread):
            continue
        yield ApiFinding(uuid, state.cells.get(cell, '-'), MEMBER_NOWHERE,
                         'member of server group %s (%s)'
                         % (group_name or '-', group_uuid))


def find_api_problems(state, rows_of, unread, cutoff):
    """The API database's problems (see the module's docstring) as
    ``[ApiFinding]``: ``state`` from :func:`read_api`, read before the
    cells; ``rows_of`` ``{cell uuid: instance uuids with a row there}``
    of the cells read; ``unread`` the uuids of the cells that could not
    be; ``cutoff`` the time before which a build request's last renewal
    makes it left behind."""
    located = {}
    for cell_uuid, uuids in rows_of.items():
        for uuid in uuids:
            located.setdefault(uuid, cell_uuid)
    findings = list(_mapping_problems(state, located, rows_of, unread))
    findings.extend(_build_request_problems(state, located, cutoff))
    findings.extend(_member_problems(state, located, unread))
    return findings
