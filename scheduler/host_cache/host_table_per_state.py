"""Values a HostTable computes from its HostStates on demand, and carries.

A filter that reads something no NumPy column holds (the aggregates of a
host, a stat, the images its instances run...) asks the table for a
column of it (:meth:`HostTable.state_column
<scheduler.host_cache.host_table.HostTable.state_column>`) or for the rows
grouped by it (:meth:`~scheduler.host_cache.host_table.HostTable.grouped`), and
decides once per distinct value. Computing that over 10,000 HostStates takes
milliseconds, so a table keeps what it computed in a :class:`Cache`, and the
tables :meth:`~scheduler.host_cache.host_table.HostTable.replace` derives from
it (after every claim, every refresh) recompute only the rows that changed, and
only when asked::

    cache = Cache()
    codes, keys = cache.grouping('hv', states, lambda s: s.hypervisor_type)
    later = cache.carried({3: new_state}, len(states))   # lazy
"""

import collections
import threading

import numpy as np
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# Per-state values a table keeps (state_column, grouped), oldest dropped.
PER_STATE_LIMIT = 64
# Replacements a carried value may lag behind before it is brought up to
# date at once rather than when next asked for.
CARRY_DEPTH = 16
_CARRY_LOCK = threading.Lock()


class AggregateSet:
    """The aggregates of one host, hashable by the identity of its members
    (see :meth:`scheduler.host_cache.host_table.HostTable.aggregate_groups`);
    holding them keeps their ``id()`` from being reused."""

    __slots__ = ('aggregates', '_ids')

    def __init__(self, state):
        self.aggregates = tuple(state.aggregates)
        self._ids = tuple(id(aggregate) for aggregate in self.aggregates)

    def __hash__(self):
        return hash(self._ids)

    def __eq__(self, other):
        return isinstance(other, AggregateSet) and self._ids == other._ids


class StateMemo:
    """``compute(state)`` remembered per HostState object: a HostState is
    read-only, so what is computed from it holds as long as it lives.
    Holding the state keeps its ``id()`` from being reused; past
    ``limit`` states everything is forgotten at once::

        summary = StateMemo(summary_of)
        summary(state)          # computed once per state
    """

    def __init__(self, compute, limit=250000):
        self._compute = compute
        self._limit = limit
        self._known = {}

    def __call__(self, state):
        found = self._known.get(id(state))
        if found is not None and found[0] is state:
            return found[1]
        value = self._compute(state)
        if len(self._known) >= self._limit:
            self._known.clear()
        self._known[id(state)] = (state, value)
        return value


class _StateColumn:
    """``compute(state)`` of every row, as an array."""

    def __init__(self, compute, dtype, values):
        self.compute = compute
        self.dtype = dtype
        self.values = values

    @classmethod
    def build(cls, states, compute, dtype):
        return cls(compute, dtype, np.fromiter(
            (compute(state) for state in states), dtype=dtype,
            count=len(states)))

    def rebuilt(self, states):
        return self.build(states, self.compute, self.dtype)

    def updated(self, new_states, size):
        values = self.values.copy()
        for row, state in new_states.items():
            values[row] = self.compute(state)
        return _StateColumn(self.compute, self.dtype, values)

    def update_rows(self, new_states):
        for row, state in new_states.items():
            self.values[row] = self.compute(state)


class _Grouping:
    """Rows grouped by a key of their state.

    Tables derived from one another share ``keys`` and ``index``, which
    only grow (under ``lock``), so that the codes of an older table keep
    their meaning; ``size`` is how many keys this table's codes may use.
    """

    def __init__(self, key, codes, keys, index, lock):
        self.key = key
        self.codes = codes
        self.keys = keys
        self.index = index
        self.lock = lock
        self.size = len(keys)

    @classmethod
    def build(cls, states, key):
        keys, index = [], {}
        grouping = cls(key, None, keys, index, threading.Lock())
        grouping.codes = np.fromiter(
            (grouping._code(key(state)) for state in states),
            dtype=np.intp, count=len(states))
        grouping.size = len(keys)
        return grouping

    def rebuilt(self, states):
        return self.build(states, self.key)

    def _code(self, value):
        code = self.index.get(value)
        if code is None:
            code = self.index[value] = len(self.keys)
            self.keys.append(value)
        return code

    def updated(self, new_states, size):
        if len(self.keys) > 2 * size + 64:
            return None  # mostly stale keys: build afresh when asked
        codes = self.codes.copy()
        with self.lock:
            for row, state in new_states.items():
                codes[row] = self._code(self.key(state))
            return _Grouping(self.key, codes, self.keys, self.index,
                             self.lock)

    def update_rows(self, new_states):
        with self.lock:
            for row, state in new_states.items():
                self.codes[row] = self._code(self.key(state))
            self.size = len(self.keys)

    def snapshot(self):
        with self.lock:
            return self.codes.copy(), self.keys[:self.size]


