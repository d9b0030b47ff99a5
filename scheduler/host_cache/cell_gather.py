"""The host cache over several cells: Nova's scatter-gather.

With ``[api_database] connection`` set, the compute nodes and services
live in the cell databases. Each refresh of the
:class:`scheduler.host_cache.host_manager.HostManager` reads every enabled cell
but cell0 at once, one thread per cell (green threads under eventlet), each
under its own target (:func:`scheduler.db.api.target_cell`), and waits
for them at most :data:`CELL_TIMEOUT` seconds (Nova's ``CELL_TIMEOUT``).
Each cell's thread is long-lived: started at the cell's first read, fed
its reads through a queue, stopped with the host manager
(:meth:`CellGather.stop`) and started again if it died (after a fork,
for instance), so that a refresh costs what changed in the cells, not a
new thread per cell. An incremental read of a cell is one statement
(:func:`scheduler.host_cache.host_reads.read_cell_changes`): what a refresh
costs grows with what changed and with the hosts, hardly with the number of
cells. On PostgreSQL (psycopg2) the incremental reads do not go to the
cells' threads: the refreshing thread sends them all on each cell's
asynchronous connection and waits on their sockets together
(:mod:`scheduler.host_cache.cell_reads`), which costs the process less than
the threads' hand-offs; whole reads, and every read on other drivers,
stay on the threads.
A cell that errors, is unreachable or does not answer in time is left
out: its hosts leave the table (they cannot be claimed on), a WARNING
says so once, and the other cells are scheduled on as before. When it
answers again (INFO), it is read whole, like a cold load, and its hosts
come back. A cell whose previous read has not finished yet is not read
again meanwhile.

The cells read are those of the list read from the API database by the
previous refresh: each refresh reads the list again in the background,
on a thread of its own (:func:`scheduler.cells.registry.reload_cells`),
so that a cell created, disabled or moved with ``gantt-manage cell_v2``
is read by the next refresh but one, and an API database that is down
or slow neither delays nor stops the refreshes (a WARNING says so once,
INFO when it answers again; the cells known are read meanwhile).

Each cell keeps its own watermark (when its last read that answered
began), so that an incremental refresh reads per cell what changed since
that cell last answered.

Node ids are each database's own autoincrement, so two cells have nodes
of the same id. The cache keys a node by its *cache id*: the cell's
index (from 1, in the order the cells were first seen) shifted left by
:data:`ID_BITS`, plus the node id. Without cells the cache id is the
node id. :func:`node_id` gives the node id back, and
:meth:`CellGather.cell_of` the CellMapping::

    gather = CellGather()
    cache_id = gather.cache_id(cell, 7)
    assert node_id(cache_id) == 7 and gather.cell_of(cache_id) == cell

Aggregates are read from the API database, where they live with cells
(:meth:`HostManager.read_api_aggregates`). Instances are
read from each cell on the first load; afterwards the computes' casts keep
them (a cell that was down at the first load is learnt that way).
"""

import collections
import datetime
import operator
import threading
import time
import weakref

import numpy as np
from oslo_log import log as logging

from scheduler.host_cache import cell_reads
from scheduler import cells
from scheduler.cells import readers
from scheduler.cells import registry
from scheduler.db import api as db_api
from scheduler.host_cache import host_reads
from scheduler.host_cache import instance_tracking

LOG = logging.getLogger(__name__)

# Seconds a refresh waits for a cell's database (Nova's CELL_TIMEOUT).
CELL_TIMEOUT = 60.0
# A cache id holds the node id in its low ID_BITS bits, the cell's index
# above them.
ID_BITS = 40
NODE_MASK = (1 << ID_BITS) - 1


def multi_cell():
    """True when hosts come from the cells of an API database."""
    return db_api.api_database_configured()


def node_id(cache_id):
    """The database id of the node the cache knows as ``cache_id``."""
    return cache_id & NODE_MASK


def cell_index(cache_id):
    return cache_id >> ID_BITS


