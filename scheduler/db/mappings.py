"""Queries over the API database: cell, host and instance mappings, and
the build requests of the super-conductor.

Plain functions over a session of :func:`scheduler.db.api.api_reader` or
:func:`~scheduler.db.api.api_writer`::

    with db_api.api_writer() as session:
        cell_id = mappings.create_cell(session, uuid, 'cell1',
                                       'rabbit://...', 'mysql+pymysql://...')
        mappings.create_host_mapping(session, 'compute1', cell_id)

Rows are SQLAlchemy rows; :mod:`scheduler.cells` turns cell rows into
``CellMapping`` objects. A host is in at most one cell (``host`` is
unique): creating a second mapping raises oslo.db's ``DBDuplicateEntry``.
"""

import sqlalchemy as sa

from scheduler.db import api_models
from scheduler.db import models
from scheduler import exception

# Nova's uuid of cell0 (scheduler.cells.CELL0_UUID): no computes, no
# claims.
CELL0_UUID = '00000000-0000-0000-0000-000000000000'

# ``cell_v2 map_instances`` keeps where it stopped as an instance
# mapping of this project (as Nova does), its instance uuid with spaces
# for dashes; listings leave it out.
MARKER_PROJECT = 'INSTANCE_MIGRATION_MARKER'

_CELL = api_models.CellMapping.__table__
_HOST = api_models.HostMapping.__table__
_INSTANCE = api_models.InstanceMapping.__table__
_BUILD = api_models.BuildRequest.__table__


def list_cells(session):
    """Every cell mapping, ordered by name (then uuid)."""
    return session.execute(sa.select(_CELL).order_by(
        sa.func.coalesce(_CELL.c.name, ''), _CELL.c.uuid)).all()


def get_cell(session, uuid):
    """The cell mapping ``uuid``; CellMappingNotFound if there is none."""
    row = session.execute(sa.select(_CELL).where(
        _CELL.c.uuid == uuid)).first()
    if row is None:
        raise exception.CellMappingNotFound(uuid=uuid)
    return row


def create_cell(session, uuid, name, transport_url, database_connection,
                disabled=False):
    """Add a cell mapping; return its id. DBDuplicateEntry if ``uuid``
    is taken."""
    return session.execute(sa.insert(_CELL).values(
        uuid=uuid, name=name, transport_url=transport_url,
        database_connection=database_connection, disabled=disabled,
        created_at=models.utcnow())).inserted_primary_key[0]


def update_cell(session, cell_id, **values):
    """Change the given columns of cell ``cell_id``."""
    session.execute(sa.update(_CELL).where(_CELL.c.id == cell_id).values(
        updated_at=models.utcnow(), **values))


def delete_cell(session, cell_id):
    """Delete cell ``cell_id`` with its host and instance mappings."""
    session.execute(sa.delete(_INSTANCE).where(
        _INSTANCE.c.cell_id == cell_id))
    session.execute(sa.delete(_HOST).where(_HOST.c.cell_id == cell_id))
    session.execute(sa.delete(_CELL).where(_CELL.c.id == cell_id))


def _host_query():
    return (sa.select(_HOST.c.host, _HOST.c.cell_id,
                      _CELL.c.uuid.label('cell_uuid'),
                      _CELL.c.name.label('cell_name'))
            .join(_CELL, _CELL.c.id == _HOST.c.cell_id))


def list_host_mappings(session, cell_id=None):
    """Host mappings with their cell's uuid and name, by host name."""
    query = _host_query().order_by(_HOST.c.host)
    if cell_id is not None:
        query = query.where(_HOST.c.cell_id == cell_id)
    return session.execute(query).all()


def host_mappings_of(session, hosts):
    """``{host: row}`` of those of ``hosts`` that are mapped."""
    found = {}
    hosts = sorted(set(hosts))
    for start in range(0, len(hosts), 500):
        for row in session.execute(_host_query().where(
                _HOST.c.host.in_(hosts[start:start + 500]))):
            found[row.host] = row
    return found


def delete_host_mapping(session, host):
    """Unmap ``host``; whether it was mapped."""
    return session.execute(sa.delete(_HOST).where(
        _HOST.c.host == host)).rowcount == 1


def create_host_mapping(session, host, cell_id):
    """Map ``host`` to cell ``cell_id``. DBDuplicateEntry if it is
    mapped already."""
    session.execute(sa.insert(_HOST).values(
        host=host, cell_id=cell_id, created_at=models.utcnow()))


