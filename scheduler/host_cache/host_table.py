"""HostTable: the scheduler's view of all its compute nodes at once.

Each compute node is a :class:`scheduler.host_cache.host_state.HostState`,
under Nova's attribute names (``free_ram_mb``, ``vcpus_total``...); read-only:
consuming resources returns a new HostState.

A :class:`HostTable` is an immutable snapshot of every node: the list of
HostStates plus NumPy columns aligned with it (row ``i`` of every column
describes ``states[i]``), so that a filter or weigher handles all hosts in
a few array operations. Changing a snapshot (:meth:`HostTable.replace`)
builds a new one that shares what did not change, so a request that holds
a snapshot always reads a consistent view::

    table = HostTable.build(states, aggregates)
    fits = table.used['memory_mb'] + 2048 <= table.capacity['memory_mb']
    table = table.replace({row: table.states[row].consumed(resources)})

Capacity is computed as :mod:`scheduler.db.claims` computes it in SQL,
``total * allocation_ratio - reserved``, with the same floating point
operations in the same order, so that a host that passes the capacity
filters only fails its claim if something else took the room first.
"""

import collections
import functools
import operator

import numpy as np

from scheduler.host_cache import host_instances
from scheduler.host_cache import host_placement
from scheduler.host_cache import host_state
from scheduler.host_cache import host_table_per_state as per_state
from scheduler.host_cache import table_columns
from scheduler.host_cache import table_kept
from scheduler.host_cache import table_lookups

# update_in_place compares and writes this many rows or fewer one by one.
_ROW_BY_ROW = 8

# How many in-place writes back HostTable.rows_written_since answers
# about (further back, the caller's own full pass costs less than the
# rows written since), and how many columns' constancy a table keeps.
_WRITE_LOG = 32
# Rows few enough to read one by one rather than as an array (see
# _all_equal).
_FEW_ROWS = 16
# How many in-place writes a table remembers the rows of at least (up to
# twice as many), for callers that ask further back: a request for
# several instances catches its private table up from the log (see
# private_tables), where a full pass is a copy of every host. At 10,000
# hosts under pack, 32 writes were outrun by one such request in 25.
WRITE_LOG_KEPT = 256
_CONSTANTS = 64
_IDENTITY_OF = operator.attrgetter(*table_columns.IDENTITY)
_ID = operator.attrgetter('id')
_HOST = operator.attrgetter('host')
_NODENAME = operator.attrgetter('nodename')
_ZONES = operator.attrgetter('availability_zones')


@functools.lru_cache(maxsize=64)
def _affected(changed):
    """``[(name, inputs, compute)]`` of the derived columns computed
    from any of the (base) columns ``changed``, a frozenset: the same few
    sets come back write after write."""
    return tuple((name, inputs, compute)
                 for name, (inputs, compute) in table_columns.DERIVED.items()
                 if not changed.isdisjoint(inputs))


class RowIndex(dict):
    """``{name: tuple of rows}``, as a dict, but a name with one row is
    held as that row alone and made a 1-tuple when it is asked for: a
    million hosts of one node each, a 1-tuple (48 bytes) a host less.
    Its ``get``, ``[]``, ``items()``, ``values()`` and ``==`` see tuples."""

    __slots__ = ()

    def __getitem__(self, name):
        rows = dict.__getitem__(self, name)
        return (rows,) if rows.__class__ is int else rows

    def get(self, name, default=None):
        rows = dict.get(self, name, _ABSENT)
        if rows is _ABSENT:
            return default
        return (rows,) if rows.__class__ is int else rows

    def values(self):
        return [(rows,) if rows.__class__ is int else rows
                for rows in dict.values(self)]

    def items(self):
        return [(name, (rows,) if rows.__class__ is int else rows)
                for name, rows in dict.items(self)]

    def __eq__(self, other):
        if not isinstance(other, dict):
            return NotImplemented
        return dict(self.items()) == dict(
            other.items() if isinstance(other, RowIndex) else other)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None


_ABSENT = object()


