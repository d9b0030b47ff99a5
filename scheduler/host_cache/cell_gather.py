"""The host cache over several cells: Nova's scatter-gather.

This module holds the cells a HostManager reads (:class:`CellGather`:
their threads, connections, answers and cache ids);
:mod:`scheduler.host_cache.cell_refresh` runs one refresh over them.

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
(:func:`scheduler.host_cache.host_reads.read_cell_changes`), and a
second for the inventories and traits of the nodes it takes, if any
(:mod:`scheduler.host_cache.node_extras`): what a refresh
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
import threading
import time
import weakref

from oslo_log import log as logging

from scheduler import cells
from scheduler.cells import readers
from scheduler.cells import registry
from scheduler.db import api as db_api
from scheduler.host_cache import cell_reads
from scheduler.host_cache import host_reads
from scheduler.host_cache import node_extras

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
        self.extras = node_extras.none()


class _Cell(readers.Reader):
    """The reading state of one cell, and its reading thread."""

    def __init__(self, cell, index):
        super().__init__('gantt-cell-%s' % cell.label())
        self.cell = cell
        self.index = index
        self.offset = index << ID_BITS
        self.watermark = None      # when its last answered read began
        self.down = False
        # Its incremental reads on PostgreSQL (see Incremental).
        self.connection = None

    def multiplexed_read(self, job):
        """The generator of ``job`` (an Incremental) on this cell's
        multiplexed connection (a new one if its URL changed)."""
        url = self.cell.database_connection
        if self.connection is None or self.connection.url != url:
            self.close_connection()
            self.connection = cell_reads.CellConnection(url)
        return self.connection.read(job.since, job.reread, job.alive_since,
                                    job.dead, self.offset, with_extras=True,
                                    held=job.held)

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


class Incremental(collections.namedtuple(
        'Incremental', 'since reread alive_since dead held',
        defaults=(None,))):
    """An incremental read of a cell on PostgreSQL (psycopg2): not handed
    to the cell's thread but run with the others from the refreshing
    thread (:mod:`scheduler.host_cache.cell_reads`). ``held``: the
    cache's ``{cache id: generation}`` (see
    :func:`scheduler.host_cache.node_extras.ids_to_read`)."""


class _Round:
    """The reads one refresh handed to the cells (a Pending of the
    cell's thread, an Incremental, or None: the cell's thread was still
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
        """The rows of the nodes ``cache_ids`` (with cache ids), the
        services of their hosts and the nodes' node_extras.Extras, read
        in each node's cell in turn (without cells, in ``[database]``)."""
        by_cell = collections.defaultdict(list)
        for cache_id in cache_ids:
            by_cell[cell_index(cache_id)].append(node_id(cache_id))
        nodes, services, extras = [], [], node_extras.none()
        for index, ids in by_cell.items():
            state = self._by_index.get(index)
            if state is None and index:
                continue
            offset = 0 if state is None else state.offset
            with cells.target(None if state is None else state.cell):
                with db_api.reader() as session:
                    rows, more = host_reads.read_nodes_of(session, ids)
                    extras.update(node_extras.read(
                        session, [row.id for row in rows], offset))
            nodes.extend(shifted(rows, offset))
            services.extend(more)
        return nodes, services, extras

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
            if isinstance(job, Incremental):
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
             if isinstance(read, Incremental)},
            round_.deadline)
        round_.latch.done.wait(max(0.0, round_.deadline - time.monotonic()))
        reads, answered = [], set()
        for state, read in zip(round_.listed, round_.pending):
            outcome = None
            if isinstance(read, Incremental):
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
    read.nodes, read.services, read.extras = outcome
    return read
