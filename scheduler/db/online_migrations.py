"""Online data migrations: rows a cell's database carries over to the API
database when a deployment moves to cells.

A deployment of one cell keeps its aggregates and server groups in
``[database]``. Once ``[api_database]`` is set, Gantt reads and writes
them in the API database only (as Nova does); the ones made before are
moved there by ``gantt-manage db online_data_migrations``, run with each
former cell's configuration, as Nova's command moved them from its main
database. Each migration takes at most ``max_count`` rows of the
targeted cell database and answers ``(found, done)``::

    mover = online_migrations.AggregateMove()
    found, done = mover(50)      # until found == 0

Each row moves on its own: it is created in the API database (same uuid,
name, metadata and hosts, or policy, rules and members; new ids) in one
transaction, then deleted from the cell in another. A move cut short
between the two (a database or the process gone) is finished by the
next run, which finds the uuid in the API database already and only
deletes the cell's row. A row the API database refuses (an aggregate
whose name another aggregate has there, or whose hosts are in another
zone there) stays in the cell and is reported in ``errors``; later
batches of the same run pass it by.
"""

from oslo_log import log as logging
import sqlalchemy as sa

from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import instance_groups as db_groups
from scheduler.db import models
from scheduler import exception

LOG = logging.getLogger(__name__)

_AGG = models.Aggregate.__table__
_GROUP = models.InstanceGroup.__table__


class _Move:
    """One migration: ``__call__(max_count) -> (found, done)``; the rows
    it could not move are in ``errors`` (``[(row uuid, reason)]``)."""

    name = None
    table = None

    def __init__(self):
        self.errors = []
        self._refused = set()

    def __call__(self, max_count):
        with db_api.reader() as session:
            query = (sa.select(self.table.c.id, self.table.c.uuid)
                     .order_by(self.table.c.id).limit(max_count))
            if self._refused:
                query = query.where(self.table.c.id.not_in(self._refused))
            rows = session.execute(query).all()
        done = 0
        for row in rows:
            try:
                moved = self._move(row.uuid)
            except exception.InvalidRequest as error:
                self._refused.add(row.id)
                self.errors.append((row.uuid, str(error)))
                LOG.info('%s: %s not moved: %s', self.name, row.uuid, error)
                continue
            if moved:
                done += 1
        return len(rows), done

    def _move(self, uuid):
        raise NotImplementedError


class AggregateMove(_Move):
    """Aggregates, their hosts and metadata (Nova's
    ``migrate_aggregates``)."""

    name = 'migrate_aggregates'
    table = _AGG

    def _move(self, uuid):
        with db_api.reader() as session:
            try:
                aggregate = db_aggregates.get(session, uuid)
            except db_aggregates.AggregateNotFound:
                return False        # moved or deleted meanwhile
        _create_aggregate(aggregate)
        _delete_in_cell(db_aggregates.delete, aggregate.id)
        return True


@db_api.retry_on_db_error
def _delete_in_cell(delete, ident):
    try:
        with db_api.writer() as session:
            delete(session, ident)
    except exception.NotFound:
        pass                        # another run deleted it meanwhile


@db_api.retry_on_api_db_error
def _create_aggregate(aggregate):
    with db_api.api_writer() as session:
        try:
            db_aggregates.get(session, aggregate.uuid)
            return                  # an earlier run created it
        except db_aggregates.AggregateNotFound:
            pass
        created = db_aggregates.create(session, aggregate.name,
                                       metadata=aggregate.metadata,
                                       uuid=aggregate.uuid)
        if aggregate.hosts:
            db_aggregates.add_hosts(session, created.id,
                                    sorted(aggregate.hosts))


class GroupMove(_Move):
    """Server groups and their members (Nova's
    ``migrate_instance_groups_to_api_db``)."""

    name = 'migrate_instance_groups_to_api_db'
    table = _GROUP

    def _move(self, uuid):
        with db_api.reader() as session:
            try:
                group = db_groups.get(session, uuid)
            except db_groups.InstanceGroupNotFound:
                return False
        _create_group(group)
        _delete_in_cell(db_groups.delete, group.uuid)
        return True


@db_api.retry_on_api_db_error
def _create_group(group):
    with db_api.api_writer() as session:
        try:
            created = db_groups.get(session, group.uuid)
        except db_groups.InstanceGroupNotFound:
            created = db_groups.create(
                session, group.name, group.policy, rules=group.rules,
                project_id=group.project_id, user_id=group.user_id,
                uuid=group.uuid)
        db_groups.add_members(session, created.id, group.members)


def migrations():
    """A fresh instance of every migration, in the order they run."""
    return [AggregateMove(), GroupMove()]
