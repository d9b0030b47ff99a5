"""What a HostTable answers about its rows: masks, liveness, zones,
aggregate multipliers and values computed per HostState.

:class:`Lookups` is a mixin of
:class:`scheduler.host_cache.host_table.HostTable`: each answer is a
column (or mask) aligned with the table's rows, kept with the table
where it is worth keeping::

    up = table.service_up()
    in_az = table.in_zone('az1')
    failed = table.state_column('failed_builds', failed_builds_of)
"""

import datetime
import math

from oslo_log import log as logging
import numpy as np

from scheduler.conf import cached
from scheduler.host_cache import host_state
from scheduler.host_cache import host_table_per_state as per_state
from scheduler.host_cache import table_columns

LOG = logging.getLogger(__name__)


def now_us_utc():
    """Now, in the microseconds of the ``heartbeat_us`` column."""
    return host_state.to_microseconds(
        datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None))


class Lookups:
    """The questions a HostTable answers (a mixin: see the module's
    doc); it reads the table's columns, indexes and caches."""

    def mask_of_rows(self, rows):
        mask = np.zeros(len(self.states), dtype=np.bool_)
        if len(rows):
            mask[np.asarray(rows, dtype=np.intp)] = True
        return mask

    def hosts_mask(self, hosts, ignore_case=True):
        """Rows whose service host is one of ``hosts``."""
        index = self.rows_by_host_lower if ignore_case else self.rows_by_host
        rows = [index[key] for key in
                ((h.lower() if ignore_case else h) for h in hosts)
                if key in index]
        return self.mask_of_rows(np.concatenate(rows) if rows else [])

    def nodes_mask(self, nodenames):
        """Rows whose node name is one of ``nodenames`` (case matters)."""
        rows = [self.rows_by_nodename[name] for name in nodenames
                if name in self.rows_by_nodename]
        return self.mask_of_rows(np.concatenate(rows) if rows else [])

    def service_up(self, down_time=None, now=None):
        """Column: the compute service is up (see HostState.service_up).

        Read-only. Without ``now`` it is kept until a heartbeat crosses
        the window (see :meth:`liveness_changes_at`); rows written in
        place meanwhile are recomputed alone.
        """
        if down_time is None:
            down_time = cached.group(None).service_down_time
        if now:
            return self._service_up(down_time,
                                    host_state.to_microseconds(now))
        return self._live(down_time, now_us_utc()).up

    def liveness_changes_at(self, down_time, now_us):
        """The first microsecond after ``now_us`` at which
        :meth:`service_up` may answer differently for some row (a
        heartbeat leaves the ``down_time`` window, or one from the
        future enters it), or None if it never will without a write.
        It may come earlier than that: the edge of a heartbeat written
        over since the column was computed still counts."""
        return self._live(down_time, now_us).until

    def _live(self, down_time, now_us):
        """The :class:`_Liveness` that holds at ``now_us``."""
        live = self._liveness
        if (live is not None and live.down_time == down_time
                and live.since_us <= now_us):
            writes = self.writes
            if live.writes != writes:
                written = self.written_since(live.writes)
                if written is None:
                    live = None
                elif written[1].isdisjoint(_LIVENESS_INPUTS):
                    # A claim: usage changed, not liveness.
                    live = live.patched(self, None, writes)
                else:
                    live = live.patched(self, written[0], writes)
            if live is not None and (live.until is None
                                     or now_us < live.until):
                self._liveness = live
                return live
        writes = self.writes
        live = _Liveness(down_time, now_us, writes,
                         self._service_up(down_time, now_us),
                         self._first_edge(down_time, now_us))
        self._liveness = live
        return live

    def _service_up(self, down_time, now_us, rows=None):
        """service_up at ``now_us`` of ``rows`` (None: every row)."""
        window = down_time * 1000000
        pick = (lambda column: column) if rows is None else (
            lambda column: column[rows])
        beats = pick(self.heartbeat_us)
        return (pick(self.has_service) & ~pick(self.forced_down)
                & (beats != host_state.NO_HEARTBEAT)
                & (beats >= now_us - window)
                & ((beats <= now_us + window)
                   | (beats == host_state.ALIVE)))

    def _first_edge(self, down_time, after_us, rows=None):
        """The first microsecond after ``after_us`` at which a heartbeat
        of ``rows`` (None: every row) crosses the window, or None."""
        window = down_time * 1000000
        beats = (self.heartbeat_us if rows is None
                 else self.heartbeat_us[rows])
        beats = beats[(beats != host_state.ALIVE)
                      & (beats != host_state.NO_HEARTBEAT)]
        edges = np.concatenate((beats - window, beats + window + 1))
        edges = edges[edges > after_us]
        return int(edges.min()) if len(edges) else None

    def in_zone(self, zone):
        """Column: the host is in availability zone ``zone``."""
        mask = self._az_masks.get(zone)
        if mask is None:
            matching = [i for i, zones in enumerate(self.az_sets)
                        if zone in zones]
            mask = np.isin(self.az_index, matching)
            self._az_masks[zone] = mask
        return mask

    def zone_rows(self, zone):
        """``(lo, hi)``: the first row in availability zone ``zone`` and
        one past the last (every row of the zone lies between), or None
        when no row is in it. Kept, as the zone's mask is."""
        found = self._az_rows.get(zone, False)
        if found is False:
            mask = self.in_zone(zone)
            lo = int(mask.argmax()) if len(mask) else 0
            if not len(mask) or not mask[lo]:
                found = None
            else:
                found = lo, len(mask) - int(mask[::-1].argmax())
            self._az_rows[zone] = found
        return found

    def aggregate_multipliers(self, key):
        """Column of aggregate overrides of a weight multiplier, or None.

        NaN where no aggregate of the host sets ``key`` or where one sets
        it to something that is not a number (the option then applies, as
        in Nova); else the minimum of the values the host's aggregates set.
        None when no aggregate sets ``key`` at all.
        """
        if key in self._multipliers:
            return self._multipliers[key]
        column = None
        invalid = np.zeros(len(self.states), dtype=np.bool_)
        for aggregate in self.aggregates:
            if key not in aggregate.metadata:
                continue
            if column is None:
                column = np.full(len(self.states), np.nan)
            rows = self.hosts_mask(aggregate.hosts, ignore_case=False)
            value = parse_multiplier(aggregate.metadata[key])
            if value is None:
                LOG.warning("Could not decode '%s' weight multiplier %r of "
                            "aggregate %s; using the option for its hosts",
                            key, aggregate.metadata[key], aggregate.name)
                invalid |= rows
                continue
            column[rows] = np.fmin(column[rows], value)
        if column is not None:
            column[invalid] = np.nan
        self._multipliers[key] = column
        return column

    def attribute_column(self, name):
        """The column of a numeric HostState attribute (``free_ram_mb``,
        ``num_instances``...; see ATTRIBUTE_COLUMNS), or None for any
        other name."""
        column = table_columns.ATTRIBUTE_COLUMNS.get(name)
        return None if column is None else getattr(self, column)

    # -- values computed from the HostStates, on demand ----------------------

    def state_column(self, name, compute, dtype=np.float64):
        """Column of ``compute(state)`` over every row.

        Computed on first use and kept under ``name``; a table that
        :meth:`replace` derives from this one recomputes only the rows
        that changed, and only when asked. One ``name`` must always go
        with the same ``compute``::

            failed = table.state_column('failed_builds', failed_builds_of)
        """
        return self._per_state.column(name, self.states, compute, dtype)

    def grouped(self, name, key):
        """``(codes, keys)``: the rows grouped by the hashable ``key(state)``.

        ``keys[codes[row]]`` is the key of ``row``: a filter decides once
        per key and reads every row's answer with ``answers[codes]``.
        ``keys`` may also hold keys that no row has any more. Kept and
        carried over like :meth:`state_column`.
        """
        return self._per_state.grouping(name, self.states, key)

    def aggregate_groups(self):
        """``(codes, groups)``: the rows grouped by the aggregates their
        HostState belongs to; ``groups[codes[row]]`` is that tuple of
        aggregates (:class:`scheduler.db.aggregates.Aggregate`)."""
        codes, keys = self.grouped('aggregates', per_state.AggregateSet)
        return codes, [key.aggregates for key in keys]