def count_host_mappings(session, cell_id):
    return session.execute(sa.select(sa.func.count()).select_from(
        _HOST).where(_HOST.c.cell_id == cell_id)).scalar_one()


def count_instance_mappings(session, cell_id):
    return session.execute(sa.select(sa.func.count()).select_from(
        _INSTANCE).where(_INSTANCE.c.cell_id == cell_id)).scalar_one()


def create_instance_mapping(session, instance_uuid, project_id,
                            cell_id=None, user_id=None):
    """Record which cell an instance is in (None: not scheduled yet)."""
    session.execute(sa.insert(_INSTANCE).values(
        instance_uuid=instance_uuid, project_id=project_id, cell_id=cell_id,
        user_id=user_id, queued_for_delete=False,
        created_at=models.utcnow()))


def get_instance_mapping(session, instance_uuid):
    """The instance's mapping with its cell's columns (``cell_uuid``,
    ``cell_name``, ``database_connection``; None when it has no cell), or
    None when it is not mapped."""
    return session.execute(
        sa.select(_INSTANCE.c.instance_uuid, _INSTANCE.c.cell_id,
                  _CELL.c.uuid.label('cell_uuid'),
                  _CELL.c.name.label('cell_name'),
                  _CELL.c.database_connection)
        .outerjoin(_CELL, _CELL.c.id == _INSTANCE.c.cell_id)
        .where(_INSTANCE.c.instance_uuid == instance_uuid)).first()


def list_instance_mappings(session, uuids=None):
    """Instance mappings (of ``uuids`` if given) with their cell's
    columns as :func:`get_instance_mapping`, by instance uuid."""
    query = (sa.select(_INSTANCE.c.instance_uuid, _INSTANCE.c.cell_id,
                       _INSTANCE.c.project_id,
                       _CELL.c.uuid.label('cell_uuid'),
                       _CELL.c.name.label('cell_name'),
                       _CELL.c.database_connection)
             .outerjoin(_CELL, _CELL.c.id == _INSTANCE.c.cell_id)
             .where(_INSTANCE.c.project_id != MARKER_PROJECT)
             .order_by(_INSTANCE.c.instance_uuid))
    if uuids is not None:
        query = query.where(_INSTANCE.c.instance_uuid.in_(list(uuids)))
    return session.execute(query).all()


def mapped_instance_uuids(session, uuids):
    """Those of ``uuids`` that have an instance mapping."""
    return set(session.execute(sa.select(_INSTANCE.c.instance_uuid).where(
        _INSTANCE.c.instance_uuid.in_(list(uuids)))).scalars())


def pop_marker(session):
    """The instance uuid ``map_instances`` stopped at (None: none),
    forgetting it."""
    row = session.execute(sa.select(_INSTANCE.c.id, _INSTANCE.c.instance_uuid)
                          .where(_INSTANCE.c.project_id == MARKER_PROJECT)
                          ).first()
    if row is None:
        return None
    session.execute(sa.delete(_INSTANCE).where(_INSTANCE.c.id == row.id))
    return row.instance_uuid.replace(' ', '-')


def save_marker(session, instance_uuid):
    """Remember that ``map_instances`` stopped at ``instance_uuid``."""
    create_instance_mapping(session, instance_uuid.replace('-', ' '),
                            MARKER_PROJECT, user_id=MARKER_PROJECT)


def set_instance_cell(session, instance_uuid, cell_id):
    """Point an instance mapping at cell ``cell_id``; whether it exists."""
    return session.execute(sa.update(_INSTANCE).where(
        _INSTANCE.c.instance_uuid == instance_uuid).values(
        cell_id=cell_id, updated_at=models.utcnow())).rowcount == 1


def create_build_request(session, instance_uuid, project_id, request_spec,
                         owner=None):
    """Record an accepted build (``request_spec``: a RequestSpec
    primitive), owned by ``owner`` (see :mod:`scheduler.db.build_requests`).
    DBDuplicateEntry if the instance has one."""
    now = models.utcnow()
    session.execute(sa.insert(_BUILD).values(
        instance_uuid=instance_uuid, project_id=project_id,
        request_spec=request_spec, owner=owner, created_at=now,
        updated_at=now))


def build_requests_of(session, uuids):
    """``{instance_uuid: row}`` of the build requests of ``uuids``."""
    return {row.instance_uuid: row for row in session.execute(
        sa.select(_BUILD).where(_BUILD.c.instance_uuid.in_(list(uuids))))}
