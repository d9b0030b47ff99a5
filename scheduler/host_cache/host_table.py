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
import datetime
import math

from oslo_log import log as logging
import numpy as np

from scheduler import conf
from scheduler.host_cache import host_instances
from scheduler.host_cache import host_state
from scheduler.host_cache import host_table_per_state as per_state

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The HostState attributes a request may name, under Nova's names: the
# ComputeCapabilitiesFilter's extra specs and the JsonFilter's
# ``$variables`` read these and nothing else (no methods, nothing private;
# the JsonFilter also reads the service's json_query.SERVICE_FIELDS).
PUBLIC_ATTRIBUTES = frozenset(host_state.HostState.NODE_FIELDS) | frozenset([
    'hypervisor_hostname', 'free_ram_mb', 'free_disk_mb', 'disk_mb_used',
    'vcpus_free', 'num_io_ops', 'failed_builds', 'availability_zone',
    'service_disabled', 'disabled_reason', 'cpu_info', 'numa_topology'])

# Numeric HostState attribute -> the column that holds it, row for row.
ATTRIBUTE_COLUMNS = {
    'vcpus_total': 'vcpus_total', 'vcpus_used': 'vcpus_used',
    'reserved_vcpus': 'reserved_vcpus', 'cpu_allocation_ratio': 'cpu_ratio',
    'total_usable_ram_mb': 'ram_total', 'memory_mb_used': 'ram_used',
    'reserved_memory_mb': 'reserved_ram', 'ram_allocation_ratio': 'ram_ratio',
    'total_usable_disk_gb': 'disk_total', 'local_gb_used': 'disk_used',
    'reserved_disk_gb': 'reserved_disk', 'disk_allocation_ratio': 'disk_ratio',
    'num_instances': 'num_instances', 'io_workload': 'io_workload',
    'num_io_ops': 'io_workload', 'free_ram_mb': 'free_ram_mb',
    'free_disk_mb': 'free_disk_mb', 'vcpus_free': 'vcpus_free',
}

# Column name -> (HostState attribute, dtype). Rows of every column align
# with HostTable.states.
_BASE_COLUMNS = {
    'ids': ('id', np.int64),
    'mapped': ('mapped', np.bool_),
    'vcpus_total': ('vcpus_total', np.int64),
    'reserved_vcpus': ('reserved_vcpus', np.int64),
    'cpu_ratio': ('cpu_allocation_ratio', np.float64),
    'ram_total': ('total_usable_ram_mb', np.int64),
    'reserved_ram': ('reserved_memory_mb', np.int64),
    'ram_ratio': ('ram_allocation_ratio', np.float64),
    'disk_total': ('total_usable_disk_gb', np.int64),
    'reserved_disk': ('reserved_disk_gb', np.int64),
    'disk_ratio': ('disk_allocation_ratio', np.float64),
    'vcpus_used': ('vcpus_used', np.int64),
    'ram_used': ('memory_mb_used', np.int64),
    'disk_used': ('local_gb_used', np.int64),
    'num_instances': ('num_instances', np.int64),
    'io_workload': ('io_workload', np.int64),
}
_SERVICE_COLUMNS = ('has_service', 'disabled', 'forced_down', 'heartbeat_us')
# resource -> (total, used, reserved, ratio) column names
_RESOURCE_COLUMNS = {
    'vcpus': ('vcpus_total', 'vcpus_used', 'reserved_vcpus', 'cpu_ratio'),
    'memory_mb': ('ram_total', 'ram_used', 'reserved_ram', 'ram_ratio'),
    'disk_gb': ('disk_total', 'disk_used', 'reserved_disk', 'disk_ratio'),
}
# Public name of the same, for the filters that redo the capacity sum.
RESOURCE_COLUMNS = _RESOURCE_COLUMNS
# The names a node is known by; a change of any rebuilds the indexes.
_IDENTITY = ('id', 'host', 'nodename', 'availability_zones')


def _service_values(state):
    service = state.service
    if service is None:
        return (False, False, False, host_state.NO_HEARTBEAT)
    if service.alive is not None:
        heartbeat = (host_state.ALIVE if service.alive
                     else host_state.NO_HEARTBEAT)
    else:
        heartbeat = host_state.to_microseconds(
            host_state.last_heartbeat(service))
    return (True, bool(service.disabled), bool(service.forced_down),
            heartbeat)


