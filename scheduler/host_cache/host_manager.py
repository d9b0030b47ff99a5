"""HostManager: the scheduler's cached, incrementally refreshed host table.

Reading every compute node, service and aggregate for every request is
what made Nova's scheduler slow at scale. The HostManager keeps a
:class:`scheduler.host_cache.host_table.HostTable` in memory instead and
refreshes it from SQL in a background thread every ``[scheduler]
host_state_refresh_interval`` seconds, reading only what changed:

* compute nodes written since the last refresh (an indexed
  ``updated_at``, and for the usual claim, which leaves ``updated_at``
  alone so that PostgreSQL updates the row without touching its indexes,
  the indexed ``created_at`` of its allocation), of which those whose
  ``generation`` differs from the cached one (every write to a node,
  claims included, bumps it);
* compute services (binary ``gantt-compute``) whose ``updated_at`` moved
  (registration, enable/disable, forced down; a heartbeat does not move
  it);
* liveness transitions, not heartbeats: the services whose last heartbeat
  is older than ``[DEFAULT] service_down_time`` or that never sent one
  (an indexed ``last_seen_up``; as many rows as there are dead or new
  services, the new ones judged by ``created_at`` as Nova does), and
  those of them that heartbeated again. Each cached service carries the
  judgement (``ServiceInfo.alive``) that ComputeFilter reads;
* every ``FULL_READ_INTERVAL`` seconds, the generation of every node and
  every service, to notice deleted rows and rows written by a host whose
  clock lags by more than ``WRITE_SLACK``;
* aggregates, hosts and metadata, re-read whole only when their
  fingerprint changed: from ``[database]`` in the refresh's own
  transaction without cells, from the API database with them
  (:meth:`HostManager.read_api_aggregates`).

On PostgreSQL through psycopg2 the nodes and services of an incremental
refresh are one prepared statement (the cells' read,
:func:`scheduler.host_cache.host_reads.read_cell_changes`), and the nodes the
cache took lately at the generation it holds are left out on the server
rather than sent again at each pass of the slack
(:meth:`HostManager._recent_pairs`); the aggregates' fingerprint is a
second prepared statement on the same connection.

Aggregate changes also arrive at once through the scheduler's fanout casts
(:meth:`HostManager.update_aggregates`, :meth:`HostManager.delete_aggregate`):
the hosts of the aggregates concerned get their new zones and aggregates
without waiting for the next refresh, and a refresh that read the
aggregates before the cast arrived does not undo it.

Each HostState also carries the instances on its host; the compute
agents' casts keep them up to date (see
:mod:`scheduler.host_cache.instance_tracking`).

A request takes the current table (:meth:`HostManager.snapshot`) and
reads it without locks. Changes that keep every node where it is (a
claim's :meth:`HostManager.consume`, rows a refresh read, instances) are
written into that table in place, row by row, so that their cost is that
of the rows they change and requests running meanwhile see them at once;
changes of the set of nodes, their names or zones build a new table. A
request that places several instances works on a detached copy. A stale
or half-updated row can only cost a failed claim (claims are checked in
SQL), never an overfilled host.

In the ``gantt-scheduler`` daemon (:func:`freeze_collector`, called by
its ``main``; not where a HostManager is a library in someone else's
process), each full read (the first load, then every
``FULL_READ_INTERVAL`` seconds) ends with one pass of the cyclic garbage
collector over everything, counted in that refresh's time, and the
objects left are frozen (``gc.freeze``), out of its later passes.
Without it the collector's oldest generation holds the host cache, and
each of its passes, every few thousand requests, stopped the process for
90-140 ms at 10,000 hosts (4.5-11 ms frozen; ``benchmarks/README.md``,
session 22). What is frozen is thawed and collected at the next full
read, so garbage cycles among frozen objects wait at most that long.
In every process, the collector is paused while a full read builds the
cache, for :data:`PAUSE_LIMIT` seconds at most (:func:`_collector_paused`).

The background thread starts lazily on the first snapshot, and again in a
forked child (threads do not survive ``fork``). With ``auto_refresh=False``
(the caching scheduler) nothing runs in the background; :meth:`refresh`
is called by the owner::

    manager = HostManager()
    table = manager.snapshot()
    print(len(table), table.states[0].free_ram_mb)
    manager.consume(table.states[0].id, claims.Resources(1, 512, 1))
    manager.stop()
"""

import collections
import contextlib
import datetime
import gc
import itertools
import os
import threading
import time
import weakref

from oslo_db import exception as db_exc
from oslo_log import log as logging

from scheduler import conf
from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import models
from scheduler import hardware
from scheduler.host_cache import host_instances
from scheduler.host_cache import cell_gather
from scheduler.host_cache import host_reads
from scheduler.host_cache import host_state
from scheduler.host_cache import host_table
from scheduler.host_cache import instance_tracking
from scheduler import prometheus

