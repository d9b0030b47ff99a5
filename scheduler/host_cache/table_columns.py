"""The columns of a HostTable: which HostState attribute fills which
NumPy column, and the columns derived from them.

:func:`columns_of` lays HostStates out as columns (row ``i`` of each is
``states[i]``); :data:`DERIVED` says how each derived column (capacities,
free amounts, what a claim may still take) is computed from them, as
:mod:`scheduler.db.claims` computes it in SQL. A table computes a derived
column over arrays with NumPy (:class:`Arrays`), or over one row's Python
values with :class:`Scalars`, with the same float64 operations in the
same order::

    columns = columns_of(states)
    inputs, compute = DERIVED['free_ram_mb']
    free = compute(columns, Arrays)
"""

import math
import operator

import numpy as np

from scheduler.host_cache import host_state

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
IDENTITY = ('id', 'host', 'nodename', 'availability_zones')


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


# Where each attribute held in a HostState's profile tuple is in it.
_IN_PROFILE = {name: index
               for index, name in enumerate(host_state.PROFILE_FIELDS)}
_PROFILE = operator.attrgetter('_profile')


def columns_of(states):
    """``{column name: array}`` of the base and service columns."""
    columns = {}
    profiles = None
    for name, (attr, dtype) in _BASE_COLUMNS.items():
        if attr in _IN_PROFILE:
            # Read from the profiles (an item of a tuple, in C), not
            # through the attribute's property.
            if profiles is None:
                profiles = list(map(_PROFILE, states))
            values = map(operator.itemgetter(_IN_PROFILE[attr]), profiles)
        else:
            values = map(operator.attrgetter(attr), states)
        columns[name] = np.fromiter(values, dtype=dtype, count=len(states))
    columns.update(_hardware_columns(states))
    columns.update(_service_columns(states))
    return columns


_SERVICE = operator.attrgetter('service')
_ALIVE = operator.attrgetter('alive')
_DISABLED = operator.attrgetter('disabled')
_FORCED_DOWN = operator.attrgetter('forced_down')
_LEAST = operator.attrgetter('disk_available_least')
_POOLS = operator.attrgetter('pci_device_pools')


def _service_columns(states):
    """The :data:`_SERVICE_COLUMNS` of ``states``. Every host with a
    service the cache judged alive (a cloud's usual state, a million
    hosts at a cold start) is read a field at a time (C loops, 0.7 s
    less at a million hosts); any other host, all of them row by row."""
    count = len(states)
    services = list(map(_SERVICE, states))
    if not services.count(None) and \
            list(map(_ALIVE, services)).count(True) == count:
        return {
            'has_service': np.ones(count, dtype=np.bool_),
            'disabled': np.fromiter(map(bool, map(_DISABLED, services)),
                                    dtype=np.bool_, count=count),
            'forced_down': np.fromiter(
                map(bool, map(_FORCED_DOWN, services)), dtype=np.bool_,
                count=count),
            'heartbeat_us': np.full(count, host_state.ALIVE,
                                    dtype=np.int64)}
    service_values = [_service_values(state) for state in states]
    columns = {}
    for position, name in enumerate(_SERVICE_COLUMNS):
        dtype = np.int64 if name == 'heartbeat_us' else np.bool_
        columns[name] = np.fromiter(
            (values[position] for values in service_values), dtype=dtype,
            count=count)
    return columns


def row_values(state):
    """``[(column name, value)]`` of one state: its row of
    :func:`columns_of`."""
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


# The columns claim_row_values fills.
CLAIM_COLUMNS = frozenset([name for name, _attr in _CLAIM_COLUMNS]
                          + ['has_disk_least', 'disk_least_gb'])


def claim_row_values(state):
    """The part of :func:`row_values` that :data:`CLAIM_ATTRIBUTES`
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


class Scalars:
    """NumPy's ``floor``, ``where`` and ``minimum`` (and ``floats``) on
    Python numbers, as the derived columns use them (see
    :data:`DERIVED`): a row written alone is computed on its Python
    values, with the same float64 operations in the same order, at a
    fraction of NumPy's cost per call on scalars."""

    @staticmethod
    def floor(value):
        # math.floor refuses inf and NaN; np.floor keeps them (and -0.0).
        if value != value or value in (math.inf, -math.inf) or not value:
            return value
        return float(math.floor(value))

    @staticmethod
    def where(condition, first, second):
        return first if condition else second

    floats = float

    @staticmethod
    def minimum(first, second):
        # np.minimum: NaN if either is; the second of two equal ones.
        return first if first < second or first != first else second


class Arrays:
    """NumPy's ``floor``, ``where`` and ``minimum``, and ``floats`` (an
    array as float64): the derived columns computed over whole
    columns."""

    floor = staticmethod(np.floor)
    where = staticmethod(np.where)
    minimum = staticmethod(np.minimum)

    @staticmethod
    def floats(values):
        return np.asarray(values, dtype=np.float64)


