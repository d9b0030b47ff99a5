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
  clock lags by more than ``WRITE_SLACK``
  (:mod:`scheduler.host_cache.refresh_changes`). The database compares
  them: the generations a block of ids at a time
  (:func:`scheduler.db.compute_nodes.changed_since`), the services by
  sending only those that are not enabled, up and alive on its side or
  the cache's (``host_reads.read_service_differences``); the few rows
  that changed are written in place, as an incremental refresh writes
  them;
* aggregates, hosts and metadata, re-read whole only when their
  fingerprint changed: from ``[database]`` in the refresh's own
  transaction without cells, from the API database with them
  (:meth:`HostManager.read_api_aggregates`);
* the inventories beyond VCPU, MEMORY_MB and DISK_GB and the traits of
  the nodes whose rows it takes (every row on a first load; none, and
  no statement, when it takes no node): see
  :mod:`scheduler.host_cache.node_extras`. A table gives them, with the
  classic classes, its service states and aggregates, as Placement's
  providers (``HostTable.placement``).

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

The garbage collector's part in full reads is
:mod:`scheduler.host_cache.collector`'s.

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
import os
import threading
import weakref

from oslo_db import exception as db_exc
from oslo_log import log as logging

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler import hardware
from scheduler.host_cache import applying
from scheduler.host_cache import cell_gather
from scheduler.host_cache import host_instances
from scheduler.host_cache import host_state
from scheduler.host_cache import instance_tracking
from scheduler.host_cache import refresh_changes
from scheduler.host_cache import refreshing
from scheduler import prometheus

CONF = conf.CONF
LOG = logging.getLogger(__name__)

_managers = weakref.WeakSet()


def _reset_after_fork():
    for manager in list(_managers):
        manager._after_fork()


os.register_at_fork(after_in_child=_reset_after_fork)


class HostManager(refreshing.Refreshing, applying.Applying,
                  instance_tracking.InstanceTracking):
    """Owns the cached HostTable of one scheduler process."""

    def __init__(self, auto_refresh=True):
        self.auto_refresh = auto_refresh
        self.stats = {'refreshes': 0, 'full_builds': 0, 'nodes_read': 0,
                      'services_read': 0, 'refresh_failures': 0,
                      'aggregate_updates': 0, 'instance_updates': 0,
                      'instance_resyncs': 0, 'claims_taken_as_read': 0,
                      'last_refresh_seconds': 0.0, 'full_reads': 0,
                      'last_full_read_seconds': 0.0}
        # Seconds between full reads (see refreshing.FULL_READ_INTERVAL);
        # a benchmark shortens it to see several in a minute.
        self.full_read_interval = refreshing.FULL_READ_INTERVAL
        self._table = None
        # A table to build off the lock, and the states put in the
        # current one meanwhile (see Applying._defer_build).
        self._pending = None
        self._captured = None
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
                instance_info=None, in_flight=False, hardware_request=None,
                extra=None):
        """Record a claim in the cached row of ``node_id``; with
        ``instance_uuid``, the instance is on the node's host from now on
        (``instance_info``: its InstanceInfo).

        ``hardware_request`` (a :class:`scheduler.hardware.Request`): the
        instance's NUMA cells, pinned CPUs, pages and PCI devices are
        fitted on the cached row, as the claim fits them in SQL, and
        taken there too. Returns what was taken (a hardware record, for
        :meth:`settle` to give back), or None.

        ``extra`` (``{resource class: amount}``): what the claim takes of
        the node's other classes, added to the used amounts of its
        ``inventories`` (and so of the table's ``placement``).

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
            try:
                state, record = table.states[row].reserved(
                    resources, hardware_request, extra)
            except ValueError as error:
                # The cached row predates the class (the claim in SQL
                # decides; the node is read again, as after every claim).
                LOG.warning('Node %(node)s: %(error)s The host cache '
                            'records the claim without it until the node '
                            'is read again.',
                            {'node': node_id, 'error': error})
                state, record = table.states[row].reserved(
                    resources, hardware_request)
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
        alive_since, alive_until = refresh_changes.alive_window(
            models.utcnow())
        rows, services, extras = self._cells.read_nodes(node_ids)
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
            ratios = refresh_changes.default_ratios()
            fresh = {row.id: self._make_state(row, ratios, extras)
                     for row in rows}
            table = self._table
            if table is not None:
                self._put_states({table.row_by_id[node_id]: state
                                  for node_id, state in fresh.items()
                                  if node_id in table.row_by_id})
        return fresh

    # -- refreshing -----------------------------------------------------------

    def cell_of(self, cache_id):
        """The CellMapping of the node the cache knows as ``cache_id``."""
        return self._cells.cell_of(cache_id)

    def down_cells(self):
        """The cells left out of scheduling since they did not answer."""
        return self._cells.down_cells()

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
