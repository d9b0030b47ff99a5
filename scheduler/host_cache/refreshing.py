"""How the HostManager refreshes its table from SQL: the reads.

:class:`Refreshing` is a mixin of
:class:`scheduler.host_cache.host_manager.HostManager` (whose docstring
says what a refresh reads and why): :meth:`Refreshing.refresh` reads
``[database]`` itself without cells, and hands the cells to
:mod:`scheduler.host_cache.cell_refresh` with them; what was read is then
merged under the manager's lock (:mod:`scheduler.host_cache.applying`).
It uses the manager's locks, counters and caches::

    table = manager.refresh(full=True)
"""

import contextlib
import datetime
import itertools
import time

from oslo_db import exception as db_exc
from oslo_log import log as logging

from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.host_cache import cell_gather
from scheduler.host_cache import cell_refresh
from scheduler.host_cache import collector
from scheduler.host_cache import host_reads
from scheduler.host_cache import instance_tracking
from scheduler.host_cache import node_extras
from scheduler.host_cache import refresh_changes
from scheduler import prometheus

LOG = logging.getLogger(__name__)

# The most nodes an incremental read on PostgreSQL is told the cache
# holds (see HostManager._recent_pairs): each costs the refresh ~2 us of
# its CPU and the server's (2-CPU machine).
MAX_KNOWN_PAIRS = 2000
# Seconds between full reads of the nodes' generations and the services
# (notices deleted rows and writers whose clocks lag by more than
# refresh_changes.WRITE_SLACK).
FULL_READ_INTERVAL = 300.0


def _reads_at_once():
    """Whether an incremental refresh of ``[database]`` is one prepared
    statement (PostgreSQL through psycopg2)."""
    return db_api.get_engine().dialect.driver == 'psycopg2'


class Refreshing:
    """The refresh of a HostManager (a mixin: see the module's doc)."""

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
                    or now - self._last_full_read
                    >= self.full_read_interval)
            changes = refresh_changes.Changes()
            changes.alive_since, changes.alive_until = (
                refresh_changes.alive_window(began))
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
            # Asked before the read's rows count (see collector.grown).
            collect = full and collector.before_full_read()
            with (collector.paused() if full
                  else contextlib.nullcontext()):
                if multi_cell:
                    table = cell_refresh.refresh(
                        self, changes, full, known, reread, dead, began,
                        seen_seq)
                else:
                    table = self._read_one_cell(changes, first_load, full,
                                                known, reread, dead,
                                                seen_seq, recent)
                # A table to build (a full read's, or many services'
                # states restated): hundreds of thousands of new objects,
                # as in a full read.
                with (collector.paused() if self._pending is not None
                      else contextlib.nullcontext()):
                    built = self._swap_in_built()
                    if full or built is not None:
                        # Frozen before the collector resumes (else its
                        # first pass walks the new table); a mass
                        # liveness change's table too (else every pass
                        # does, until the next full read).
                        collector.after_full_read(collect)
                table = built or table
            self._watermark = began
            self._watermark_monotonic = now
            if full:
                self._last_full_read = now
            elapsed = time.perf_counter() - started
            if full:
                self.stats['full_reads'] += 1
                self.stats['last_full_read_seconds'] = elapsed
            self.stats['refreshes'] += 1
            self.stats['nodes_read'] += len(changes.nodes)
            self.stats['services_read'] += changes.services_read()
            self.stats['last_refresh_seconds'] = elapsed
            prometheus.cache_refreshed(
                elapsed, cell_refresh.cell_counts(table),
                self._cells.cells_up(), time.time())
            LOG.debug('Host cache refreshed in %.3fs: %d node(s) and %d '
                      'service(s) read, %d node(s) removed', elapsed,
                      len(changes.nodes), changes.services_read(),
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
        horizon = (self._watermark_monotonic
                   - 2 * refresh_changes.WRITE_SLACK)
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
        return self._watermark - datetime.timedelta(
            seconds=refresh_changes.WRITE_SLACK)

    def _read_one_cell(self, changes, first_load, full, known, reread, dead,
                       seen_seq, recent=None):
        """Read ``[database]`` (no cells) into ``changes`` and apply them;
        return the table. ``recent``: see :meth:`_recent_pairs`."""
        if recent is not None and not (first_load or full):
            self._read_changes_at_once(changes, reread, dead, recent)
            self._compare_services(changes)
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
                # Compared as they come: only their ServiceInfos kept.
                changes.services = host_reads.stream_services(session)
                self._compare_services(changes)
                changes.services = ()
                self._read_instances_and_aggregates(session, changes)
                changes.extras = node_extras.read(session)
                changes.nodes = host_reads.stream_nodes(session)
                with self._lock:
                    self._apply(changes, seen_seq)
                    table = self._table
            elif full:
                changes.nodes, changes.removed = (
                    host_reads.read_full_nodes(session, known))
                differing = host_reads.read_service_differences(
                    session, self._services, changes.alive_since,
                    changes.alive_until)
                if differing is None:
                    changes.services = host_reads.read_services(session)
                else:
                    changes.services = differing
                    changes.services_compared_on_server = True
            else:
                changes.nodes, changes.services = host_reads.read_changes(
                    session, self._since(), reread, changes.alive_since,
                    dead, known=self._generations)
            if not first_load:
                changes.full = full
                changes.extras = node_extras.read(
                    session, node_extras.ids_to_read(
                        changes.nodes, None if full else self._generations))
                self._read_instances_and_aggregates(session, changes)
        if not first_load:
            self._compare_services(changes)
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
            ids = node_extras.ids_to_read(changes.nodes, self._generations)
            if ids:
                changes.extras = node_extras.read(connection, ids)
            fingerprint = host_reads.aggregates_fingerprint(connection)
        if fingerprint != self._aggregates_fingerprint:
            # Read after the fingerprint: a change in between is read
            # now and again next time, never missed.
            with db_api.reader() as session:
                changes.aggregates = db_aggregates.get_all(session)
            changes.aggregates_fingerprint = fingerprint

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