_row_classes = {}


def shifted(rows, offset):
    """``rows`` (node rows) with ``offset`` added to their ids, as named
    tuples with the same fields."""
    rows = list(rows)
    if not offset or not rows:
        return rows
    fields = rows[0]._fields
    row_class = _row_classes.get(fields)
    if row_class is None:
        row_class = _row_classes[fields] = collections.namedtuple(
            'CellNodeRow', fields, rename=True)
    at = fields.index('id')
    result = []
    for row in rows:
        values = list(row)
        values[at] += offset
        result.append(row_class._make(values))
    return result


class CellRead:
    """What one cell's read found: node rows (cache ids), removed cache
    ids, service rows, and its instances on a cold read."""

    def __init__(self):
        self.nodes = []
        self.removed = []
        self.services = []
        self.instances = None


class _Cell(readers.Reader):
    """The reading state of one cell, and its reading thread."""

    def __init__(self, cell, index):
        super().__init__('gantt-cell-%s' % cell.label())
        self.cell = cell
        self.index = index
        self.offset = index << ID_BITS
        self.watermark = None      # when its last answered read began
        self.down = False
        # Its incremental reads on PostgreSQL (see _Incremental).
        self.connection = None

    def multiplexed_read(self, job):
        """The generator of ``job`` (an _Incremental) on this cell's
        multiplexed connection (a new one if its URL changed)."""
        url = self.cell.database_connection
        if self.connection is None or self.connection.url != url:
            self.close_connection()
            self.connection = cell_reads.CellConnection(url)
        return self.connection.read(job.since, job.reread, job.alive_since,
                                    job.dead, self.offset)

    def close_connection(self):
        connection, self.connection = self.connection, None
        if connection is not None:
            connection.close()


def _stop_readers(states, *api):
    for state in list(states.values()):
        state.stop()
        state.close_connection()
    for reader in api:
        reader.stop()


class _Incremental(collections.namedtuple(
        '_Incremental', 'since reread alive_since dead')):
    """An incremental read of a cell on PostgreSQL (psycopg2): not handed
    to the cell's thread but run with the others from the refreshing
    thread (:mod:`scheduler.host_cache.cell_reads`)."""


class _Round:
    """The reads one refresh handed to the cells (a Pending of the
    cell's thread, an _Incremental, or None: the cell's thread was still
    busy)."""

    def __init__(self, listed, pending, latch):
        self.listed = listed
        self.pending = pending
        self.latch = latch
        self.deadline = time.monotonic() + CELL_TIMEOUT


