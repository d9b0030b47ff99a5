"""Deleted rows to shadow tables, and out of them: the database side of
``gantt-manage db archive_deleted_rows`` and ``gantt-manage db purge``.

A soft-deleted table (one with Nova's ``deleted`` column: ``instances``)
keeps its deleted rows until they are archived: moved, with the rows
that belong only to them, to ``shadow_<table>``
(:data:`scheduler.db.models.SHADOW_PREFIX`). A deleted instance takes
its ``migrations`` rows along. An instance that is not deleted is never
moved, nor is a deleted one that still holds an allocation (under its
own uuid or one of its migrations'): that is a stray claim, which ``db
check`` names and the conductor's reaper releases, and which must keep
the instance it belongs to. Allocations themselves are never archived:
a released claim is deleted, and a held one is live.

A move is one transaction per batch: the rows are locked, copied to the
shadow tables and deleted from the main ones, so that a crash loses or
duplicates nothing, and two archivers at once move each row once::

    with db_api.target_cell(url):          # or [database]
        moved = archive.archive_deleted_rows(max_rows=1000)
        # -> {'instances': 3, 'migrations': 1}; {} when nothing is left
        for table, rows, column in archive.purge_shadow_tables(before):
            ...                            # rows deleted from each

``max_rows`` counts the rows moved, parents and children, as Nova's: a
soft limit, since a deleted instance always moves with all of its
migrations. ``before`` (a naive UTC datetime) keeps the rows deleted
since then.
"""

import collections

from oslo_log import log as logging
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import models

LOG = logging.getLogger(__name__)

_INSTANCE = models.Instance.__table__
_MIGRATION = models.Migration.__table__
_ALLOC = models.Allocation.__table__

# The rows that belong only to a deleted row of a soft-deleted table, and
# move with it: (child table, its column, the parent's column it holds).
DEPENDENTS = {
    'instances': ((_MIGRATION, 'instance_uuid', 'uuid'),),
}

# Statements name at most this many ids each.
_CHUNK = 500

# The timestamp that dates a shadow row for purge --before, in order of
# preference (Nova's).
PURGE_COLUMNS = ('deleted_at', 'updated_at', 'created_at')


class ArchiveMismatch(Exception):
    """A batch copied a different number of rows than it deleted (it is
    rolled back)."""


def shadow_of(table):
    """``shadow_<table>`` of a main table."""
    return models.Base.metadata.tables[models.SHADOW_PREFIX + table.name]


def soft_deleted_tables():
    """The main tables with a ``deleted`` column, which archive moves
    rows from (each has a shadow table)."""
    return [table for table in models.Base.metadata.sorted_tables
            if 'deleted' in table.c
            and not table.name.startswith(models.SHADOW_PREFIX)]


def shadow_tables():
    return [table for table in models.Base.metadata.sorted_tables
            if table.name.startswith(models.SHADOW_PREFIX)]


def _still_holding(table):
    """Conditions a deleted row must also meet to be archived: for an
    instance, that neither it nor its migrations hold an allocation."""
    if table is not _INSTANCE:
        return []
    migration = _MIGRATION.alias('held_migration')
    return [
        ~sa.exists().where(_ALLOC.c.consumer_uuid == _INSTANCE.c.uuid),
        ~sa.exists().where(migration.c.instance_uuid == _INSTANCE.c.uuid,
                           _ALLOC.c.consumer_uuid == migration.c.uuid),
    ]


def _lock_deleted(session, table, limit, before):
    """The first ``limit`` archivable deleted rows of ``table`` (id and
    the columns its dependents refer to), locked until the transaction
    ends."""
    keys = {parent_column for _child, _column, parent_column
            in DEPENDENTS.get(table.name, ())}
    query = (sa.select(table.c.id, *[table.c[key] for key in sorted(keys)])
             .where(table.c.deleted != 0, *_still_holding(table))
             .order_by(table.c.id).limit(limit).with_for_update())
    if before is not None:
        query = query.where(table.c.deleted_at < before)
    return session.execute(query).all()