class RowValues(dict):
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
    count = len(states)
    least = list(map(_LEAST, states))
    if least.count(None) == count:
        has_least = np.zeros(count, dtype=np.bool_)
        least_gb = np.zeros(count, dtype=np.int64)
    else:
        has_least = np.fromiter((value is not None for value in least),
                                dtype=np.bool_, count=count)
        least_gb = np.fromiter((value or 0 for value in least),
                               dtype=np.int64, count=count)
    pools = list(map(_POOLS, states))
    if not any(pools):
        pci_free = np.zeros(count, dtype=np.int64)
    else:
        pci_free = np.fromiter(
            (state.free_pci_devices if pool else 0
             for state, pool in zip(states, pools)),
            dtype=np.int64, count=count)
    return {'has_disk_least': has_least, 'disk_least_gb': least_gb,
            'pci_free': pci_free}


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
# the input columns and what gives ``floor``, ``where``, ``minimum`` and
# ``floats``: Arrays for arrays, Scalars for the Python values of a row.
DERIVED = {
    'candidates': (('mapped', 'has_service'),
                   lambda c, xp: c['mapped'] & c['has_service']),
    'capacity_vcpus': _capacity('vcpus'),
    'capacity_memory_mb': _capacity('memory_mb'),
    'capacity_disk_gb': _capacity('disk_gb'),
    # Whole numbers, held as float64 (exact below 2**53): what the RAM and
    # disk weighers gather, in the type they weigh in (a gather and a
    # conversion of a quarter of a million rows took 1.25 ms at a
    # million hosts, the gather alone 0.35 ms).
    'free_ram_mb': (('ram_total', 'reserved_ram', 'ram_used'),
                    lambda c, xp: xp.floats(c['ram_total'] - c['reserved_ram']
                                            - c['ram_used'])),
    'free_disk_mb': (('disk_total', 'reserved_disk', 'disk_used',
                      'has_disk_least', 'disk_least_gb'),
                     lambda c, xp: xp.floats(_free_disk_gb(c, xp) * 1024)),
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


# -- columns held once ----------------------------------------------------

# The usage a claim changes on the node it lands on: a table holds these,
# and the columns derived from them, one value per row always. The others
# (sizes, reservations, allocation ratios, liveness, the columns of what
# most hosts do not report) are the same on every host of many clouds: a
# table holds such a column as its one value (see held_once) until a row
# is written with another.
CLAIMED_USAGE = ('vcpus_used', 'ram_used', 'disk_used', 'num_instances',
                 'io_workload')
ALWAYS_WHOLE = frozenset(('ids', 'az_index') + CLAIMED_USAGE + tuple(
    name for name, (inputs, _compute) in DERIVED.items()
    if not set(inputs).isdisjoint(CLAIMED_USAGE)))


def is_held_once(column):
    """True if ``column`` is a value held once for every row (see
    :func:`held_once`)."""
    return column.strides == (0,) and len(column) > 1


def held_once(column):
    """``column`` as a read-only view of its one value in every row, no
    memory a row, when each of its rows (two or more) holds the same
    value; else ``column`` itself. Writing a row of such a view is
    refused: the table's owner makes the column whole first (see
    ``HostTable.update_in_place``).

    A boolean column stays whole: a byte a row, and requests combine
    them as masks (a pass over a view of one value runs NumPy's strided
    loops: ``~``, ``&`` and counting it took 2-5 times longer at a
    million hosts)."""
    if len(column) < 2 or is_held_once(column) or column.dtype == np.bool_:
        return column
    first = column[:1]
    if not bool((column == first).all()):
        return column
    # A copy: a view of column[:1] would keep the whole array alive.
    return np.broadcast_to(first.copy(), column.shape)


def derive(name, columns, count):
    """Derived column ``name`` of ``columns`` (of ``count`` rows): computed
    once when every input is held once, and held once when it holds one
    value (unless :data:`ALWAYS_WHOLE`)."""
    inputs, compute = DERIVED[name]
    if name in ALWAYS_WHOLE:
        return compute(columns, Arrays)
    if count > 1 and all(is_held_once(columns[key]) for key in inputs):
        one = compute({key: columns[key][:1] for key in inputs}, Arrays)
        if one.dtype != np.bool_:
            return np.broadcast_to(one, (count,))
    return held_once(compute(columns, Arrays))


# Integer columns a table holds as int32 when every value fits: half the
# memory (32 bytes a host) and half the memory a request's pass over them
# reads. A row written with a value that does not fit makes the column
# int64 first (see fits); what is derived from them is computed in
# int64 or float64 as before (the reservations stay int64).
NARROWED = frozenset(('vcpus_total', 'ram_total', 'disk_total')
                     + CLAIMED_USAGE)
# The values an int32 column holds, as Python ints.
INT32_MIN, INT32_MAX = (int(np.iinfo(np.int32).min),
                        int(np.iinfo(np.int32).max))


def narrowed(column):
    """``column`` (int64) as int32 if every value fits, else itself."""
    if len(column) and (int(column.min()) < INT32_MIN
                        or int(column.max()) > INT32_MAX):
        return column
    return column.astype(np.int32)


def fits(column, values):
    """True if ``values`` (a number or an array) can be written into
    ``column`` as they are."""
    if column.itemsize != 4 or column.dtype != np.int32:
        return True
    if isinstance(values, np.ndarray):
        return not len(values) or (int(values.min()) >= INT32_MIN
                                   and int(values.max()) <= INT32_MAX)
    return INT32_MIN <= values <= INT32_MAX


def writable(column, values):
    """A copy of ``column`` that ``values`` can be written into: int64
    where they do not fit int32."""
    if not fits(column, values):
        return column.astype(np.int64)
    return column.copy()