class CellGather:
    """The cells a HostManager reads, and the cache ids of their nodes."""

    def __init__(self):
        self._lock = threading.Lock()
        self._cells = {}           # uuid -> _Cell
        self._by_index = {}        # index -> _Cell
        self._listed = None        # the _Cells of the last gather
        # Reads the cell list again in the background (see _list_cells).
        self._api = readers.Reader('gantt-api-db-cells')
        # Reads the aggregates (in the API database) in the background.
        self.aggregates = readers.Reader('gantt-api-db-aggregates')
        self._api_down = False
        # A HostManager dropped without stop() does not leave its cells'
        # threads waiting for reads forever.
        weakref.finalize(self, _stop_readers, self._cells, self._api,
                         self.aggregates)

    def stop(self):
        """Stop the reading threads (the next read starts them)."""
        _stop_readers(self._cells, self._api, self.aggregates)

    def _cell_state(self, cell):
        with self._lock:
            state = self._cells.get(cell.uuid)
            if state is None:
                state = _Cell(cell, len(self._cells) + 1)
                self._cells[cell.uuid] = self._by_index[state.index] = state
            elif state.cell != cell:
                # Renamed, or its URL changed: the same index.
                state.cell = cell
            return state

    def cache_id(self, cell, node):
        return self._cell_state(cell).offset + node

    def cell_of(self, cache_id):
        """The CellMapping of a cache id (:data:`cells.LOCAL` for a node
        of a deployment without cells)."""
        state = self._by_index.get(cell_index(cache_id))
        return cells.LOCAL if state is None else state.cell

    def down_cells(self):
        return [state.cell for state in self._cells.values() if state.down]

    def cells_up(self):
        """``{cell name: answered}`` of the cells the last refresh
        listed; ``{'default': True}`` before any (and without cells)."""
        listed = self._listed
        if listed is None:
            return {cells.LOCAL.label(): True}
        return {state.cell.label(): not state.down for state in listed}

    def read_nodes(self, cache_ids):
        """The rows of the nodes ``cache_ids`` (with cache ids) and the
        services of their hosts, read in each node's cell in turn
        (without cells, in ``[database]``)."""
        by_cell = collections.defaultdict(list)
        for cache_id in cache_ids:
            by_cell[cell_index(cache_id)].append(node_id(cache_id))
        nodes, services = [], []
        for index, ids in by_cell.items():
            state = self._by_index.get(index)
            if state is None and index:
                continue
            offset = 0 if state is None else state.offset
            with cells.target(None if state is None else state.cell):
                with db_api.reader() as session:
                    rows, more = host_reads.read_nodes_of(session, ids)
            nodes.extend(shifted(rows, offset))
            services.extend(more)
        return nodes, services

    def start(self, job_for):
        """Hand every enabled cell but cell0 its read, ``job_for(state)``
        (a callable run in the cell's thread, returning a CellRead; a
        cell still in its last read gets none); return the _Round to
        :meth:`collect`."""
        listed = [self._cell_state(cell) for cell in self._list_cells()
                  if not cell.is_cell0 and not cell.disabled]
        latch = readers.Latch(len(listed))
        pending = []
        for state in listed:
            job = job_for(state)
            if isinstance(job, _Incremental):
                latch.count_down()
                pending.append(job)
                continue
            read = state.submit(job, latch)
            if read is None:
                latch.count_down()
            pending.append(read)
        return _Round(listed, pending, latch)

    def collect(self, round_, began):
        """Wait for the reads of ``round_`` (at most CELL_TIMEOUT from its
        start); return ``(reads, answered)``: ``[CellRead]`` of the
        cells that answered, and their uuids. The others are left out
        (their watermark dropped: read whole when they answer)."""
        together = cell_reads.gather(
            {state: state.multiplexed_read(read) for state, read
             in zip(round_.listed, round_.pending)
             if isinstance(read, _Incremental)},
            round_.deadline)
        round_.latch.done.wait(max(0.0, round_.deadline - time.monotonic()))
        reads, answered = [], set()
        for state, read in zip(round_.listed, round_.pending):
            outcome = None
            if isinstance(read, _Incremental):
                outcome = _cell_read(state, together.get(state))
            elif read is not None and read.done.is_set():
                outcome = read.outcome
            if isinstance(outcome, CellRead):
                reads.append(outcome)
                answered.add(state.cell.uuid)
                self._answered(state, began)
            else:
                self._left_out(state, outcome)
        self._listed = round_.listed
        return reads, answered

    def index_of(self, uuid):
        state = self._cells.get(uuid)
        return None if state is None else state.index

    def _list_cells(self):
        """The cells to read: those the API database listed when last
        read, read again in the background for the next refresh; read
        now only when none were read yet (or the list was cleared)."""
        listed = registry.cached_cells()
        if listed is None:
            return cells.get_cells()
        pending = self._api.pending
        if pending is not None and pending.done.is_set():
            self._api_answered(pending.outcome, listed)
        elif pending is not None and not self._api_down and \
                time.monotonic() - pending.started > CELL_TIMEOUT:
            self._api_answered(None, listed)
        self._api.submit(registry.reload_cells)
        return listed

    def _api_answered(self, outcome, known):
        if isinstance(outcome, list):
            if self._api_down:
                LOG.info('The API database answers again; the host cache '
                         'reads the cells it lists')
            self._api_down = False
            return
        if self._api_down:
            return
        self._api_down = True
        reason = 'no answer within %s s' % CELL_TIMEOUT if outcome is None \
            else outcome
        LOG.warning('Could not read the cell list (%(reason)s); the host '
                    'cache keeps reading the %(count)d cell(s) it knows',
                    {'reason': reason,
                     'count': sum(1 for cell in known
                                  if not cell.is_cell0 and not cell.disabled)})

    @staticmethod
    def _answered(state, began):
        state.watermark = began
        if state.down:
            LOG.info('Cell %s answers again; its hosts are scheduled on '
                     'again', state.cell.label())
        state.down = False

    @staticmethod
    def _left_out(state, outcome):
        # Its hosts leave the table; it is read whole when it answers.
        state.watermark = None
        if state.down:
            return
        state.down = True
        if outcome is None:
            reason = 'no answer within %s s' % CELL_TIMEOUT
        else:
            reason = db_api.describe_error(outcome)
        LOG.warning('Cell %(cell)s is left out of scheduling until its '
                    'database answers: %(reason)s',
                    {'cell': state.cell.label(), 'reason': reason})