class _Carried:
    """An entry of an older table, and the rows replaced since; brought
    up to date (once) when asked for."""

    _UNRESOLVED = object()

    def __init__(self, entry, new_states, size):
        self.entry = entry
        self.new_states = new_states
        self.size = size
        self.depth = entry.depth + 1 if isinstance(entry, _Carried) else 1
        self.result = self._UNRESOLVED

    def resolve(self):
        with _CARRY_LOCK:
            return self._resolve()

    def _resolve(self):
        chain = []
        entry = self
        while (isinstance(entry, _Carried)
               and entry.result is self._UNRESOLVED):
            chain.append(entry)
            entry = entry.entry
        if isinstance(entry, _Carried):
            entry = entry.result
        for carried in reversed(chain):
            if entry is not None:
                entry = entry.updated(carried.new_states, carried.size)
            carried.result = entry
            carried.entry = carried.new_states = None
        return entry


class Cache:
    """The values one table computed, by name, oldest dropped first."""

    def __init__(self):
        self._entries = collections.OrderedDict()
        self._lock = threading.Lock()

    def column(self, name, states, compute, dtype):
        """The values of ``compute(state)``, as an array."""
        entry = self._entry(name)
        if entry is None:
            entry = _StateColumn.build(states, compute, dtype)
            self._remember(name, entry)
        return entry.values

    def grouping(self, name, states, key):
        """``(codes, keys)`` of the states grouped by ``key(state)``: a
        snapshot, every code an index of ``keys``, even while the table's
        owner updates rows in place (which may add keys)."""
        entry = self._entry(name)
        if entry is None:
            entry = _Grouping.build(states, key)
            self._remember(name, entry)
        return entry.snapshot()

    def carried(self, new_states, size):
        """A cache for the table where ``{row: HostState}`` replaced rows
        of this one's; each value is brought up to date when asked."""
        cache = Cache()
        with self._lock:
            entries = list(self._entries.items())
        for name, entry in entries:
            carried = _Carried(entry, new_states, size)
            if carried.depth > CARRY_DEPTH:
                carried = carried.resolve()
            if carried is not None:
                cache._entries[name] = carried
        return cache

    def rebuilt(self, states):
        """A cache holding every value this one holds (resolved or
        carried), each computed afresh over ``states``: for a table built
        to replace this one's (a full read's), so that the first requests
        it serves do not compute them over every host (a second at a
        million hosts for BuildFailureWeigher's column). A value whose
        computation fails is left out, with the reason logged: a request
        that asks for it computes it, as before."""
        with self._lock:
            entries = list(self._entries.items())
        cache = Cache()
        for name, entry in entries:
            with _CARRY_LOCK:
                # The value's first form: how it is computed.
                while isinstance(entry, _Carried):
                    entry = (entry.entry if entry.result is
                             _Carried._UNRESOLVED else entry.result)
            if entry is None:
                continue
            try:
                cache._entries[name] = entry.rebuilt(states)
            except Exception:
                LOG.exception('Computing %r for the new host table failed;'
                              ' the first request that needs it will try '
                              'again', name)
        return cache

    def update_rows(self, new_states):
        """Bring every value up to date, in place, where ``{row:
        HostState}`` replaced rows in the table's own states (see
        :meth:`scheduler.host_cache.host_table.HostTable.update_in_place`)."""
        with self._lock:
            names = list(self._entries)
        for name in names:
            entry = self._entry(name)
            if entry is not None:
                entry.update_rows(new_states)

    def _entry(self, name):
        entry = self._entries.get(name)
        if isinstance(entry, _Carried):
            entry = entry.resolve()
            with self._lock:
                if entry is None:
                    self._entries.pop(name, None)
                else:
                    self._entries[name] = entry
        return entry

    def _remember(self, name, entry):
        with self._lock:
            self._entries[name] = entry
            while len(self._entries) > PER_STATE_LIMIT:
                self._entries.popitem(last=False)