# The columns service_up is computed from.
_LIVENESS_INPUTS = frozenset(('has_service', 'forced_down', 'heartbeat_us'))


class _Liveness:
    """The service_up column of a table at ``since_us``, which holds
    until ``until`` (None: until a write) for every row not written
    since the table's ``writes`` count."""

    __slots__ = ('down_time', 'since_us', 'writes', 'up', 'until')

    def __init__(self, down_time, since_us, writes, up, until):
        self.down_time = down_time
        self.since_us = since_us
        self.writes = writes
        up.flags.writeable = False
        self.up = up
        self.until = until

    def patched(self, table, rows, writes):
        """The same, with ``rows`` (written in place up to ``writes``;
        None: none whose liveness inputs changed) judged again at
        ``since_us``: what holds from then on holds for them too, until
        their own first edge after it."""
        if rows is None:
            return _Liveness(self.down_time, self.since_us, writes, self.up,
                             self.until)
        up = self.up.copy()
        up[rows] = table._service_up(self.down_time, self.since_us, rows)
        edge = table._first_edge(self.down_time, self.since_us, rows)
        until = self.until if edge is None else (
            edge if self.until is None else min(self.until, edge))
        return _Liveness(self.down_time, self.since_us, writes, up, until)


def parse_multiplier(value):
    """A finite float from aggregate metadata, or None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
