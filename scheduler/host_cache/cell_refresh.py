"""One refresh of the host cache over every cell.

:func:`refresh` is what :meth:`HostManager.refresh
<scheduler.host_cache.refreshing.Refreshing.refresh>` runs with cells:
it hands each cell its read through the manager's
:class:`scheduler.host_cache.cell_gather.CellGather` (:func:`cell_job`
says which read: whole, incremental on the cell's thread, or multiplexed
on PostgreSQL), reads the aggregates from the API database in the
background, and merges the cells' answers into one
:class:`scheduler.host_cache.refresh_changes.Changes`, the hosts of the
cells that did not answer removed::

    table = refresh(manager, changes, full, known, reread, dead, began,
                    seen_seq)
"""

import collections
import datetime
import operator

import numpy as np

from scheduler import cells
from scheduler.db import api as db_api
from scheduler.host_cache import cell_gather
from scheduler.host_cache import cell_reads
from scheduler.host_cache import host_reads
from scheduler.host_cache import instance_tracking
from scheduler.host_cache import node_extras
from scheduler.host_cache import refresh_changes


def _by_cell(cache_ids):
    """``{cell index: {node id: value}}`` of ``{cache id: value}``, in
    one pass."""
    split = collections.defaultdict(dict)
    for cache_id, value in cache_ids.items():
        split[cache_id >> cell_gather.ID_BITS][
            cache_id & cell_gather.NODE_MASK] = value
    return split


def _dead_by_cell(table, dead):
    """``{cell uuid: hosts}`` of the dead hosts, by the cell of their
    nodes in ``table``; those the table has no node of under ``None``
    (asked of every cell)."""
    split = collections.defaultdict(set)
    for host in dead:
        rows = () if table is None else table.rows_by_host.get(host, ())
        cell = table.states[rows[0]].cell_uuid if rows else None
        split[cell].add(host)
    return split


def cell_job(full, known, reread, dead, alive_since, instances, held=None):
    """The ``job_for`` of :meth:`cell_gather.CellGather.start` for one
    refresh (see HostManager.refresh for what each read means): the split of
    ``known``, ``reread`` and ``dead`` by cell is done once here, not
    once per cell. ``held``: the cache's ``{cache id: generation}``, whose
    rows an incremental read takes no extras of (see
    :func:`node_extras.ids_to_read`)."""
    slack = datetime.timedelta(seconds=refresh_changes.WRITE_SLACK)
    known = _by_cell(known or {})
    reread = _by_cell(dict.fromkeys(reread))
    anywhere = dead.get(None, set())

    def job_for(state):
        cell, index, offset = state.cell, state.index, state.offset
        since = state.watermark
        if since is None or full:
            generations = {} if since is None else known.get(index, {})
            return lambda: _read_whole(cell, offset, generations, instances)
        ids = set(reread.get(index, ()))
        hosts = dead.get(cell.uuid, set()) | anywhere
        if cell_reads.eligible(cell.database_connection):
            return cell_gather.Incremental(since - slack, ids, alive_since,
                                           hosts, held)
        return lambda: _read_changes(cell, offset, since - slack, ids,
                                     alive_since, hosts, held)
    return job_for


def _read_whole(cell, offset, generations, instances):
    """A full read of one cell against its ``{node id: generation}``
    (empty: every node)."""
    read = cell_gather.CellRead()
    with cells.target(cell):
        with db_api.reader() as session:
            nodes, removed, read.services = host_reads.read_full(
                session, generations)
            read.extras = node_extras.read(
                session, None if not generations else
                [row.id for row in nodes], offset)
            if instances:
                read.instances = instance_tracking.read_instances(session)
    read.nodes = cell_gather.shifted(nodes, offset)
    read.removed = [offset + node for node in removed]
    return read