def _columns_of(states):
    """``{column name: array}`` of the base and service columns."""
    columns = {}
    for name, (attr, dtype) in _BASE_COLUMNS.items():
        columns[name] = np.fromiter(
            (getattr(state, attr) for state in states), dtype=dtype,
            count=len(states))
    columns.update(_hardware_columns(states))
    service_values = [_service_values(state) for state in states]
    for position, name in enumerate(_SERVICE_COLUMNS):
        dtype = np.int64 if name == 'heartbeat_us' else np.bool_
        columns[name] = np.fromiter(
            (values[position] for values in service_values), dtype=dtype,
            count=len(states))
    return columns


# update_in_place compares and writes this many rows or fewer one by one.
_ROW_BY_ROW = 8

# How many in-place writes a table remembers the rows of (see
# HostTable.rows_written_since), and how many columns' constancy it keeps.
_WRITE_LOG = 32
_CONSTANTS = 64


def _row_values(state):
    """``[(column name, value)]`` of one state: its row of
    :func:`_columns_of`."""
    values = [(name, getattr(state, attr))
              for name, (attr, _dtype) in _BASE_COLUMNS.items()]
    values.extend(_least_values(state))
    values.append(('pci_free', state.free_pci_devices
                   if state.pci_device_pools else 0))
    values.extend(zip(_SERVICE_COLUMNS, _service_values(state)))
    return values


# What a claim's reservation changes in a state (HostState.consumed without
# hardware): the attributes, and the (column, attribute) pairs they fill.
CLAIM_ATTRIBUTES = frozenset(['vcpus_used', 'memory_mb_used',
                              'local_gb_used', 'disk_available_least',
                              'num_instances', 'io_workload'])
_CLAIM_COLUMNS = tuple((name, attr)
                       for name, (attr, _dtype) in _BASE_COLUMNS.items()
                       if attr in CLAIM_ATTRIBUTES)


def _claim_row_values(state):
    """The part of :func:`_row_values` that :data:`CLAIM_ATTRIBUTES`
    fill."""
    values = [(name, getattr(state, attr)) for name, attr in _CLAIM_COLUMNS]
    values.extend(_least_values(state))
    return values


def _least_values(state):
    """The free-disk columns' values of one state (see
    :func:`_hardware_columns`)."""
    least = state.disk_available_least
    return (('has_disk_least', least is not None),
            ('disk_least_gb', least or 0))


class _Scalars:
    """NumPy's ``floor``, ``where`` and ``minimum`` on Python numbers, as
    the derived columns use them (see :data:`_DERIVED`): a row written
    alone is computed on its Python values, with the same float64
    operations in the same order, at a fraction of NumPy's cost per
    call on scalars."""

    @staticmethod
    def floor(value):
        # math.floor refuses inf and NaN; np.floor keeps them (and -0.0).
        if value != value or value in (math.inf, -math.inf) or not value:
            return value
        return float(math.floor(value))

    @staticmethod
    def where(condition, first, second):
        return first if condition else second

    @staticmethod
    def minimum(first, second):
        # np.minimum: NaN if either is; the second of two equal ones.
        return first if first < second or first != first else second


class _RowValues(dict):
    """One row's Python values of the columns, read as asked for."""

    __slots__ = ('_columns', '_row')

    def __init__(self, columns, row):
        super().__init__()
        self._columns = columns
        self._row = row

    def __missing__(self, name):
        value = self[name] = self._columns[name].item(self._row)
        return value


def _free_disk_gb(c, xp):
    free = c['disk_total'] - c['reserved_disk'] - c['disk_used']
    return xp.where(c['has_disk_least'],
                    xp.minimum(free, c['disk_least_gb']), free)


def _hardware_columns(states):
    """``has_disk_least``, ``disk_least_gb`` (0 where not reported) and
    ``pci_free``; most hosts report no PCI pools."""
    least = [state.disk_available_least for state in states]
    return {
        'has_disk_least': np.fromiter(
            (value is not None for value in least), dtype=np.bool_,
            count=len(states)),
        'disk_least_gb': np.fromiter(
            (value or 0 for value in least), dtype=np.int64,
            count=len(states)),
        'pci_free': np.fromiter(
            (state.free_pci_devices if state.pci_device_pools else 0
             for state in states), dtype=np.int64, count=len(states)),
    }


