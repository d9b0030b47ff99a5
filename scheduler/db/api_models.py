"""SQLAlchemy 2 typed models of the API database (``[api_database]``).

The tables Nova keeps in its API database that Gantt needs so far, with
Nova's names and columns: ``cell_mappings`` (where each cell's database
and broker are), ``host_mappings`` (which cell a compute host is in) and
``instance_mappings`` (which cell an instance is in; none while it is
being scheduled), ``build_requests`` (a build the super-conductor
accepted and has not yet placed in a cell), and, as Nova keeps them
there, the host aggregates (``aggregates``, ``aggregate_hosts``,
``aggregate_metadata``) and the server groups (``instance_groups``,
``instance_group_members``).

Aggregates and server groups live here once ``[api_database]
connection`` is set: every reader and writer of them uses this
database then. Their tables are copies of the cell schema's
(:mod:`scheduler.db.models`, ``Table.to_metadata``): same names, same
columns, same constraints, so that the queries of
:mod:`scheduler.db.aggregates` and :mod:`scheduler.db.instance_groups`
run unchanged on either database. The cell schema keeps its own copies
(as Nova kept its old tables): without ``[api_database]`` Gantt is one
cell and they are the ones in use; with it they are left alone.
Request specs are not stored: they travel in the RPC calls, and
``build_requests`` keeps the spec of a build not yet placed.

The schema is built only by the migrations in ``api_migrations/``
(``gantt-manage api_db sync``); a test checks that these models and those
migrations agree. The metadata is separate from the cell databases' one,
with the same naming convention.
"""

import datetime
from typing import Any
from typing import Optional

import sqlalchemy as sa
from sqlalchemy import orm

from scheduler.db import models


class ApiBase(orm.DeclarativeBase):
    metadata = sa.MetaData(naming_convention=models.NAMING_CONVENTION)


class _Timestamps:
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        models.Timestamp, default=models.utcnow)
    updated_at: orm.Mapped[Optional[datetime.datetime]] = orm.mapped_column(
        models.Timestamp, onupdate=models.utcnow)


class CellMapping(_Timestamps, ApiBase):
    """One cell: its database and the broker of its computes.

    ``transport_url`` is ``none:///`` for cell0, which has no computes.
    """

    __tablename__ = 'cell_mappings'
    __table_args__ = (sa.UniqueConstraint('uuid'),)

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36))
    name: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    transport_url: orm.Mapped[Optional[str]] = orm.mapped_column(sa.Text)
    database_connection: orm.Mapped[Optional[str]] = orm.mapped_column(
        sa.Text)
    disabled: orm.Mapped[bool] = orm.mapped_column(default=False)


class HostMapping(_Timestamps, ApiBase):
    """The cell of one compute host (``gantt-manage cell_v2
    discover_hosts`` writes them)."""

    __tablename__ = 'host_mappings'
    __table_args__ = (sa.UniqueConstraint('host'),)

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    cell_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('cell_mappings.id'), index=True)
    host: orm.Mapped[str] = orm.mapped_column(sa.String(255))


class InstanceMapping(_Timestamps, ApiBase):
    """The cell of one instance; ``cell_id`` is None until it is
    scheduled (or buried in cell0)."""

    __tablename__ = 'instance_mappings'
    __table_args__ = (sa.UniqueConstraint('instance_uuid'),
                      sa.Index(None, 'project_id'))

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    instance_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36))
    cell_id: orm.Mapped[Optional[int]] = orm.mapped_column(
        sa.ForeignKey('cell_mappings.id'), index=True)
    project_id: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    user_id: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    queued_for_delete: orm.Mapped[bool] = orm.mapped_column(default=False)


class BuildRequest(ApiBase):
    """A build accepted by the super-conductor and not yet in a cell:
    the request as it came (``request_spec``, a RequestSpec primitive).
    Deleted once the instance is created in its cell (or in cell0); one
    left behind says why in ``fault`` (the cell database was away).

    ``owner`` is the super-conductor process working on it, which renews
    ``updated_at`` while it lives; None once it left the build request
    behind. ``waiting_cell_uuid`` is the cell whose database it waits for
    (see ``conductor/tasks/build_requests.py``)."""

    __tablename__ = 'build_requests'
    __table_args__ = (sa.UniqueConstraint('instance_uuid'),
                      sa.Index(None, 'project_id'),
                      sa.Index(None, 'owner'))

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    instance_uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36))
    project_id: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    request_spec: orm.Mapped[Any] = orm.mapped_column(models.JSONText)
    fault: orm.Mapped[Optional[str]] = orm.mapped_column(sa.Text)
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        models.Timestamp, default=models.utcnow)
    owner: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    updated_at: orm.Mapped[Optional[datetime.datetime]] = orm.mapped_column(
        models.Timestamp)
    waiting_cell_uuid: orm.Mapped[Optional[str]] = orm.mapped_column(
        sa.String(36))


def _copied(model):
    """The table of ``model`` (a cell-schema model) in this metadata."""
    return model.__table__.to_metadata(ApiBase.metadata)


class Aggregate(ApiBase):
    """A host aggregate (see :class:`scheduler.db.models.Aggregate`)."""

    __table__ = _copied(models.Aggregate)


class AggregateHost(ApiBase):
    __table__ = _copied(models.AggregateHost)


class AggregateMetadata(ApiBase):
    __table__ = _copied(models.AggregateMetadata)


class InstanceGroup(ApiBase):
    """A server group and its policy (see
    :class:`scheduler.db.models.InstanceGroup`)."""

    __table__ = _copied(models.InstanceGroup)


class InstanceGroupMember(ApiBase):
    __table__ = _copied(models.InstanceGroupMember)