CONF = conf.CONF
LOG = logging.getLogger(__name__)

COMPUTE_BINARY = host_reads.COMPUTE_BINARY
# A refresh reads the nodes and services written since this many seconds
# before the previous refresh began, so that a row committed late (its
# updated_at is older than its commit) or by a host whose clock lags a
# little is not missed.
WRITE_SLACK = 2.0
# The most nodes an incremental read on PostgreSQL is told the cache
# holds (see HostManager._recent_pairs): each costs the refresh ~2 us of
# its CPU and the server's (2-CPU machine).
MAX_KNOWN_PAIRS = 2000
# Seconds between full reads of the nodes' generations and the services
# (notices deleted rows and writers whose clocks lag by more than
# WRITE_SLACK).
FULL_READ_INTERVAL = 300.0

_RATIO_OPTIONS = ('cpu_allocation_ratio', 'ram_allocation_ratio',
                  'disk_allocation_ratio')

_managers = weakref.WeakSet()

# Whether full reads freeze what the garbage collector keeps (see
# freeze_collector).
_freezing = False


def freeze_collector():
    """From now on, in this process and the workers it forks, each
    full read of a host cache ends with :func:`_collect_and_freeze`
    (see the module's doc): for the scheduler daemon, whose process is
    its own."""
    global _freezing
    _freezing = True


# The key of the default availability zone in _default_ratios' dict.
_DEFAULT_AZ = 'default_availability_zone'


def _default_ratios():
    """The configured allocation ratios, for nodes that report none, and
    ``[DEFAULT] default_availability_zone`` (read once per refresh, not
    per node)."""
    defaults = {name: claims.default_ratio(name) for name in _RATIO_OPTIONS}
    defaults[_DEFAULT_AZ] = CONF.default_availability_zone
    return defaults


def _reset_after_fork():
    for manager in list(_managers):
        manager._after_fork()


os.register_at_fork(after_in_child=_reset_after_fork)


def _alive_window(now):
    """``(earliest, latest)`` heartbeat that makes a service alive at
    ``now``."""
    window = datetime.timedelta(seconds=CONF.service_down_time)
    return now - window, now + window


class _Changes:
    """What one refresh read from SQL, applied later under the lock."""

    def __init__(self):
        self.nodes = []
        self.removed = []
        self.services = []
        # Services whose last heartbeat lies between these are alive.
        self.alive_since = self.alive_until = None
        # A full read: ``nodes`` holds the rows whose generation changed,
        # ``services`` every service. Otherwise both hold the rows
        # written since the watermark.
        self.full = False
        self.aggregates = None
        self.aggregates_fingerprint = None
        # Aggregate fanouts applied when the refresh began (see _apply).
        self.aggregate_seq = 0
        # {host: {uuid: InstanceInfo}} read on the first load.
        self.instances = None