def _capacity(resource):
    total, _used, reserved, ratio = _RESOURCE_COLUMNS[resource]
    # Same operations, same order as claims.capacity_expression.
    return ((total, ratio, reserved),
            lambda c, xp: c[total] * c[ratio] - c[reserved])


def _room(resource):
    total, used, reserved, ratio = _RESOURCE_COLUMNS[resource]
    # An amount of whole units fits where used + amount <= capacity, that
    # is where floor(capacity) - used >= amount: integers, exact in
    # float64 below 2**53 (NaN and infinite capacities compare alike).
    return ((total, ratio, reserved, used),
            lambda c, xp: xp.floor(c[total] * c[ratio] - c[reserved])
            - c[used])


def _least_disk_room(c, xp):
    return xp.where(c['has_disk_least'],
                    c['disk_total'] * c['disk_ratio']
                    - (c['disk_total'] - c['disk_least_gb']),
                    np.inf)


_DISK_ROOM = _room('disk_gb')

# Derived column -> (the columns it is computed from, how). ``how`` takes
# the input columns and the module of ``floor``, ``where`` and
# ``minimum``: NumPy for arrays, _Scalars for the Python values of a row.
_DERIVED = {
    'candidates': (('mapped', 'has_service'),
                   lambda c, xp: c['mapped'] & c['has_service']),
    'capacity_vcpus': _capacity('vcpus'),
    'capacity_memory_mb': _capacity('memory_mb'),
    'capacity_disk_gb': _capacity('disk_gb'),
    'free_ram_mb': (('ram_total', 'reserved_ram', 'ram_used'),
                    lambda c, xp: c['ram_total'] - c['reserved_ram']
                    - c['ram_used']),
    'free_disk_mb': (('disk_total', 'reserved_disk', 'disk_used',
                      'has_disk_least', 'disk_least_gb'),
                     lambda c, xp: _free_disk_gb(c, xp) * 1024),
    # DiskFilter's disk_available_least bound, infinite where a host
    # reports none: the operations of filters.free_disk.room, in its order.
    'least_disk_room': (('disk_total', 'disk_ratio', 'has_disk_least',
                         'disk_least_gb'), _least_disk_room),
    # Whole units of each resource a claim may still take (see _room),
    # and of disk with DiskFilter's least-disk bound too.
    'room_vcpus': _room('vcpus'),
    'room_memory_mb': _room('memory_mb'),
    'room_disk_gb': _DISK_ROOM,
    'disk_filter_room': (
        _DISK_ROOM[0] + ('has_disk_least', 'disk_least_gb'),
        lambda c, xp: xp.minimum(_DISK_ROOM[1](c, xp),
                                 xp.floor(_least_disk_room(c, xp)))),
    'vcpus_free': (('vcpus_total', 'cpu_ratio', 'reserved_vcpus',
                    'vcpus_used'),
                   lambda c, xp: (c['vcpus_total'] * c['cpu_ratio']
                                  - c['reserved_vcpus']) - c['vcpus_used']),
}


def now_us_utc():
    """Now, in the microseconds of the ``heartbeat_us`` column."""
    return host_state.to_microseconds(
        datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None))