def _read_changes(cell, offset, since, reread, alive_since, dead,
                  held=None):
    """An incremental read of one cell: one statement, and one for the
    extras of the nodes it takes (see :func:`node_extras.ids_to_read`)."""
    read = cell_gather.CellRead()
    with cells.target(cell):
        with host_reads.statement_connection() as connection:
            read.nodes, read.services = host_reads.read_cell_changes(
                connection, since, reread, alive_since, dead, offset)
            ids = node_extras.ids_to_read(read.nodes, held, offset)
            if ids:
                read.extras = node_extras.read(connection, ids, offset)
    return read


def _api_aggregates(manager, changes):
    """The aggregates, from the API database, into ``changes``.

    The first load reads them at once. Afterwards a refresh takes what
    the read the previous one started found (when it is done) and starts
    the next: an API database that hangs delays no refresh (its
    WARNING is read_api_aggregates'), and a change is seen a refresh
    later (the fanout of ``update_aggregates`` brings it at once).
    """
    if manager._table is None:
        manager.read_api_aggregates(changes)
        return
    reader = manager._cells.aggregates
    pending = reader.pending
    if pending is not None and pending.done.is_set() and \
            not isinstance(pending.outcome, BaseException):
        read = pending.outcome
        changes.aggregates = read.aggregates
        changes.aggregates_fingerprint = read.aggregates_fingerprint
        # A fanout after that read began voids what it read (_apply).
        changes.aggregate_seq = read.aggregate_seq
    with manager._lock:
        seq = manager._aggregate_seq

    def job():
        read = refresh_changes.Changes()
        read.aggregate_seq = seq
        manager.read_api_aggregates(read)
        return read
    reader.submit(job)


def refresh(manager, changes, full, known, reread, dead, began, seen_seq):
    """One refresh of ``manager`` over every cell: read them at once, and
    the aggregates (from the API database) in the background
    (:func:`_api_aggregates`); apply; return the table."""
    job_for = cell_job(full, known, reread,
                       _dead_by_cell(manager._table, dead),
                       changes.alive_since, not manager._instances_loaded,
                       manager._generations)
    gather = manager._cells
    round_ = gather.start(job_for)
    _api_aggregates(manager, changes)
    reads, answered = gather.collect(round_, began)
    merge(changes, reads)
    changes.full = full or manager._table is None
    # Only refreshes change which nodes the table holds, and this one
    # holds the refresh lock: the cells it holds hosts of are known now.
    gone = _cells_left_out(manager, answered)
    manager._compare_services(changes)
    with manager._lock:
        if gone:
            changes.removed.extend(
                cache_id for cache_id in manager._generations
                if cell_gather.cell_index(cache_id) in gone)
        manager._apply(changes, seen_seq)
        return manager._table


def _cells_left_out(manager, answered):
    """The indexes of the cells the table holds hosts of that did not
    answer (or are no longer listed), from the table's grouping of its
    rows by cell: no pass over every node when every cell answered."""
    table = manager._table
    if table is None or not len(table):
        return set()
    codes, keys = table.grouped('cell_uuid',
                                operator.attrgetter('cell_uuid'))
    counts = np.bincount(codes, minlength=len(keys))
    return {manager._cells.index_of(uuid) for uuid, count
            in zip(keys, counts) if count and uuid not in answered}


def merge(changes, reads):
    """Fold the cells' reads into one refresh's changes."""
    instances = None
    for read in reads:
        changes.nodes.extend(read.nodes)
        changes.removed.extend(read.removed)
        changes.services.extend(read.services)
        changes.extras.update(read.extras)
        if read.instances is not None:
            instances = instances or {}
            instances.update(read.instances)
    changes.nodes.sort(key=lambda row: row.id)
    changes.instances = instances


def cell_counts(table):
    """``{cell name: hosts}`` of a HostTable, from its grouping by cell
    (without cells, one count): no pass over every host at each
    refresh."""
    if not db_api.api_database_configured():
        return {cells.LOCAL.label(): len(table)}
    if not len(table):
        return {}
    codes, keys = table.grouped('cell_name',
                                operator.attrgetter('cell_name'))
    counts = np.bincount(codes, minlength=len(keys))
    found = collections.Counter()
    for name, count in zip(keys, counts):
        if count:
            found[name] += int(count)
    return dict(found)