class HostManager(instance_tracking.InstanceTracking):
    """Owns the cached HostTable of one scheduler process."""

    def __init__(self, auto_refresh=True):
        self.auto_refresh = auto_refresh
        self.stats = {'refreshes': 0, 'full_builds': 0, 'nodes_read': 0,
                      'services_read': 0, 'refresh_failures': 0,
                      'aggregate_updates': 0, 'instance_updates': 0,
                      'instance_resyncs': 0, 'claims_taken_as_read': 0,
                      'last_refresh_seconds': 0.0}
        self._table = None
        # {node id: generation} of every node the cache knows (-1: read it
        # again). Node rows are not kept: HostStates carry their values.
        self._generations = {}
        # Nodes to read again at the next refresh whatever their
        # updated_at (claimed on, or raced by a refresh).
        self._reread = set()
        # When the last successful refresh began (UTC, this host's clock),
        # and when the last full read was (monotonic).
        self._watermark = None
        self._watermark_monotonic = 0.0
        self._last_full_read = 0.0
        # {node id: when (monotonic) the cache took its row} of the nodes
        # taken lately, oldest first (see _recent_pairs).
        self._learned_at = {}
        self._services = {}
        # Hosts whose cached service is not alive (see _cache_service).
        self._dead_hosts = set()
        self._aggregates = ()
        self._aggregates_by_host = {}
        self._aggregates_fingerprint = None
        self._aggregate_seq = 0
        # Why the last read of the aggregates from the API database
        # failed (None: it did not).
        self._aggregates_error = None
        self._init_instance_tracking()
        self._consume_seq = 0
        self._consumed_at = {}
        # {node id: reservations whose SQL claim has not returned yet}: a
        # refresh may read such a node before the claim commits, and must
        # not replace the reserved row with that read (see settle).
        self._in_flight = collections.Counter()
        # {node id: the generation its cached row was read at} for a
        # claim in flight alone on the node (see settle).
        self._claim_bases = {}
        # The cells read and the cache ids of their nodes (with cells).
        self._cells = cell_gather.CellGather()
        self._after_fork()
        _managers.add(self)

    def _after_fork(self):
        # Locks may have been held by a thread of the parent at fork time;
        # the child starts with fresh ones and no refresh thread.
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._thread_lock = threading.Lock()
        self._thread = None
        self._stop = threading.Event()
        self._pid = os.getpid()

    def report_state(self):
        """The cache's size and age, for a Guru Meditation Report."""
        table = self._table
        state = {'hosts': len(table.states) if table is not None else 0,
                 'refreshes': self.stats['refreshes'],
                 'refresh failures': self.stats['refresh_failures'],
                 'last refresh took (s)': round(
                     self.stats['last_refresh_seconds'], 4)}
        if self._watermark is None:
            state['last refresh'] = 'never (loaded at the first request)'
        else:
            age = models.utcnow() - self._watermark
            state['last refresh began (s ago)'] = round(
                age.total_seconds(), 3)
        return state

    # -- what requests use ----------------------------------------------------

    def snapshot(self):
        """The current HostTable (loaded on first use); never copied, and
        updated in place (see the module docstring)."""
        table = self._table
        if table is None:
            table = self.refresh()
        if self.auto_refresh:
            self._ensure_thread()
        return table

    def current_table(self):
        """The HostTable as it is, or None before it was first loaded:
        unlike :meth:`snapshot`, loads nothing and starts no thread."""
        return self._table

    def filter_names(self):
        """``(option, filter names)``: the filters requests go through
        and the ``[filter_scheduler]`` option that lists them."""
        return ('enabled_filters',
                list(CONF.filter_scheduler.enabled_filters))

    def consume(self, node_id, resources, instance_uuid=None,
                instance_info=None, in_flight=False, hardware_request=None):
        """Record a claim in the cached row of ``node_id``; with
        ``instance_uuid``, the instance is on the node's host from now on
        (``instance_info``: its InstanceInfo).

        ``hardware_request`` (a :class:`scheduler.hardware.Request`): the
        instance's NUMA cells, pinned CPUs, pages and PCI devices are
        fitted on the cached row, as the claim fits them in SQL, and
        taken there too. Returns what was taken (a hardware record, for
        :meth:`settle` to give back), or None.

        ``in_flight``: a reservation made before the claim's SQL, which
        the caller must follow with :meth:`settle` once the claim
        returned, whatever its outcome; until then no refresh replaces
        the node's cached row.
        """
        with self._lock:
            if in_flight:
                self._in_flight[node_id] += 1
                # The generation the cached row was read at, when this is
                # the node's only claim in flight (see settle).
                base = self._generations.get(node_id, -1)
                if self._in_flight[node_id] == 1 and base >= 0 and (
                        hardware_request is None):
                    self._claim_bases[node_id] = base
                else:
                    self._claim_bases.pop(node_id, None)
            table = self._table
            if table is None or node_id not in table.row_by_id:
                return None
            row = table.row_by_id[node_id]
            replaced = {}
            state, record = table.states[row].reserved(resources,
                                                       hardware_request)
            if instance_uuid is not None:
                host = state.host
                instances = self._record_instance(
                    host, instance_uuid, instance_info, update_table=False)
                # The node's row is a copy already; its host's other
                # nodes (a baremetal host has several) are copied.
                state.instances = instances
                replaced = {other: host_instances.with_instances(
                    table.states[other], instances)
                    for other in host_instances.host_rows(table, host)
                    if other != row}
            replaced[row] = state
            # In place: a claim costs what it changes, not a copy of the
            # columns of every host (see HostTable.update_in_place); its
            # reservation changes the claim's columns only, unless it took
            # NUMA cells, pinned CPUs, pages or devices.
            self._put_states(replaced, claim_only=record is None)
            self._mark_consumed(node_id)
            return record

    def settle(self, node_id, give_back=None, generation=None):
        """The SQL claim that followed ``consume(..., in_flight=True)``
        on the node returned (won, lost or failed): refreshes may read
        the node again, and the next one does.

        ``give_back``: the hardware record ``consume`` returned, when the
        claim did not win: the cached row gives its CPUs, pages and
        devices back at once (before any refresh may replace the row),
        so that the next request can have them.

        ``generation``: the node's generation the claim left, when it
        won and the database said. If that is the one after the
        generation the cached row was read at, nothing else wrote the
        node in between: the cached row (that read plus the claim's
        reservation) holds what the claim wrote, and the node is not
        read again for it. Its instance and I/O counts stay as the
        reservation raised them until the compute's next report, as in
        Nova's host state.
        """
        with self._lock:
            base = self._claim_bases.pop(node_id, None)
            if give_back:
                self._give_back_hardware(node_id, give_back)
            left = self._in_flight[node_id] - 1
            if left > 0:
                self._in_flight[node_id] = left
            else:
                self._in_flight.pop(node_id, None)
            if node_id not in self._generations:
                return
            if (generation is not None and base is not None
                    and generation == base + 1 and left <= 0
                    and self._generations[node_id] == -1):
                self._generations[node_id] = generation
                self._learned(node_id)
                self._reread.discard(node_id)
                self.stats['claims_taken_as_read'] += 1
                return
            self._mark_consumed(node_id)

    def _give_back_hardware(self, node_id, record):
        table = self._table
        if table is None or node_id not in table.row_by_id:
            return
        row = table.row_by_id[node_id]
        try:
            state = table.states[row].hardware_given_back(record)
        except hardware.HOST_ERRORS as error:
            # The next refresh re-reads the node (it is marked consumed).
            LOG.warning('Node %(node)s: could not give back the hardware '
                        'of a reservation in the host cache (%(error)s); '
                        'the next refresh re-reads it',
                        {'node': node_id, 'error': error})
            return
        self._put_states({row: state})

    def _mark_consumed(self, node_id):
        # The claim bumped the node's generation: re-read it next time,
        # and do not let a refresh that read it before the claim undo the
        # consumption (see _apply).
        self._consume_seq += 1
        self._consumed_at[node_id] = self._consume_seq
        self._generations[node_id] = -1
        self._reread.add(node_id)

    def refresh_nodes(self, node_ids):
        """Re-read some nodes (and their services) now.

        Used after a lost claim race or a released claim. Returns
        ``{node id: HostState}`` for the nodes that still exist.
        """
        node_ids = list(node_ids)
        if not node_ids:
            return {}
        with self._lock:
            seen_seq = self._consume_seq
        alive_since, alive_until = _alive_window(models.utcnow())
        rows, services = self._cells.read_nodes(node_ids)
        with self._lock:
            for service in services:
                self._cache_service(service.host, host_state.service_from_row(
                    service, alive_since, alive_until))
            # A node claimed on since the read began, or with a claim in
            # flight, keeps its cached row. Nodes new to the cache wait
            # for the next refresh, which rebuilds the table with them.
            rows = [row for row in rows
                    if row.id in self._generations
                    and row.id not in self._in_flight
                    and self._consumed_at.get(row.id, 0) <= seen_seq]
            for row in rows:
                self._generations[row.id] = row.generation
                self._learned(row.id)
                self._reread.discard(row.id)
            ratios = _default_ratios()
            fresh = {row.id: self._make_state(row, ratios) for row in rows}
            table = self._table
            if table is not None:
                self._put_states({table.row_by_id[node_id]: state
                                  for node_id, state in fresh.items()
                                  if node_id in table.row_by_id})
        return fresh

    # -- refreshing -----------------------------------------------------------

    def refresh(self, full=False):
        """Bring the table up to date with SQL; return the new table.

        It reads the rows written since the last refresh; ``full`` (or
        ``FULL_READ_INTERVAL`` since the last full read) also compares
        every node's generation and re-reads every service, which
        notices deleted rows.
        """
        with self._refresh_lock:
            started = time.perf_counter()
            now = time.monotonic()
            began = models.utcnow()
            full = (full or self._watermark is None
                    or now - self._last_full_read >= FULL_READ_INTERVAL)
            changes = _Changes()
            changes.alive_since, changes.alive_until = _alive_window(began)
            first_load = self._table is None
            multi_cell = cell_gather.multi_cell()
            at_once = not (multi_cell or full) and _reads_at_once()
            with self._lock:
                seen_seq = self._consume_seq
                known = dict(self._generations) if full else None
                reread = set(self._reread)
                changes.aggregate_seq = self._aggregate_seq
                dead = set(self._dead_hosts)
                recent = self._recent_pairs(now) if at_once else None
            with (_collector_paused() if full
                  else contextlib.nullcontext()):
                if multi_cell:
                    table = cell_gather.refresh(
                        self, changes, full, known, reread, dead, began,
                        seen_seq)
                else:
                    table = self._read_one_cell(changes, first_load, full,
                                                known, reread, dead,
                                                seen_seq, recent)
            self._watermark = began
            self._watermark_monotonic = now
            if full:
                self._last_full_read = now
                if _freezing:
                    _collect_and_freeze()
            elapsed = time.perf_counter() - started
            self.stats['refreshes'] += 1
            self.stats['nodes_read'] += len(changes.nodes)
            self.stats['services_read'] += len(changes.services)
            self.stats['last_refresh_seconds'] = elapsed
            prometheus.cache_refreshed(
                elapsed, cell_gather.cell_counts(table),
                self._cells.cells_up(), time.time())
            LOG.debug('Host cache refreshed in %.3fs: %d node(s) and %d '
                      'service(s) read, %d node(s) removed', elapsed,
                      len(changes.nodes), len(changes.services),
                      len(changes.removed))
            return table

    def _learned(self, node_id):
        """The cache holds the node's row at its generation now (see
        :meth:`_recent_pairs`); called with the lock held."""
        self._learned_at.pop(node_id, None)
        self._learned_at[node_id] = time.monotonic()

    def _recent_pairs(self, now):
        """``(ids, generations)`` of the nodes whose rows the cache took
        recently enough to be written within the next incremental read's
        window (the slack before the last refresh began), at the
        generation it holds: the read leaves them out. (A row learned
        earlier but written in the window, by a writer whose clock runs
        ahead, is read again: more work, never a row missed.) Called
        with the lock held. At most :data:`MAX_KNOWN_PAIRS`, the newest:
        beyond, sending them would cost more than reading the rows. (The
        rows of the first load are not among them: those written in the
        slack before it are read once more.)"""
        horizon = self._watermark_monotonic - 2 * WRITE_SLACK
        learned = self._learned_at
        while learned:
            oldest = next(iter(learned))
            if learned[oldest] >= horizon:
                break
            del learned[oldest]
        ids, generations = [], []
        newest = learned if len(learned) <= MAX_KNOWN_PAIRS else \
            itertools.islice(reversed(learned), MAX_KNOWN_PAIRS)
        for node_id in newest:
            generation = self._generations.get(node_id, -1)
            if generation >= 0:
                ids.append(node_id)
                generations.append(generation)
        return ids, generations

    def _since(self):
        """Where an incremental read starts: the slack before the last
        refresh began."""
        return self._watermark - datetime.timedelta(seconds=WRITE_SLACK)

    def _read_one_cell(self, changes, first_load, full, known, reread, dead,
                       seen_seq, recent=None):
        """Read ``[database]`` (no cells) into ``changes`` and apply them;
        return the table. ``recent``: see :meth:`_recent_pairs`."""
        if recent is not None and not (first_load or full):
            self._read_changes_at_once(changes, reread, dead, recent)
            with self._lock:
                self._apply(changes, seen_seq)
                return self._table
        table = None
        with db_api.reader() as session:
            if first_load:
                # Every row, streamed into HostStates as it arrives
                # (nodes last: MySQL drivers stream one result at a
                # time), so that the load never holds them all.
                changes.full = True
                changes.services = host_reads.read_services(session)
                self._read_instances_and_aggregates(session, changes)
                changes.nodes = host_reads.stream_nodes(session)
                with self._lock:
                    self._apply(changes, seen_seq)
                    table = self._table
            elif full:
                changes.nodes, changes.removed, changes.services = (
                    host_reads.read_full(session, known))
            else:
                changes.nodes, changes.services = host_reads.read_changes(
                    session, self._since(), reread, changes.alive_since,
                    dead, known=self._generations)
            if not first_load:
                changes.full = full
                self._read_instances_and_aggregates(session, changes)
        if not first_load:
            with self._lock:
                self._apply(changes, seen_seq)
                table = self._table
        return table

    def _read_changes_at_once(self, changes, reread, dead, recent):
        """An incremental read on psycopg2: the nodes and services in one
        prepared statement (the rows the cache holds at their generation,
        ``recent``, left out on the server), then the aggregates'
        fingerprint, on one connection outside a transaction, SQLAlchemy's
        statements and results left out (the refresh thread's CPU is
        taken from the requests')."""
        changes.full = False
        with host_reads.statement_connection() as connection:
            changes.nodes, changes.services = host_reads.read_cell_changes(
                connection, self._since(), reread, changes.alive_since,
                dead, known=recent)
            fingerprint = host_reads.aggregates_fingerprint(connection)
        if fingerprint != self._aggregates_fingerprint:
            # Read after the fingerprint: a change in between is read
            # now and again next time, never missed.
            with db_api.reader() as session:
                changes.aggregates = db_aggregates.get_all(session)
            changes.aggregates_fingerprint = fingerprint

    def cell_of(self, cache_id):
        """The CellMapping of the node the cache knows as ``cache_id``."""
        return self._cells.cell_of(cache_id)

    def down_cells(self):
        """The cells left out of scheduling since they did not answer."""
        return self._cells.down_cells()

    def _read_instances_and_aggregates(self, session, changes,
                                       instances=True):
        """The instances (on the first load) and the aggregates (when
        their fingerprint changed) into ``changes``."""
        if instances and not self._instances_loaded:
            changes.instances = instance_tracking.read_instances(session)
        fingerprint = db_aggregates.fingerprint(session)
        if fingerprint != self._aggregates_fingerprint:
            changes.aggregates = db_aggregates.get_all(session)
            changes.aggregates_fingerprint = fingerprint

    def read_api_aggregates(self, changes):
        """With cells: the aggregates into ``changes`` (when their
        fingerprint changed), from the API database, where they live.
        A database that fails keeps the cached ones, with one WARNING
        until it answers again (an API schema without the aggregate
        tables says to run ``gantt-manage api_db sync``)."""
        try:
            with db_api.api_reader() as session:
                self._read_instances_and_aggregates(session, changes,
                                                    instances=False)
        except db_exc.DBError as error:
            if isinstance(error, db_exc.DBNonExistentTable):
                reason = ("the API database has no table %s: run "
                          "'gantt-manage api_db sync'" % error.table)
            else:
                reason = db_api.describe_error(error)
            if reason != self._aggregates_error:
                LOG.warning('Could not read the aggregates (%s); keeping '
                            'the cached ones', reason)
            self._aggregates_error = reason
            return
        if self._aggregates_error is not None:
            LOG.info('The aggregates are read again')
        self._aggregates_error = None

    def _apply(self, changes, seen_seq):
        """Merge what a refresh read; called with the lock held."""
        changed_hosts = self._apply_services(changes)
        rebuild = False
        if changes.instances is not None:
            self._load_instances(changes.instances)
            rebuild = True
        if changes.aggregate_seq != self._aggregate_seq:
            # A fanout changed the aggregates while this refresh read
            # them: what it read may be older. The fanout left the
            # fingerprint unset, so the next refresh reads them again.
            changes.aggregates = None
        if changes.aggregates is not None:
            self._set_aggregates(changes.aggregates)
            self._aggregates_fingerprint = changes.aggregates_fingerprint
            rebuild = True
        if self._table is None:
            self._first_build(changes)
            return
        for node_id in changes.removed:
            self._generations.pop(node_id, None)
            self._learned_at.pop(node_id, None)
            self._reread.discard(node_id)
            rebuild = True
        # Nodes claimed on after this refresh started its reads, or with
        # a reservation whose SQL claim has not returned: the row read may
        # predate the claim. Keep the consumed cached row and read the
        # node again next time.
        raced = {node_id for node_id, seq in self._consumed_at.items()
                 if seq > seen_seq}
        raced.update(self._in_flight)
        if not changes.full:
            # Rows written within the slack were mostly read already (and
            # are held as they are: the next reads may leave them out).
            unchanged = [row.id for row in changes.nodes
                         if self._generations.get(row.id) == row.generation]
            for node_id in unchanged:
                self._learned(node_id)
            if unchanged:
                changes.nodes = [row for row in changes.nodes
                                 if self._generations.get(row.id)
                                 != row.generation]
        # {node id: row} of the nodes whose rows this refresh takes (and
        # new nodes, even raced: the cache has nothing else of them).
        fresh = {}
        for row in changes.nodes:
            new = row.id not in self._generations
            if new:
                rebuild = True
            if row.id in raced:
                self._generations[row.id] = -1
                self._reread.add(row.id)
                if new:
                    fresh[row.id] = row
                continue
            self._generations[row.id] = row.generation
            self._learned(row.id)
            self._reread.discard(row.id)
            fresh[row.id] = row
        self._consumed_at = {node_id: seq for node_id, seq
                             in self._consumed_at.items() if seq > seen_seq}
        ratios = _default_ratios()
        if rebuild:
            self._rebuild(fresh, changed_hosts, raced, ratios)
            return
        table = self._table
        replaced = {table.row_by_id[node_id]: self._make_state(row, ratios)
                    for node_id, row in fresh.items()}
        for host in changed_hosts:
            for position in table.rows_by_host.get(host, ()):
                state = table.states[position]
                if state.id not in fresh and state.id not in raced:
                    replaced[position] = self._restated(state, ratios)
        self._put_states(replaced)

    def _apply_services(self, changes):
        """Update the cached services; return the hosts that changed."""
        changed = set()
        seen = set()
        cached = self._services
        window = (changes.alive_since, changes.alive_until)
        for row in changes.services:
            seen.add(row.host)
            # Rows read again within the slack, and the heartbeats of the
            # full read, mostly change nothing the filters see: compare
            # before building anything. (A cached last_seen_up is the one
            # of the row's last change; ``alive`` is what counts.)
            alive = host_state.heartbeat_within(row, *window)
            old = cached.get(row.host)
            if old is not None and old.alive == alive and \
                    old[:6] == tuple(row[:6]):
                continue
            self._cache_service(row.host,
                                host_state.service_info(row, alive))
            changed.add(row.host)
        if changes.full:
            for host in set(cached) - seen:
                changed.add(host)
                self._cache_service(host, None)
        return changed

    def _cache_service(self, host, service):
        """Cache the host's ServiceInfo (None: forget it), keeping the
        set of dead hosts, which each refresh reads again."""
        if service is None:
            self._services.pop(host, None)
            self._dead_hosts.discard(host)
            return
        self._services[host] = service
        if service.alive:
            self._dead_hosts.discard(host)
        else:
            self._dead_hosts.add(host)

    def _set_aggregates(self, aggregates):
        self._aggregates = tuple(aggregates)
        by_host = {}
        for aggregate in self._aggregates:
            for host in aggregate.hosts:
                by_host.setdefault(host, []).append(aggregate)
        # Hosts in the same aggregates share one tuple (and so one zone
        # set, see host_state.zones_of).
        shared = {}
        self._aggregates_by_host = {}
        for host, aggs in by_host.items():
            key = tuple(id(agg) for agg in aggs)
            self._aggregates_by_host[host] = shared.setdefault(key,
                                                               tuple(aggs))

    # -- aggregate fanouts ----------------------------------------------------

    def update_aggregates(self, aggregates):
        """Apply the new state of ``aggregates`` (db Aggregate tuples,
        created or changed) to the cache now."""
        with self._lock:
            by_id = {agg.id: agg for agg in self._aggregates}
            hosts = set()
            for aggregate in aggregates:
                old = by_id.get(aggregate.id)
                if old is not None:
                    hosts |= old.hosts
                hosts |= aggregate.hosts
                by_id[aggregate.id] = aggregate
            self._replace_aggregates(
                [by_id[agg_id] for agg_id in sorted(by_id)], hosts)
        LOG.debug('Applied the new state of aggregate(s) %s',
                  ', '.join(agg.name for agg in aggregates))

    def delete_aggregate(self, aggregate):
        """Forget ``aggregate`` (a db Aggregate tuple) now."""
        with self._lock:
            hosts = set(aggregate.hosts)
            for old in self._aggregates:
                if old.id == aggregate.id:
                    hosts |= old.hosts
            self._replace_aggregates(
                [agg for agg in self._aggregates if agg.id != aggregate.id],
                hosts)
        LOG.debug('Forgot deleted aggregate %s', aggregate.name)

    def _replace_aggregates(self, aggregates, hosts):
        """Called with the lock held: new aggregates, and new zones and
        aggregates for the HostStates of ``hosts``."""
        self._set_aggregates(aggregates)
        self._aggregate_seq += 1
        # The fingerprint no longer describes what the cache holds: the
        # next refresh reads the aggregates from SQL again.
        self._aggregates_fingerprint = None
        self.stats['aggregate_updates'] += 1
        table = self._table
        if table is None:
            return
        states = list(table.states)
        ratios = _default_ratios()
        for host in hosts:
            for row in table.rows_by_host.get(host, ()):
                states[row] = self._restated(states[row], ratios)
        self._table = host_table.HostTable.build(states, self._aggregates)
        self.stats['full_builds'] += 1


    def _make_state(self, row, ratios):
        """A HostState from a node row just read (``ratios``: see
        :func:`_default_ratios`, which also holds the default zone)."""
        state = host_state.HostState.from_node(
            row, self._services.get(row.host),
            self._aggregates_by_host.get(row.host, ()), ratios,
            ratios[_DEFAULT_AZ])
        if row.id > cell_gather.NODE_MASK:
            cell = self._cells.cell_of(row.id)
            state.cell_uuid, state.cell_name = cell.uuid, cell.label()
        state.instances = self._instances_of(row.host)
        return state

    def _restated(self, state, ratios):
        """``state`` with its host's current service, aggregates,
        instances and ratio defaults."""
        return state.restated(
            self._services.get(state.host),
            self._aggregates_by_host.get(state.host, ()), ratios,
            ratios[_DEFAULT_AZ], self._instances_of(state.host))

    def _first_build(self, changes):
        """The first table, from every node row (``changes.nodes``, an
        iterator ordered by id), one HostState per row as it comes;
        ``changes.nodes`` becomes the count read."""
        ratios = _default_ratios()
        self._generations = {}
        self._learned_at = {}
        states = []
        for row in changes.nodes:
            self._generations[row.id] = row.generation
            states.append(self._make_state(row, ratios))
        changes.nodes = states
        self._table = host_table.HostTable.build(states, self._aggregates)
        self.stats['full_builds'] += 1

    def _rebuild(self, fresh, changed_hosts, keep_ids, ratios):
        """A new table over every known node: from ``fresh`` rows where
        given, else from the old table's state (kept as it is for
        ``keep_ids``, raced by a claim; restated for the others)."""
        old = self._table
        states = []
        for node_id in sorted(self._generations):
            row = fresh.get(node_id)
            if row is not None:
                states.append(self._make_state(row, ratios))
                continue
            state = old.states[old.row_by_id[node_id]]
            if node_id not in keep_ids:
                state = self._restated(state, ratios)
            states.append(state)
        self._table = host_table.HostTable.build(states, self._aggregates)
        self.stats['full_builds'] += 1

    # -- the background thread ------------------------------------------------

    def _ensure_thread(self):
        if os.getpid() != self._pid:
            self._after_fork()
        thread = self._thread
        if thread is not None and thread.is_alive():
            return
        with self._thread_lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop = threading.Event()
            self._thread = threading.Thread(
                target=_refresh_loop, args=(weakref.ref(self), self._stop),
                name='gantt-host-cache', daemon=True)
            self._thread.start()

    def start(self):
        """Load the table now and start the background refresh."""
        self.snapshot()

    def stop(self):
        """Stop the background refresh and the cells' reading threads (a
        later snapshot restarts them)."""
        with self._thread_lock:
            thread, self._thread = self._thread, None
            self._stop.set()
        self._cells.stop()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)