class HostTable:
    """HostStates plus aligned NumPy columns.

    Columns (all of length ``len(states)``): ``ids``, ``mapped``,
    ``candidates`` (mapped and with a compute service: what the scheduler
    may pick), ``has_service``, ``disabled``, ``forced_down``,
    ``heartbeat_us``, ``az_index``, per resource ``used[r]`` (int) and
    ``capacity[r]`` (float), ``free_ram_mb``, ``free_disk_mb``,
    ``vcpus_free``, ``num_instances``, ``io_workload``,
    ``disk_least_gb`` (0 where ``has_disk_least`` is False: not
    reported) and ``pci_free`` (free PCI devices).
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
        for name, (inputs, compute) in _DERIVED.items():
            if previous is None:
                self.derived[name] = compute(columns, np)
            elif changed.isdisjoint(inputs):
                self.derived[name] = previous.derived[name]
            else:
                # Only ``rows`` changed: compute those, copy the rest.
                column = previous.derived[name].copy()
                column[rows] = compute({key: columns[key][rows]
                                        for key in inputs}, np)
                self.derived[name] = column
            setattr(self, name, self.derived[name])
        self.capacity = {resource: self.derived['capacity_' + resource]
                         for resource in host_state.RESOURCES}
        self.used = {resource: columns[names[1]]
                     for resource, names in _RESOURCE_COLUMNS.items()}
        if previous is not None:
            # Zones, aggregates and host names did not change: the caches
            # derived from them still hold.
            self._az_masks = previous._az_masks
            self._multipliers = previous._multipliers
        else:
            self._az_masks = {}
            self._multipliers = {}
        # Values computed from each HostState on demand (state_column,
        # grouped); replace() carries them over, recomputing changed rows.
        self._per_state = per_state.Cache()
        # ((write number, rows, names of the columns changed), ...) of the
        # last in-place writes, oldest first: replaced whole, never
        # changed, so readers need no lock.
        self._write_log = ()
        # id(column) -> (column, value, proof): see constant().
        self._constants = {}
        # The service_up column and how long it holds (_Liveness).
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

    @classmethod
    def build(cls, states, aggregates=()):
        """A table over ``states`` (HostStates) in the given order."""
        states = list(states)
        columns = _columns_of(states)
        indexes = cls._build_indexes(states)
        az_sets = indexes[3]
        az_position = {zones: i for i, zones in enumerate(az_sets)}
        columns['az_index'] = np.fromiter(
            (az_position[state.availability_zones] for state in states),
            dtype=np.int32, count=len(states))
        return cls(states, columns, aggregates, indexes)

    @staticmethod
    def _build_indexes(states):
        row_by_id = {}
        by_host = collections.defaultdict(list)
        by_nodename = None
        az_sets = []
        seen_zones = set()
        for row, state in enumerate(states):
            row_by_id[state.id] = row
            by_host[state.host].append(row)
            if state.nodename != state.host and by_nodename is None:
                # Some node is not named after its host: index the names
                # (the usual case, one node per host named after it,
                # shares the host index).
                by_nodename = collections.defaultdict(list)
                for earlier_row, earlier in enumerate(states[:row]):
                    by_nodename[earlier.nodename].append(earlier_row)
            if by_nodename is not None:
                by_nodename[state.nodename].append(row)
            if state.availability_zones not in seen_zones:
                seen_zones.add(state.availability_zones)
                az_sets.append(state.availability_zones)

        # Tuples of rows (most hosts have one node), one object per
        # distinct tuple: the indexes cost little at 100k hosts.
        shared = {}

        def freeze(mapping):
            frozen = {}
            for key, rows in mapping.items():
                rows = tuple(rows)
                frozen[key] = shared.setdefault(rows, rows)
            return frozen
        rows_by_host = freeze(by_host)
        rows_by_nodename = (rows_by_host if by_nodename is None
                            else freeze(by_nodename))
        return row_by_id, rows_by_host, rows_by_nodename, tuple(az_sets)

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
                   for name in _IDENTITY):
                for position, replacement in new_states.items():
                    states[position] = replacement
                return HostTable.build(states, self.aggregates)
        rows = np.fromiter(new_states, dtype=np.intp, count=len(new_states))
        columns = dict(self.columns)
        changed = []
        for name, values in _columns_of(list(new_states.values())).items():
            if not np.array_equal(columns[name][rows], values):
                column = columns[name].copy()
                column[rows] = values
                columns[name] = column
                changed.append(name)
        table = HostTable(states, columns, self.aggregates, self._indexes,
                          previous=self, changed=changed, rows=rows)
        table._per_state = self._per_state.carried(new_states,
                                                   len(table.states))
        if self._instance_index is not None:
            table._instance_index = self._instance_index.updated(
                self.states, new_states)
        return table

    def consumed(self, row, resources, hardware_request=None):
        """A new table where the node of ``row`` took ``resources``, and
        (``hardware_request``, a :class:`scheduler.hardware.Request`) the
        NUMA cells, pinned CPUs, pages and devices a claim there would
        take (none when it does not fit: the claim decides)."""
        state, _record = self.states[row].reserved(resources,
                                                   hardware_request)
        return self.replace({row: state})

    def detached(self):
        """A copy that shares no array with this table, so that
        :meth:`update_in_place` on this one leaves it alone (for a
        request that accounts for its own instances as it places them).
        """
        columns = {name: column.copy() for name, column in
                   self.columns.items()}
        table = HostTable(list(self.states), columns, self.aggregates,
                          self._indexes)
        table._az_masks = self._az_masks
        table._multipliers = self._multipliers
        table._per_state = self._per_state.carried({}, len(self.states))
        table._instance_index = self._instance_index
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
        :data:`CLAIM_ATTRIBUTES` at most (and in what no column holds,
        such as their instances), as a reservation leaves them: only
        those columns are compared."""
        if not new_states:
            return True
        old_states = {}
        for row, state in new_states.items():
            old = self.states[row]
            if any(getattr(old, name) != getattr(state, name)
                   for name in _IDENTITY):
                return False
            old_states[row] = old
        rows = np.fromiter(new_states, dtype=np.intp, count=len(new_states))
        changed = set()
        if len(new_states) <= _ROW_BY_ROW:
            # A claim changes one row: Python values, no arrays to build.
            values_of = _claim_row_values if claim_only else _row_values
            for row, state in new_states.items():
                for name, value in values_of(state):
                    column = self.columns[name]
                    if column.item(row) != value:
                        column[row] = value
                        changed.add(name)
        else:
            for name, values in _columns_of(
                    list(new_states.values())).items():
                column = self.columns[name]
                if not np.array_equal(column[rows], values):
                    column[rows] = values
                    changed.add(name)
        affected = [(self.derived[name], inputs, compute)
                    for name, (inputs, compute) in _DERIVED.items()
                    if not changed.isdisjoint(inputs)]
        if len(new_states) <= _ROW_BY_ROW:
            # The row's Python values, each read once for all the derived
            # columns: the same float64 operations, without NumPy's cost
            # per call on scalars.
            for row in new_states:
                values = _RowValues(self.columns, row)
                for column, _inputs, compute in affected:
                    column[row] = compute(values, _Scalars)
        else:
            for column, inputs, compute in affected:
                column[rows] = compute(
                    {key: self.columns[key][rows] for key in inputs}, np)
        for row, state in new_states.items():
            self.states[row] = state
        self._per_state.update_rows(new_states)
        if self._instance_index is not None:
            self._instance_index = self._instance_index.updated(
                old_states, new_states)
        # Logged and counted once everything is written: a reader that saw
        # the count before the write began sees it change, and finds the
        # rows in the log.
        self._write_log = self._write_log[1 - _WRITE_LOG:] + (
            (self.writes + 1, rows, frozenset(changed)),)
        self.writes += 1
        return True

    def rows_written_since(self, writes):
        """The rows :meth:`update_in_place` wrote since the table's
        :attr:`writes` count was ``writes`` (an array, a row may repeat),
        or None when the table no longer remembers all of them (it keeps
        the last few writes' rows)."""
        entries = self._log_since(writes)
        return None if entries is None else _rows_of(entries)

    def written_since(self, writes):
        """``(rows, names)``: :meth:`rows_written_since`, and the names
        of the (base) columns whose values those writes changed; None
        when the table no longer remembers them."""
        entries = self._log_since(writes)
        if entries is None:
            return None
        return (_rows_of(entries),
                frozenset().union(*(names for _n, _r, names in entries)))

    def _log_since(self, writes):
        """The write log's entries after ``writes`` (None: forgotten)."""
        # The count first: its write is logged before it is counted.
        if self.writes == writes:
            return ()
        log = self._write_log
        if not log or log[0][0] > writes + 1:
            return None
        return [entry for entry in log if entry[0] > writes]

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
                if rows is not None and bool((column[rows] == value).all()):
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
        index = self._instance_index
        if index is None:
            index = self._instance_index = (
                host_instances.InstanceIndex.build(self.states))
        counts = np.zeros(len(self.states), dtype=np.int64)
        per_host = collections.Counter(
            host for host in map(index.get, set(uuids)) if host is not None)
        for host, count in per_host.items():
            rows = self.rows_by_host.get(host)
            if rows is not None:
                counts[list(rows)] += count
        return counts

    # -- lookups ------------------------------------------------------------

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
            down_time = CONF.service_down_time
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
        column = ATTRIBUTE_COLUMNS.get(name)
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


def _rows_of(entries):
    """The rows of write log ``entries``, as one array."""
    if len(entries) == 1:
        # One write (a claim's): its rows as they are.
        return entries[0][1]
    return np.concatenate([np.empty(0, dtype=np.intp)] + [
        rows for _number, rows, _names in entries])


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