class HostTable(table_lookups.Lookups, table_kept.Kept):
    """HostStates plus aligned NumPy columns.

    Columns (all of length ``len(states)``): ``ids``, ``mapped``,
    ``candidates`` (mapped and with a compute service: what the scheduler
    may pick), ``has_service``, ``disabled``, ``forced_down``,
    ``heartbeat_us``, ``az_index``, per resource ``used[r]`` (int) and
    ``capacity[r]`` (float), ``free_ram_mb``, ``free_disk_mb``,
    ``vcpus_free``, ``num_instances``, ``io_workload``,
    ``disk_least_gb`` (0 where ``has_disk_least`` is False: not
    reported) and ``pci_free`` (free PCI devices). :attr:`placement`:
    the rows as Placement's providers (root ``t`` is row ``t``).
    Never write into a column: build a new table with :meth:`replace`,
    or (the table's owner only) use :meth:`update_in_place`.
    """

    # Instance uuid -> host, built when first asked for (instance_counts)
    # and carried over by replace().
    _instance_index = None
    # How many times update_in_place wrote into this table: with the
    # table's identity, what a ranking made earlier depends on (see
    # scheduler.drivers.ahead).
    writes = 0
    # The table's providers (see placement): None until first asked for,
    # a host_placement.Deferred when derived from a parent's.
    _placement = None

    def __init__(self, states, columns, aggregates, indexes=None,
                 previous=None, changed=(), rows=None):
        self.states = states
        self.aggregates = tuple(aggregates)
        self.columns = columns
        for name, column in columns.items():
            setattr(self, name, column)
        if indexes is None:
            indexes = self._build_indexes(states)
        (self.row_by_id, self.rows_by_host, self.rows_by_nodename,
         self.az_sets) = indexes
        self._indexes = indexes
        self._rows_by_host_lower = None
        changed = set(changed)
        self.derived = {}
        for name, (inputs, compute) in table_columns.DERIVED.items():
            if previous is None:
                self.derived[name] = table_columns.derive(name, columns,
                                                          len(states))
            elif changed.isdisjoint(inputs):
                self.derived[name] = previous.derived[name]
            else:
                # Only ``rows`` changed: compute those, copy the rest.
                column = previous.derived[name].copy()
                column[rows] = compute({key: columns[key][rows]
                                        for key in inputs},
                                       table_columns.Arrays)
                self.derived[name] = column
            setattr(self, name, self.derived[name])
        self.capacity = {resource: self.derived['capacity_' + resource]
                         for resource in host_state.RESOURCES}
        self.used = {resource: columns[names[1]] for resource, names
                     in table_columns.RESOURCE_COLUMNS.items()}
        if previous is not None:
            # Zones, aggregates and host names did not change: the caches
            # derived from them still hold.
            self._az_masks = previous._az_masks
            self._az_rows = previous._az_rows
            self._multipliers = previous._multipliers
        else:
            self._az_masks = {}
            self._az_rows = {}
            self._multipliers = {}
        # Values computed from each HostState on demand (state_column,
        # grouped); replace() carries them over, recomputing changed rows.
        self._per_state = per_state.Cache()
        # ((write number, rows, names of the columns changed), ...) of the
        # last in-place writes, oldest first: the writer (the owner, see
        # update_in_place) appends to it and replaces it whole when it
        # trims it, and a reader takes a slice of it (one operation under
        # the GIL), so readers need no lock.
        self._write_log = []
        # id(column) -> (column, value, proof): see constant().
        self._constants = {}
        # What table_kept.Kept keeps (at_least, nonzero_rows).
        self._at_least = {}
        self._nonzero = {}
        # The service_up column and how long it holds
        # (table_lookups._Liveness).
        self._liveness = None

    def __len__(self):
        return len(self.states)

    @property
    def rows_by_host_lower(self):
        """``rows_by_host`` keyed by lower-case host name (built when
        first asked for: only case-insensitive host lists use it)."""
        index = self._rows_by_host_lower
        if index is None:
            merged = collections.defaultdict(tuple)
            for host, rows in self.rows_by_host.items():
                merged[host.lower()] += rows
            index = self._rows_by_host_lower = {
                host: tuple(sorted(rows)) for host, rows in merged.items()}
        return index

    @property
    def placement(self):
        """The table as Placement's providers, a
        :class:`scheduler.resources.candidates.ProviderTable` whose root
        ``t`` is row ``t`` (see :mod:`scheduler.host_cache.host_placement`):
        built when first asked for and kept; a table derived from this
        one derives its own from it."""
        with host_placement.LOCK:
            found, writes = self._placement, self.writes
        if found is not None and not isinstance(found,
                                                host_placement.Deferred):
            return found
        placement = (host_placement.build(self) if found is None
                     else found.resolve())
        with host_placement.LOCK:
            # Kept unless the owner wrote rows meanwhile (it derived its
            # own from what it found).
            if self._placement is found and self.writes == writes:
                self._placement = placement
        return placement

    @classmethod
    def build(cls, states, aggregates=()):
        """A table over ``states`` (HostStates) in the given order."""
        return cls._built(list(states), aggregates, False)

    @classmethod
    def build_by_zone(cls, states, aggregates=()):
        """A table over ``states`` with the rows of each set of zones
        together, in the order the sets first appear, each in the given
        order. Which row a node is in tells nothing (ties are broken by
        node, see :mod:`scheduler.drivers.ranking`), but a request for a
        zone then reads its hosts' values from one stretch of each
        column rather than from every part of it: at a million hosts in
        four zones whose nodes alternate by id, gathering the weighers'
        values took 0.8 ms a weigher, 0.4 ms of it waiting on memory
        (issue 53)."""
        return cls._built(list(states), aggregates, True)

    @classmethod
    def _built(cls, states, aggregates, by_zone):
        zones = list(map(_ZONES, states))
        az_sets = tuple(dict.fromkeys(zones))
        az_position = {zone_set: i for i, zone_set in enumerate(az_sets)}
        az_index = np.fromiter(map(az_position.__getitem__, zones),
                               dtype=np.int32, count=len(states))
        # Read from the states in the given order (a first load's: the
        # order they were made in, so each pass reads memory in order),
        # then put in the table's.
        columns = {name: _stored(name, column) for name, column in
                   table_columns.columns_of(states).items()}
        given = rows = None
        if by_zone and len(az_sets) > 1 and \
                bool((az_index[1:] < az_index[:-1]).any()):
            # Stable: each zone's rows in the given order. The indexes
            # read the names from the states in the given order too, with
            # the row each goes to (in zone order, reading them took 1.5 s
            # at a million hosts, in the given order 0.8 s).
            order = np.argsort(az_index, kind='stable')
            where = np.empty(len(order), dtype=np.intp)
            where[order] = np.arange(len(order))
            given, rows = states, where.tolist()
            states = list(map(states.__getitem__, order.tolist()))
            az_index = az_index[order]
            columns = {name: (column if table_columns.is_held_once(column)
                              else column[order])
                       for name, column in columns.items()}
        columns['az_index'] = az_index
        indexes = cls._build_indexes(states, az_sets, given, rows)
        return cls(states, columns, aggregates, indexes)

    @staticmethod
    def _build_indexes(states, az_sets=None, given=None, rows=None):
        """The row indexes of ``states``, read from ``given`` (the same
        states in another order; default ``states``) whose row in the
        table each of ``rows`` is."""
        # Whole lists at a time (dict(zip(...)) runs in C: 0.3 s at a
        # million hosts, where a loop over the states took 1.5 s).
        if given is None:
            given, rows = states, list(range(len(states)))
        row_by_id = dict(zip(map(_ID, given), rows))
        hosts = list(map(_HOST, given))
        nodenames = list(map(_NODENAME, given))
        # A name with several rows holds them as a tuple (ascending), one
        # object per distinct tuple, shared by both indexes; a name with
        # one row (most hosts have one node) holds the row alone (see
        # RowIndex).
        shared = {}

        def index(names):
            found = RowIndex(zip(names, rows))
            if len(found) == len(names):
                # Every name once (a later row would have replaced an
                # earlier one of the same name).
                return found
            grouped = collections.defaultdict(list)
            for row, name in zip(rows, names):
                grouped[name].append(row)
            frozen = RowIndex()
            for name, named_rows in grouped.items():
                if len(named_rows) == 1:
                    frozen[name] = named_rows[0]
                else:
                    named_rows = tuple(sorted(named_rows))
                    frozen[name] = shared.setdefault(named_rows, named_rows)
            return frozen
        rows_by_host = index(hosts)
        # The usual case, every node named after its host, shares the
        # host index.
        rows_by_nodename = (rows_by_host if nodenames == hosts
                            else index(nodenames))
        if az_sets is None:
            az_sets = tuple(dict.fromkeys(map(_ZONES, states)))
        return row_by_id, rows_by_host, rows_by_nodename, az_sets

    def replace(self, new_states):
        """A new table with ``{row: HostState}`` replaced.

        Only the columns that change are copied, and the derived ones
        are computed for the replaced rows only. Falls back to a full
        build when a replaced node changed its identity (id, host, node
        name or zones).
        """
        if not new_states:
            return self
        states = list(self.states)
        for row, state in new_states.items():
            old = states[row]
            states[row] = state
            if any(getattr(old, name) != getattr(state, name)
                   for name in table_columns.IDENTITY):
                for position, replacement in new_states.items():
                    states[position] = replacement
                return HostTable.build(states, self.aggregates)
        rows = np.fromiter(new_states, dtype=np.intp, count=len(new_states))
        columns = dict(self.columns)
        changed = []
        for name, values in table_columns.columns_of(
                list(new_states.values())).items():
            if not np.array_equal(columns[name][rows], values):
                column = table_columns.writable(columns[name], values)
                column[rows] = values
                columns[name] = column
                changed.append(name)
        table = HostTable(states, columns, self.aggregates, self._indexes,
                          previous=self, changed=changed, rows=rows)
        table._per_state = self._per_state.carried(new_states,
                                                   len(table.states))
        table._placement = host_placement.derived(
            self._placement, self.states, new_states)
        if self._instance_index is not None:
            table._instance_index = self._instance_index.updated(
                self.states, new_states)
        return table

    def consumed(self, row, resources, hardware_request=None, extra=None):
        """A new table where the node of ``row`` took ``resources``, and
        (``hardware_request``, a :class:`scheduler.hardware.Request`) the
        NUMA cells, pinned CPUs, pages and devices a claim there would
        take (none when it does not fit: the claim decides), and
        ``extra`` (``{resource class: amount}``) of its other classes."""
        state, _record = self.states[row].reserved(resources,
                                                   hardware_request, extra)
        return self.replace({row: state})

    def warm_like(self, other):
        """Compute now the values per HostState (:meth:`state_column`,
        :meth:`grouped`) that ``other``, the table this one replaces,
        was asked for; called on a table just built and not yet shared
        (a full read's, built off the lock), so that requests do not
        wait for them. A table whose rows were written must not be
        given this."""
        if other is not None:
            self._per_state = other._per_state.rebuilt(self.states)

    def detached(self):
        """A copy that shares no array with this table, so that
        :meth:`update_in_place` on this one leaves it alone (for a
        request that accounts for its own instances as it places them).
        """
        # A column held once is read-only: shared, each table makes its
        # own whole when it writes a row of it.
        columns = {name: (column if table_columns.is_held_once(column)
                          else column.copy())
                   for name, column in self.columns.items()}
        table = HostTable(list(self.states), columns, self.aggregates,
                          self._indexes)
        table._az_masks = self._az_masks
        table._az_rows = self._az_rows
        table._multipliers = self._multipliers
        table._per_state = self._per_state.carried({}, len(self.states))
        table._instance_index = self._instance_index
        table._placement = self._placement
        return table

    def update_in_place(self, new_states, claim_only=False):
        """Put ``{row: HostState}`` in this table itself, its columns,
        derived columns and per-state values written row by row: the
        cost of a claim is that of the rows it changes, not of the
        hosts. Only the owner of the table (the HostManager, under its
        lock) calls this, for states of the same nodes (same identity);
        requests reading the table meanwhile may see the new rows, which
        is what an assumed claim is for. Tables derived from this one
        that share an unchanged column see it too. Returns False (and
        changes nothing) when a state changed its identity: use
        :meth:`replace`.

        ``claim_only``: the new states differ from the old ones in
        :data:`table_columns.CLAIM_ATTRIBUTES` at most (and in what no
        column holds, such as their instances), as a reservation leaves
        them: only those columns are compared."""
        if not new_states:
            return True
        old_states = {}
        for row, state in new_states.items():
            old = self.states[row]
            if _IDENTITY_OF(old) != _IDENTITY_OF(state):
                return False
            old_states[row] = old
        rows = np.fromiter(new_states, dtype=np.intp, count=len(new_states))
        changed = set()
        if len(new_states) <= _ROW_BY_ROW:
            # A claim changes one row: Python values, no arrays to build.
            values_of = (table_columns.claim_row_values if claim_only
                         else table_columns.row_values)
            whole = table_columns.ALWAYS_WHOLE
            for row, state in new_states.items():
                for name, value in values_of(state):
                    column = self.columns[name]
                    if column.item(row) != value:
                        # A claim's usage: whole, int32 or int64.
                        if name in whole and table_columns.fits(column,
                                                                value):
                            column[row] = value
                        else:
                            self._whole(name, value)[row] = value
                        changed.add(name)
        else:
            for name, values in table_columns.columns_of(
                    list(new_states.values())).items():
                column = self.columns[name]
                if not np.array_equal(column[rows], values):
                    self._whole(name, values)[rows] = values
                    changed.add(name)
        affected = _affected(frozenset(changed))
        if len(new_states) <= _ROW_BY_ROW:
            # The row's Python values, each read once for all the derived
            # columns: the same float64 operations, without NumPy's cost
            # per call on scalars.
            whole = table_columns.ALWAYS_WHOLE
            for row in new_states:
                values = table_columns.RowValues(self.columns, row)
                for name, _inputs, compute in affected:
                    value = compute(values, table_columns.Scalars)
                    column = self.derived[name]
                    # A derived column: float64 or int64, whole or held
                    # once.
                    if name in whole or column.flags.writeable:
                        column[row] = value
                    elif column.item(row) != value:
                        self._whole(name, value)[row] = value
        else:
            for name, inputs, compute in affected:
                values = compute(
                    {key: self.columns[key][rows] for key in inputs},
                    table_columns.Arrays)
                column = self.derived[name]
                if column.flags.writeable or not np.array_equal(
                        column[rows], values):
                    self._whole(name, values)[rows] = values
        self._rows_written(rows, old_states, new_states, changed)
        return True

    def copy_rows_from(self, source, rows, names=None):
        """Put the rows ``rows`` (ascending) of ``source`` in this table
        itself, as :meth:`update_in_place` puts states: ``source`` is a
        table of the same nodes row for row (the table this one was
        detached from, written in place since), whose columns and derived
        columns hold what this one would compute from its states, and
        are copied, every row at once. ``names``: the (base) columns
        that may differ at those rows (None: any); the derived columns
        computed from none of them are left. Only the table's owner
        calls this. Returns False (and changes nothing) when a state
        changed its identity there."""
        if not len(rows):
            return True
        old_states, new_states = {}, {}
        for row in rows:
            old, state = self.states[row], source.states[row]
            if _IDENTITY_OF(old) != _IDENTITY_OF(state):
                return False
            old_states[row] = old
            new_states[row] = state
        index = np.fromiter(new_states, dtype=np.intp, count=len(new_states))
        changed = set()
        for name in self.columns if names is None else names:
            values = source.columns[name][index]
            if (self.columns[name][index] != values).any():
                self._whole(name, values)[index] = values
                changed.add(name)
        for name, _inputs, _compute in _affected(frozenset(changed)):
            values = source.derived[name][index]
            column = self.derived[name]
            if column.flags.writeable or (column[index] != values).any():
                self._whole(name, values)[index] = values
        self._rows_written(index, old_states, new_states, changed)
        return True

    def _rows_written(self, rows, old_states, new_states, changed):
        """The rest of an in-place write of ``new_states`` (``{row:
        HostState}``, in place of ``old_states``) whose columns are
        written: the states, the values kept per state, the instance
        index, the write log and count, the placement view."""
        for row, state in new_states.items():
            self.states[row] = state
        self._per_state.update_rows(new_states)
        if self._instance_index is not None:
            self._instance_index = self._instance_index.updated(
                old_states, new_states)
        # Logged and counted once everything is written: a reader that saw
        # the count before the write began sees it change, and finds the
        # rows in the log.
        entry = (self.writes + 1, rows, frozenset(changed))
        log = self._write_log
        if len(log) < 2 * WRITE_LOG_KEPT:
            log.append(entry)
        else:
            # A new list: a reader holding the old one reads it as it was.
            self._write_log = log[-WRITE_LOG_KEPT:] + [entry]
        self.writes += 1
        # After the count: a placement built from rows read before it is
        # not kept (see placement).
        with host_placement.LOCK:
            self._placement = host_placement.derived(
                self._placement, old_states, new_states)

    def _whole(self, name, values):
        """Column ``name`` (base or derived) as an array of this table's
        own it may write ``values`` into: a column held once (see
        :func:`table_columns.held_once`) is made whole first, and an
        int32 one that they do not fit made int64 (see
        :func:`table_columns.narrowed`), in place of the column
        (requests holding it read what it held)."""
        derived = name in self.derived
        column = self.derived[name] if derived else self.columns[name]
        if column.flags.writeable and table_columns.fits(column, values):
            return column
        column = table_columns.writable(column, values)
        if derived:
            self.derived[name] = column
            if name.startswith('capacity_'):
                self.capacity[name[len('capacity_'):]] = column
        else:
            self.columns[name] = column
        setattr(self, name, column)
        return column

    def rows_written_since(self, writes):
        """The rows :meth:`update_in_place` wrote since the table's
        :attr:`writes` count was ``writes`` (an array, a row may repeat),
        or None when that was more than the last few writes ago."""
        entries = self._log_since(writes, _WRITE_LOG)
        return None if entries is None else _rows_of(entries)

    def written_since(self, writes, back=_WRITE_LOG):
        """``(rows, names)``: :meth:`rows_written_since`, and the names
        of the (base) columns whose values those writes changed; None
        when that was more than ``back`` writes ago (at most
        :data:`WRITE_LOG_KEPT`) or the table no longer remembers them."""
        entries = self._log_since(writes, back)
        if entries is None:
            return None
        return (_rows_of(entries),
                frozenset().union(*(names for _n, _r, names in entries)))

    def _log_since(self, writes, back):
        """The write log's entries after ``writes`` (None: forgotten, or
        more than ``back`` of them)."""
        # The count first: its write is logged before it is counted.
        if self.writes == writes:
            return ()
        log = self._write_log
        if not log or log[0][0] > writes + 1 or log[-1][0] - writes > back:
            return None
        # The entries' counts follow one another from the first's.
        return log[writes + 1 - log[0][0]:]

    # -- facts kept while the table is written in place ----------------------

    def constant(self, column):
        """The value every element of ``column`` holds, or None: two
        differ (NaN differs from itself, as in
        :func:`scheduler.weights.constant`) or it is empty.

        ``column`` is one of this table's columns, derived columns or
        :meth:`state_column` columns, written in place only by
        :meth:`update_in_place`. The answer is kept with its proof: two
        rows that differ, or the count of writes it was found at, so that
        a later call checks those two rows, or the rows written since,
        instead of the whole column.
        """
        if not len(column):
            return None
        key = id(column)
        entry = self._constants.get(key)
        if entry is not None and entry[0] is column:
            _column, value, proof = entry
            if value is None:
                first, other = proof
                if column[first] != column[other]:
                    return None
            else:
                writes = self.writes
                rows = self.rows_written_since(proof)
                if rows is not None and _all_equal(column, rows, value):
                    self._constants[key] = (column, value, writes)
                    return value
        writes = self.writes
        differs = column != column[0]
        if differs.any():
            value, proof = None, (0, int(differs.argmax()))
        else:
            value, proof = column[0].item(), writes
        constants = self._constants
        if len(constants) >= _CONSTANTS:
            # Columns built and dropped: start again (a new dict, for the
            # readers holding the old one).
            constants = self._constants = {}
        constants[key] = (column, value, proof)
        return value

    # -- instances on the hosts (see host_cache.host_instances) ------------

    def instance_counts(self, uuids):
        """Column: how many of the instances ``uuids`` each row's host
        runs (``len(set(uuids) & state.instances.keys())`` per row)."""
        counts = np.zeros(len(self.states), dtype=np.int64)
        rows = self.instance_rows(uuids)
        if rows:
            counts[list(rows)] = list(rows.values())
        return counts

    def instance_rows(self, uuids):
        """``{row: count}``: the rows whose host runs any of the
        instances ``uuids``, and how many (:meth:`instance_counts`
        without the rows of 0: a server group's few hosts, not a column
        of every host)."""
        index = self._instance_index
        if index is None:
            index = self._instance_index = (
                host_instances.InstanceIndex.build(self.states))
        per_host = collections.Counter(
            host for host in map(index.get, set(uuids)) if host is not None)
        found = {}
        for host, count in per_host.items():
            for row in self.rows_by_host.get(host, ()):
                found[row] = count
        return found


def _stored(name, column):
    """A full build's column ``name`` as the table holds it: held once
    where every row agrees (see :func:`table_columns.held_once`), int32
    where it may be and every value fits."""
    if name not in table_columns.ALWAYS_WHOLE:
        column = table_columns.held_once(column)
    if name in table_columns.NARROWED and \
            not table_columns.is_held_once(column):
        column = table_columns.narrowed(column)
    return column


def _all_equal(column, rows, value):
    """Whether ``column`` holds ``value`` (a number, not NaN) at every
    one of ``rows``: the few rows a claim or two wrote read one by one
    (NumPy's gather and comparison cost more than that below a few
    dozen), more as arrays."""
    if len(rows) <= _FEW_ROWS:
        item = column.item
        return all(item(row) == value for row in rows.tolist())
    return bool((column[rows] == value).all())


def _rows_of(entries):
    """The rows of write log ``entries``, as one array."""
    if len(entries) == 1:
        # One write (a claim's): its rows as they are.
        return entries[0][1]
    return np.concatenate([np.empty(0, dtype=np.intp)] + [
        rows for _number, rows, _names in entries])