def _lock_dependents(session, table, parents):
    """``{parent id: [(child table, child id)]}``, the children locked."""
    found = collections.defaultdict(list)
    for child, column, parent_column in DEPENDENTS.get(table.name, ()):
        owner = collections.defaultdict(list)
        for parent in parents:
            owner[getattr(parent, parent_column)].append(parent.id)
        keys = sorted(owner)
        for start in range(0, len(keys), _CHUNK):
            rows = session.execute(
                sa.select(child.c.id, child.c[column])
                .where(child.c[column].in_(keys[start:start + _CHUNK]))
                .order_by(child.c.id).with_for_update()).all()
            for child_id, key in rows:
                for parent_id in owner[key]:
                    found[parent_id].append((child, child_id))
    return found


def _move(session, table, ids):
    """Copy rows ``ids`` of ``table`` to its shadow table and delete
    them; the number moved."""
    shadow = shadow_of(table)
    names = [column.name for column in table.c]
    moved = 0
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        copied = session.execute(sa.insert(shadow).from_select(
            names, sa.select(*table.c).where(table.c.id.in_(chunk))))
        deleted = session.execute(sa.delete(table).where(
            table.c.id.in_(chunk)))
        if not copied.rowcount == deleted.rowcount == len(chunk):
            raise ArchiveMismatch(
                '%s: %d rows copied, %d deleted, %d expected'
                % (table.name, copied.rowcount, deleted.rowcount,
                   len(chunk)))
        moved += deleted.rowcount
    return moved


@db_api.retry_on_db_error
def _archive_batch(table, max_rows, before):
    """Move at most ``max_rows`` rows (a deleted row with all of its
    dependents, the last one possibly beyond) in one transaction;
    ``{table name: rows moved}``."""
    with db_api.writer() as session:
        parents = _lock_deleted(session, table, max_rows, before)
        if not parents:
            return {}
        dependents = _lock_dependents(session, table, parents)
        ids = collections.defaultdict(list)
        rows = 0
        for parent in parents:
            for child, child_id in dependents.get(parent.id, ()):
                ids[child].append(child_id)
            ids[table].append(parent.id)
            rows += 1 + len(dependents.get(parent.id, ()))
            if rows >= max_rows:
                break
        # Children first: had they foreign keys to their parent, the
        # parent's delete would need them gone.
        moved = {}
        for each in sorted(ids, key=lambda t: t is table):
            moved[each.name] = _move(session, each, ids[each])
    LOG.debug('Archived %s', moved)
    return moved


def archive_deleted_rows(max_rows, before=None):
    """Move up to ``max_rows`` deleted rows (and theirs) of every
    soft-deleted table of the targeted database to the shadow tables;
    ``{table name: rows moved}``, without tables where none moved."""
    moved = collections.Counter()
    for table in soft_deleted_tables():
        left = max_rows - sum(moved.values())
        if left <= 0:
            break
        moved.update(_archive_batch(table, left, before))
    return {name: rows for name, rows in moved.items() if rows}


def _purge_column(table):
    for name in PURGE_COLUMNS:
        if name in table.c:
            return table.c[name]
    return None


@db_api.retry_on_db_error
def _purge_table(table, column, before):
    with db_api.writer() as session:
        query = sa.delete(table)
        if before is not None:
            query = query.where(column < before)
        return session.execute(query).rowcount


def purge_shadow_tables(before=None):
    """Delete the rows of every shadow table of the targeted database
    (with ``before``, those whose timestamp, see :data:`PURGE_COLUMNS`,
    is older); ``[(table name, rows deleted, column or None)]``, one per
    table that lost rows, and ``(name, None, None)`` for a table that
    has no timestamp to go by."""
    results = []
    for table in shadow_tables():
        column = _purge_column(table) if before is not None else None
        if before is not None and column is None:
            results.append((table.name, None, None))
            continue
        rows = _purge_table(table, column, before)
        if rows:
            results.append((table.name, rows,
                            None if column is None else column.name))
    return results