# The longest a full read keeps the collector paused: a read held up by
# a database that stopped answering must not leave the process's garbage
# uncollected until it ends (a cold start at 100,000 hosts takes 2-4 s).
PAUSE_LIMIT = 60.0

# Full reads under way that paused the cyclic collector, whether it ran
# before the first of them, and the timer of the pause's limit (see
# _collector_paused).
_pause_lock = threading.Lock()
_pauses = 0
_was_enabled = False
_pause_timer = None


@contextlib.contextmanager
def _collector_paused():
    """Pause the cyclic garbage collector while a full read builds the
    cache: its hundreds of thousands of new objects would make the
    collector walk the growing cache again and again (a fifth of a cold
    start at 100,000 hosts), to find nothing, since they are all kept.
    What other threads make meanwhile waits until the read ends, or
    :data:`PAUSE_LIMIT` seconds at most; nested and concurrent pauses
    (several caches) resume it once, and only if it ran before."""
    global _pauses, _was_enabled, _pause_timer
    with _pause_lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
            if _was_enabled:
                _pause_timer = threading.Timer(PAUSE_LIMIT, _pause_too_long)
                _pause_timer.daemon = True
                _pause_timer.start()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0:
                if _pause_timer is not None:
                    _pause_timer.cancel()
                    _pause_timer = None
                if _was_enabled:
                    gc.enable()


