"""SQLAlchemy 2 typed models of the API database (``[api_database]``).

The tables Nova keeps in its API database that Gantt needs so far, with
Nova's names and columns: ``cell_mappings`` (where each cell's database
and broker are), ``host_mappings`` (which cell a compute host is in) and
``instance_mappings`` (which cell an instance is in; none while it is
being scheduled) and ``build_requests`` (a build the super-conductor
accepted and has not yet placed in a cell). Aggregates, server groups
and request specs are still in each cell's database
(:mod:`scheduler.db.models`).

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
