"""The host cache over several cells: Nova's scatter-gather.

With ``[api_database] connection`` set, the compute nodes and services
live in the cell databases. Each refresh of the
:class:`scheduler.host_manager.HostManager` reads every enabled cell but
cell0 at once, one thread per cell (green threads under eventlet), each
under its own target (:func:`scheduler.db.api.target_cell`), and waits
for them at most :data:`CELL_TIMEOUT` seconds (Nova's ``CELL_TIMEOUT``).
Each cell's thread is long-lived: started at the cell's first read, fed
its reads through a queue, stopped with the host manager
(:meth:`CellGather.stop`) and started again if it died (after a fork,
for instance), so that a refresh costs what changed in the cells, not a
new thread per cell. An incremental read of a cell reads what changed
(:mod:`scheduler.host_reads`).
A cell that errors, is unreachable or does not answer in time is left
out: its hosts leave the table (they cannot be claimed on), a WARNING
says so once, and the other cells are scheduled on as before. When it
answers again (INFO), it is read whole, like a cold load, and its hosts
come back. A cell whose previous read has not finished yet is not read
again meanwhile.

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
import queue
import threading
import time
import weakref

from oslo_log import log as logging

from scheduler import cells
from scheduler.db import api as db_api
from scheduler import host_reads
from scheduler import instance_tracking

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


class _Pending:
    """One read handed to a cell's reading thread."""

    def __init__(self, job):
        self.job = job
        self.done = threading.Event()
        self.outcome = None        # CellRead, or the exception raised


class _Cell:
    """The reading state of one cell, and its reading thread."""

    def __init__(self, cell, index):
        self.cell = cell
        self.index = index
        self.offset = index << ID_BITS
        self.watermark = None      # when its last answered read began
        self.down = False
        self.thread = None
        self.jobs = None           # the thread's queue of _Pending
        self.pending = None        # the last _Pending handed to it

    def submit(self, job):
        """Hand ``job`` to the reading thread (started if it is not
        running); the _Pending, or None while the last read runs."""
        alive = self.thread is not None and self.thread.is_alive()
        if alive and self.pending is not None and \
                not self.pending.done.is_set():
            return None
        if not alive:
            self.jobs = queue.Queue()
            self.thread = threading.Thread(
                target=_reading_loop, args=(self, self.jobs),
                name='gantt-cell-%s' % self.cell.label(), daemon=True)
            self.thread.start()
        self.pending = _Pending(job)
        self.jobs.put(self.pending)
        return self.pending

    def stop(self):
        if self.jobs is not None:
            self.jobs.put(None)
        self.thread = self.jobs = self.pending = None


def _stop_readers(states):
    for state in list(states.values()):
        state.stop()


class CellGather:
    """The cells a HostManager reads, and the cache ids of their nodes."""

    def __init__(self):
        self._lock = threading.Lock()
        self._cells = {}           # uuid -> _Cell
        self._by_index = {}        # index -> _Cell
        self._listed = None        # the _Cells of the last gather
        # A HostManager dropped without stop() does not leave its cells'
        # threads waiting for reads forever.
        weakref.finalize(self, _stop_readers, self._cells)

    def stop(self):
        """Stop the cells' reading threads (the next read starts them)."""
        _stop_readers(self._cells)

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

    def gather(self, job, began, known_ids):
        """Read every enabled cell but cell0 concurrently; return
        ``(reads, left_out)``: ``[CellRead]`` of the cells that answered
        within CELL_TIMEOUT, and the cache ids in ``known_ids`` of the
        cells that did not (or that are no longer listed).

        ``job(session, cell_read, state)``: what to read in one cell
        (``state.watermark`` None: read it whole).
        """
        listed = [self._cell_state(cell) for cell in cells.get_cells()
                  if not cell.is_cell0 and not cell.disabled]
        # A cell still in its last read gets no new one (None).
        pending = [state.submit(job) for state in listed]
        deadline = time.monotonic() + CELL_TIMEOUT
        reads = []
        answered = set()
        for state, read in zip(listed, pending):
            outcome = None
            if read is not None and read.done.wait(
                    max(0.0, deadline - time.monotonic())):
                outcome = read.outcome
            if isinstance(outcome, CellRead):
                reads.append(outcome)
                answered.add(state.index)
                self._answered(state, began)
            else:
                self._left_out(state, outcome)
        self._listed = listed
        left_out = [cache_id for cache_id in known_ids
                    if cell_index(cache_id) not in answered]
        return reads, left_out

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


def _reading_loop(state, jobs):
    """The body of one cell's reading thread: run the reads handed to it
    until told to stop (None)."""
    while True:
        pending = jobs.get()
        if pending is None:
            return
        pending.outcome = _read_cell(state, pending.job)
        pending.done.set()


def _read_cell(state, job):
    """One read of a cell: its CellRead, or the exception it raised."""
    try:
        read = CellRead()
        with cells.target(state.cell):
            with db_api.reader() as session:
                job(session, read, state)
        read.nodes = shifted(read.nodes, state.offset)
        read.removed = [state.offset + node for node in read.removed]
        return read
    except Exception as error:
        return error


def cell_job(manager, changes, full, known, reread, dead, instances):
    """The ``job`` of :meth:`CellGather.gather` for one refresh of
    ``manager`` (see HostManager.refresh for what each read means)."""
    from scheduler import host_manager

    def job(session, read, state):
        def local(cache_ids):
            return {node_id(cache_id): value for cache_id, value
                    in cache_ids if cell_index(cache_id) == state.index}
        if state.watermark is None or full:
            generations = {} if state.watermark is None else local(
                known.items())
            read.nodes, read.removed, read.services = host_reads.read_full(
                session, generations)
            if instances:
                read.instances = instance_tracking.read_instances(session)
            return
        read.nodes, read.services = host_reads.read_changes(
            session, state.watermark - datetime.timedelta(
                seconds=host_manager.WRITE_SLACK),
            set(local((cache_id, None) for cache_id in reread)),
            changes.alive_since, dead)
    return job


def refresh(manager, changes, full, reread, dead, began, seen_seq):
    """One refresh of ``manager`` over every cell: read them at once and
    the aggregates (from the API database), apply; return the table."""
    with manager._lock:
        known = dict(manager._generations)
    job = cell_job(manager, changes, full, known, reread, dead,
                   not manager._instances_loaded)
    reads, left_out = manager._cells.gather(job, began, known)
    merge(changes, reads, left_out)
    changes.full = full or manager._table is None
    manager.read_api_aggregates(changes)
    with manager._lock:
        manager._apply(changes, seen_seq)
        return manager._table


def merge(changes, reads, left_out):
    """Fold the cells' reads into one refresh's changes."""
    instances = None
    for read in reads:
        changes.nodes.extend(read.nodes)
        changes.removed.extend(read.removed)
        changes.services.extend(read.services)
        if read.instances is not None:
            instances = instances or {}
            instances.update(read.instances)
    changes.removed.extend(left_out)
    changes.nodes.sort(key=lambda row: row.id)
    changes.instances = instances


def cell_counts(states):
    """``{cell name: hosts}`` of HostStates (without cells, one count:
    no pass over every host at each refresh)."""
    if not db_api.api_database_configured():
        return {cells.LOCAL.label(): len(states)}
    return dict(collections.Counter(state.cell_name for state in states))