def _cell_read(state, outcome):
    """The CellRead of a multiplexed read's outcome (rows, an exception,
    or None: no answer in time); the connection of one that did not
    answer is closed (the next read opens another)."""
    if not isinstance(outcome, tuple):
        state.close_connection()
        return outcome
    read = CellRead()
    read.nodes, read.services = outcome
    return read


def _by_cell(cache_ids):
    """``{cell index: {node id: value}}`` of ``{cache id: value}``, in
    one pass."""
    split = collections.defaultdict(dict)
    for cache_id, value in cache_ids.items():
        split[cache_id >> ID_BITS][cache_id & NODE_MASK] = value
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


def cell_job(full, known, reread, dead, alive_since, instances):
    """The ``job_for`` of :meth:`CellGather.start` for one refresh (see
    HostManager.refresh for what each read means): the split of
    ``known``, ``reread`` and ``dead`` by cell is done once here, not
    once per cell."""
    from scheduler.host_cache import host_manager
    slack = datetime.timedelta(seconds=host_manager.WRITE_SLACK)
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
            return _Incremental(since - slack, ids, alive_since, hosts)
        return lambda: _read_changes(cell, offset, since - slack, ids,
                                     alive_since, hosts)
    return job_for


def _read_whole(cell, offset, generations, instances):
    """A full read of one cell against its ``{node id: generation}``
    (empty: every node)."""
    read = CellRead()
    with cells.target(cell):
        with db_api.reader() as session:
            nodes, removed, read.services = host_reads.read_full(
                session, generations)
            if instances:
                read.instances = instance_tracking.read_instances(session)
    read.nodes = shifted(nodes, offset)
    read.removed = [offset + node for node in removed]
    return read


def _read_changes(cell, offset, since, reread, alive_since, dead):
    """An incremental read of one cell: one statement."""
    read = CellRead()
    with cells.target(cell):
        with host_reads.statement_connection() as connection:
            read.nodes, read.services = host_reads.read_cell_changes(
                connection, since, reread, alive_since, dead, offset)
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
        from scheduler.host_cache import host_manager
        read = host_manager._Changes()
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
                       changes.alive_since, not manager._instances_loaded)
    gather = manager._cells
    round_ = gather.start(job_for)
    _api_aggregates(manager, changes)
    reads, answered = gather.collect(round_, began)
    merge(changes, reads)
    changes.full = full or manager._table is None
    # Only refreshes change which nodes the table holds, and this one
    # holds the refresh lock: the cells it holds hosts of are known now.
    gone = _cells_left_out(manager, answered)
    with manager._lock:
        if gone:
            changes.removed.extend(
                cache_id for cache_id in manager._generations
                if cell_index(cache_id) in gone)
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