def _pause_too_long():
    """In the pause's timer: the pause outlasted :data:`PAUSE_LIMIT`:
    resume the collector (the reads under way go on without the pause).
    A timer whose pause ended meanwhile, its own or a later one's, finds
    another timer, or none, in ``_pause_timer`` and does nothing."""
    with _pause_lock:
        if (_pause_timer is not threading.current_thread()
                or gc.isenabled()):
            return
        gc.enable()
    LOG.warning('A full read of the host cache has run for more than %d '
                's; the garbage collector runs again meanwhile',
                PAUSE_LIMIT)


def _collect_and_freeze():
    """Thaw what an earlier call froze, collect every generation, and
    freeze what is left: the collector's later passes skip it."""
    started = time.perf_counter()
    gc.unfreeze()
    found = gc.collect()
    gc.freeze()
    LOG.debug('Collected %d unreachable object(s) and froze %d in %.3fs',
              found, gc.get_freeze_count(), time.perf_counter() - started)


def _reads_at_once():
    """Whether an incremental refresh of ``[database]`` is one prepared
    statement (PostgreSQL through psycopg2)."""
    return db_api.get_engine().dialect.driver == 'psycopg2'


def _refresh_loop(manager_ref, stop):
    """Refresh until stopped, until the manager is garbage collected, or
    until ``[database] connection`` names another database (the cache
    describes one database; a new one needs a new HostManager)."""
    url = CONF.database.connection
    failing = False
    while not stop.wait(CONF.scheduler.host_state_refresh_interval):
        manager = manager_ref()
        if manager is None:
            return
        if CONF.database.connection != url:
            LOG.warning('[database] connection changed; the host cache '
                        'stops refreshing')
            return
        try:
            manager.refresh()
        except db_exc.DBConnectionError as error:
            # An outage: say so once, and once when it ends.
            manager.stats['refresh_failures'] += 1
            prometheus.cache_refresh_failed()
            if not failing:
                LOG.warning('The database is unreachable; requests keep '
                            'using the cached hosts until it is back: %s',
                            db_api.describe_error(error))
            failing = True
        except Exception:
            manager.stats['refresh_failures'] += 1
            prometheus.cache_refresh_failed()
            LOG.exception('Refreshing the host cache failed; requests keep '
                          'using the cached hosts')
        else:
            if failing:
                LOG.info('The database is back; the host cache is fresh')
            failing = False
        del manager
