"""HostState and HostTable: the scheduler's view of its compute nodes.

A :class:`HostState` is one compute node as filters and weighers see it,
under Nova's attribute names (``free_ram_mb``, ``vcpus_total``,
``total_usable_disk_gb``...), with its compute service, its aggregates and
its availability zone. It is read-only: filters must not change it, and
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
import copy
import datetime
import math
import sys

from oslo_log import log as logging
import numpy as np

from scheduler import conf
from scheduler import host_inputs
from scheduler import host_instances
from scheduler import host_table_per_state as per_state
from scheduler import placement_types

CONF = conf.CONF
LOG = logging.getLogger(__name__)

EPOCH = datetime.datetime(1970, 1, 1)
# Heartbeats are compared in whole microseconds, exactly as the datetime
# arithmetic of db.services.is_up does.
NO_HEARTBEAT = np.iinfo(np.int64).min
# The heartbeat column of a service the host cache judged alive at its
# last refresh (see ServiceInfo): later than any limit, and up.
ALIVE = np.iinfo(np.int64).max

# resource -> (HostState total, used, reserved and ratio attributes)
RESOURCE_ATTRS = {
    'vcpus': ('vcpus_total', 'vcpus_used', 'reserved_vcpus',
              'cpu_allocation_ratio'),
    'memory_mb': ('total_usable_ram_mb', 'memory_mb_used',
                  'reserved_memory_mb', 'ram_allocation_ratio'),
    'disk_gb': ('total_usable_disk_gb', 'local_gb_used', 'reserved_disk_gb',
                'disk_allocation_ratio'),
}
RESOURCES = placement_types.Resources._fields


def to_microseconds(when):
    """Naive UTC datetime -> integer microseconds since the epoch."""
    if when is None:
        return NO_HEARTBEAT
    delta = when - EPOCH
    return (delta.days * 86400 + delta.seconds) * 1000000 + delta.microseconds


# ``alive``: None, or the host cache's judgement of the heartbeat at its
# last refresh (see last_heartbeat); the cache reads liveness transitions,
# not every heartbeat, so its last_seen_up is the one of the row's last
# change and ``alive`` decides. ``created_at``: when the service row was
# made, its heartbeat until it sends one.
ServiceInfo = collections.namedtuple(
    'ServiceInfo',
    'id host binary disabled disabled_reason forced_down last_seen_up alive '
    'created_at', defaults=(None, None))


def last_heartbeat(service):
    """The service's last heartbeat as Nova's DB servicegroup driver reads
    it: ``last_seen_up``, or ``created_at`` if it never sent one."""
    return service.last_seen_up or getattr(service, 'created_at', None)


def heartbeat_within(service, alive_since, alive_until):
    """True if the service's last heartbeat lies in ``[alive_since,
    alive_until]`` (naive UTC): now -/+ ``[DEFAULT] service_down_time``,
    since Nova counts a heartbeat that far in the future as down too."""
    heartbeat = last_heartbeat(service)
    return heartbeat is not None and alive_since <= heartbeat <= alive_until


def service_from_row(row, alive_since=None, alive_until=None):
    """A ServiceInfo from a ``services`` row; with ``alive_since`` (and
    ``alive_until``, naive UTC), judged alive if its last heartbeat lies
    between the two."""
    alive = None
    if alive_since is not None:
        alive = heartbeat_within(row, alive_since,
                                 alive_until or datetime.datetime.max)
    return ServiceInfo(row.id, sys.intern(row.host), sys.intern(row.binary),
                       bool(row.disabled), row.disabled_reason,
                       bool(row.forced_down), row.last_seen_up, alive,
                       row.created_at)


def service_is_up(service, now, down_time):
    """True if ``service`` heartbeated within ``down_time`` seconds of
    ``now`` (either way), as Nova's DB servicegroup driver says.

    ``now`` is a naive UTC datetime; the arithmetic is the one of
    :func:`scheduler.db.services.is_up`. A service the host cache judged
    (``alive`` set) is up if the cache found it alive at its last
    refresh.
    """
    if service is None or service.forced_down:
        return False
    if service.alive is not None:
        return service.alive
    window = datetime.timedelta(seconds=down_time)
    return heartbeat_within(service, now - window, now + window)


_RATIO_FIELDS = ('cpu_allocation_ratio', 'ram_allocation_ratio',
                 'disk_allocation_ratio')
# node_ratios of a node that reports none (shared by all of them).
NO_RATIOS = (None, None, None)
_intern = sys.intern
_NO_LIST = []
_NO_STATS = {}
# id(default ratios dict) -> (that dict, its three ratios as floats)
_defaults_seen = {}


def _resolved_defaults(default_ratios):
    """The three default ratios as floats, computed once per dict."""
    known = _defaults_seen.get(id(default_ratios))
    if known is not None and known[0] is default_ratios:
        return known[1]
    floats = tuple(float(default_ratios[name]) for name in _RATIO_FIELDS)
    _defaults_seen.clear()
    _defaults_seen[id(default_ratios)] = (default_ratios, floats)
    return floats
# One frozenset per distinct set of zones, shared by the HostStates in it.
_zone_sets = {}
# The zones of the last aggregates tuples asked about: {id(tuple):
# (tuple, default zone, zones)} (the tuple is kept, so its id stays its).
_zones_by_tuple = {}
_ZONES_BY_TUPLE_LIMIT = 4096


def zones_of(aggregates, default_az):
    """The availability zones of a host in ``aggregates`` (interned)."""
    known = _zones_by_tuple.get(id(aggregates))
    if (known is not None and known[0] is aggregates
            and known[1] == default_az):
        return known[2]
    zones = frozenset(agg.metadata['availability_zone']
                      for agg in aggregates
                      if 'availability_zone' in agg.metadata)
    zones = zones or frozenset([default_az])
    zones = _zone_sets.setdefault(zones, zones)
    if isinstance(aggregates, tuple):
        if len(_zones_by_tuple) >= _ZONES_BY_TUPLE_LIMIT:
            _zones_by_tuple.clear()
        _zones_by_tuple[id(aggregates)] = (aggregates, default_az, zones)
    return zones


class HostState:
    """One compute node as the filters and weighers see it (read-only)."""

    # Set from the node row, under Nova's names where Nova has one.
    NODE_FIELDS = (
        'id', 'uuid', 'host', 'nodename', 'vcpus_total', 'vcpus_used',
        'reserved_vcpus', 'total_usable_ram_mb', 'memory_mb_used',
        'reserved_memory_mb', 'total_usable_disk_gb', 'local_gb_used',
        'reserved_disk_gb', 'cpu_allocation_ratio', 'ram_allocation_ratio',
        'disk_allocation_ratio', 'hypervisor_type', 'hypervisor_version',
        'host_ip', 'supported_instances', 'stats', 'metrics',
        'num_instances', 'io_workload', 'mapped', 'generation', 'updated')

    # The hardware the compute reports and what claims use of it, parsed
    # (see scheduler.host_inputs), with their values when not reported;
    # optional when a HostState is built by hand.
    HARDWARE_FIELDS = {
        'cpu_info': host_inputs.NO_CPU_INFO, 'disk_available_least': None,
        'numa_topology': None, 'numa_usage': None,
        'pci_device_pools': host_inputs.NO_POOLS,
        'pci_usage': host_inputs.NO_PCI_USAGE}

    # ``instances``: {uuid: host_instances.InstanceInfo} on the node's host;
    # ``node_ratios``: the allocation ratios the node row holds (None where
    # the configured default applies), for :meth:`restated`.
    __slots__ = NODE_FIELDS + tuple(HARDWARE_FIELDS) + (
        'service', 'aggregates', 'availability_zones', 'instances',
        'node_ratios')

    def __init__(self, service=None, aggregates=(),
                 availability_zones=frozenset(['nova']), **fields):
        missing = set(self.NODE_FIELDS) - set(fields)
        unknown = (set(fields) - set(self.NODE_FIELDS)
                   - set(self.HARDWARE_FIELDS))
        if missing or unknown:
            raise TypeError('HostState fields missing %s, unknown %s'
                            % (sorted(missing), sorted(unknown)))
        fields = dict(self.HARDWARE_FIELDS, **fields)
        for name, value in fields.items():
            setattr(self, name, value)
        self.service = service
        self.aggregates = tuple(aggregates)
        self.availability_zones = frozenset(availability_zones)
        self.instances = host_instances.NO_INSTANCES
        self.node_ratios = tuple(fields[name] for name in _RATIO_FIELDS)

    @classmethod
    def from_node(cls, row, service, aggregates, default_ratios, default_az):
        """Build from a ``compute_nodes`` row.

        :param service: the ServiceInfo of the node's host, or None.
        :param aggregates: the aggregates the node's host belongs to.
        :param default_ratios: ``{'cpu_allocation_ratio': ..., ...}`` used
            where the node reports no ratio.
        :param default_az: ``[DEFAULT] default_availability_zone``.
        """
        # Built slot by slot: a cold start makes one per node.
        state = cls.__new__(cls)
        state.service = service
        state.aggregates = tuple(aggregates)
        state.availability_zones = zones_of(aggregates, default_az)
        state.instances = host_instances.NO_INSTANCES
        state.id = row.id
        state.uuid = row.uuid
        # Names repeat (a host's nodes, its service, the indexes): one
        # string object each.
        state.host = host = _intern(row.host)
        nodename = row.hypervisor_hostname
        state.nodename = host if nodename == host else _intern(nodename)
        state.vcpus_total = row.vcpus
        state.vcpus_used = row.vcpus_used
        state.reserved_vcpus = row.reserved_vcpus
        state.total_usable_ram_mb = row.memory_mb
        state.memory_mb_used = row.memory_mb_used
        state.reserved_memory_mb = row.reserved_memory_mb
        state.total_usable_disk_gb = row.local_gb
        state.local_gb_used = row.local_gb_used
        state.reserved_disk_gb = row.reserved_disk_gb
        ratios = (row.cpu_allocation_ratio, row.ram_allocation_ratio,
                  row.disk_allocation_ratio)
        if ratios == NO_RATIOS:
            state.node_ratios = NO_RATIOS
            (state.cpu_allocation_ratio, state.ram_allocation_ratio,
             state.disk_allocation_ratio) = _resolved_defaults(default_ratios)
        else:
            state.node_ratios = ratios
            state._resolve_ratios(default_ratios)
        hypervisor_type = row.hypervisor_type
        state.hypervisor_type = (_intern(hypervisor_type)
                                 if hypervisor_type else hypervisor_type)
        state.hypervisor_version = row.hypervisor_version
        state.host_ip = row.host_ip
        # Empty ones shared (a HostState is read-only).
        state.supported_instances = row.supported_instances or _NO_LIST
        state.stats = row.stats or _NO_STATS
        state.metrics = row.metrics or _NO_LIST
        state.num_instances = row.num_instances
        state.io_workload = row.io_workload
        state.mapped = bool(row.mapped)
        state.generation = row.generation
        state.updated = row.updated_at
        (state.cpu_info, state.disk_available_least, state.numa_topology,
         state.numa_usage, state.pci_device_pools,
         state.pci_usage) = host_inputs.from_row(row)
        return state

    def _resolve_ratios(self, default_ratios):
        for name, value in zip(_RATIO_FIELDS, self.node_ratios):
            setattr(self, name, float(default_ratios[name] if value is None
                                      else value))

    def restated(self, service, aggregates, default_ratios, default_az,
                 instances):
        """A copy with a new service, aggregates (and so zones), ratio
        defaults and instances; the node's own values, and what was
        consumed from them, are kept."""
        state = copy.copy(self)
        state.service = service
        state.aggregates = tuple(aggregates)
        state.availability_zones = zones_of(aggregates, default_az)
        state.instances = instances
        state._resolve_ratios(default_ratios)
        return state

    def __repr__(self):
        return ('(%s, %s) ram: %sMB disk: %sMB io_ops: %s instances: %s'
                % (self.host, self.nodename, self.free_ram_mb,
                   self.free_disk_mb, self.io_workload, self.num_instances))

    # -- capacity, as the claims compute it --------------------------------

    def capacity(self, resource):
        """``total * allocation_ratio - reserved`` of one resource."""
        total, _used, reserved, ratio = RESOURCE_ATTRS[resource]
        return (getattr(self, total) * getattr(self, ratio)
                - getattr(self, reserved))

    def used(self, resource):
        return getattr(self, RESOURCE_ATTRS[resource][1])

    def fits(self, resource, amount):
        """True if a claim of ``amount`` of ``resource`` would succeed."""
        if amount <= 0:
            return True
        return self.used(resource) + amount <= self.capacity(resource)

    @property
    def limits(self):
        """Oversubscription limits, as Nova's filters set them."""
        return {'vcpu': self.capacity('vcpus'),
                'memory_mb': self.capacity('memory_mb'),
                'disk_gb': self.capacity('disk_gb')}

    # -- Nova's derived attributes ------------------------------------------

    @property
    def hypervisor_hostname(self):
        return self.nodename

    @property
    def free_ram_mb(self):
        """RAM not used nor reserved, without overcommit (may be < 0)."""
        return (self.total_usable_ram_mb - self.reserved_memory_mb
                - self.memory_mb_used)

    @property
    def free_disk_mb(self):
        """Disk not used nor reserved, without overcommit, in MB; no more
        than ``disk_available_least`` when the compute reports it (Nova's
        free disk)."""
        free_gb = (self.total_usable_disk_gb - self.reserved_disk_gb
                   - self.local_gb_used)
        least_gb = self.disk_available_least
        if least_gb is not None and least_gb < free_gb:
            free_gb = least_gb
        return free_gb * 1024

    @property
    def free_pci_devices(self):
        """PCI devices of every pool that claims do not use."""
        return host_inputs.free_pci_devices(self.pci_device_pools,
                                            self.pci_usage)

    @property
    def disk_mb_used(self):
        return self.local_gb_used * 1024

    @property
    def vcpus_free(self):
        """vCPUs a claim could still take (with the allocation ratio)."""
        return self.capacity('vcpus') - self.vcpus_used

    @property
    def num_io_ops(self):
        return self.io_workload

    @property
    def failed_builds(self):
        """Builds that failed here lately: the ``failed_builds`` stat the
        compute reports, 0 when it reports none (or no integer)."""
        stats = self.stats if isinstance(self.stats, dict) else {}
        try:
            return int(stats.get('failed_builds', 0))
        except (TypeError, ValueError):
            return 0

    @property
    def availability_zone(self):
        """The host's zone; several zones (a misconfiguration) joined."""
        return ','.join(sorted(self.availability_zones))

    @property
    def service_disabled(self):
        return bool(self.service is not None and self.service.disabled)

    @property
    def disabled_reason(self):
        return self.service.disabled_reason if self.service else None

    def service_up(self, down_time=None, now=None):
        """True if the compute service is up: not forced down, and heard
        from within ``down_time`` seconds (``[DEFAULT] service_down_time``
        by default) before ``now``."""
        if down_time is None:
            down_time = CONF.service_down_time
        now = now or datetime.datetime.now(
            datetime.timezone.utc).replace(tzinfo=None)
        return service_is_up(self.service, now, down_time)

    def claim_amounts(self, resources):
        """What a claim for an instance asking ``resources`` takes on
        this node: those resources (a baremetal node is taken whole, see
        :mod:`scheduler.ironic_host_manager`)."""
        return resources

    def consumed(self, resources):
        """A copy with ``resources`` (placement_types.Resources) taken by one
        more instance, as Nova's consume_from_request counts it."""
        state = copy.copy(self)
        state.vcpus_used = self.vcpus_used + resources.vcpus
        state.memory_mb_used = self.memory_mb_used + resources.memory_mb
        state.local_gb_used = self.local_gb_used + resources.disk_gb
        if self.disk_available_least is not None:
            # Nova takes the disk from its free disk, whichever bound it.
            state.disk_available_least = (self.disk_available_least
                                          - resources.disk_gb)
        state.num_instances = self.num_instances + 1
        state.io_workload = self.io_workload + 1
        return state


# The HostState attributes a request may name, under Nova's names: the
# ComputeCapabilitiesFilter's extra specs and the JsonFilter's
# ``$variables`` read these and nothing else (no methods, nothing private;
# the JsonFilter also reads the service's json_query.SERVICE_FIELDS).
PUBLIC_ATTRIBUTES = frozenset(HostState.NODE_FIELDS) | frozenset([
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
        return (False, False, False, NO_HEARTBEAT)
    if service.alive is not None:
        heartbeat = ALIVE if service.alive else NO_HEARTBEAT
    else:
        heartbeat = to_microseconds(last_heartbeat(service))
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


def _free_disk_gb(c):
    free = c['disk_total'] - c['reserved_disk'] - c['disk_used']
    return np.where(c['has_disk_least'],
                    np.minimum(free, c['disk_least_gb']), free)


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
            lambda c: c[total] * c[ratio] - c[reserved])


# Derived column -> (the columns it is computed from, how).
_DERIVED = {
    'candidates': (('mapped', 'has_service'),
                   lambda c: c['mapped'] & c['has_service']),
    'capacity_vcpus': _capacity('vcpus'),
    'capacity_memory_mb': _capacity('memory_mb'),
    'capacity_disk_gb': _capacity('disk_gb'),
    'free_ram_mb': (('ram_total', 'reserved_ram', 'ram_used'),
                    lambda c: c['ram_total'] - c['reserved_ram']
                    - c['ram_used']),
    'free_disk_mb': (('disk_total', 'reserved_disk', 'disk_used',
                      'has_disk_least', 'disk_least_gb'),
                     lambda c: _free_disk_gb(c) * 1024),
    'vcpus_free': (('vcpus_total', 'cpu_ratio', 'reserved_vcpus',
                    'vcpus_used'),
                   lambda c: (c['vcpus_total'] * c['cpu_ratio']
                              - c['reserved_vcpus']) - c['vcpus_used']),
}


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
                self.derived[name] = compute(columns)
            elif changed.isdisjoint(inputs):
                self.derived[name] = previous.derived[name]
            else:
                # Only ``rows`` changed: compute those, copy the rest.
                column = previous.derived[name].copy()
                column[rows] = compute({key: columns[key][rows]
                                        for key in inputs})
                self.derived[name] = column
            setattr(self, name, self.derived[name])
        self.capacity = {resource: self.derived['capacity_' + resource]
                         for resource in RESOURCES}
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

    def consumed(self, row, resources):
        """A new table where the node of ``row`` took ``resources``."""
        return self.replace({row: self.states[row].consumed(resources)})

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

    def update_in_place(self, new_states):
        """Put ``{row: HostState}`` in this table itself, its columns,
        derived columns and per-state values written row by row: the
        cost of a claim is that of the rows it changes, not of the
        hosts. Only the owner of the table (the HostManager, under its
        lock) calls this, for states of the same nodes (same identity);
        requests reading the table meanwhile may see the new rows, which
        is what an assumed claim is for. Tables derived from this one
        that share an unchanged column see it too. Returns False (and
        changes nothing) when a state changed its identity: use
        :meth:`replace`."""
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
        for name, values in _columns_of(list(new_states.values())).items():
            column = self.columns[name]
            if not np.array_equal(column[rows], values):
                column[rows] = values
                changed.add(name)
        for name, (inputs, compute) in _DERIVED.items():
            if not changed.isdisjoint(inputs):
                self.derived[name][rows] = compute(
                    {key: self.columns[key][rows] for key in inputs})
        for row, state in new_states.items():
            self.states[row] = state
        self._per_state.update_rows(new_states)
        if self._instance_index is not None:
            self._instance_index = self._instance_index.updated(
                old_states, new_states)
        return True

    # -- instances on the hosts (see scheduler.host_instances) --------------

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
        """Column: the compute service is up (see HostState.service_up)."""
        if down_time is None:
            down_time = CONF.service_down_time
        now = now or datetime.datetime.now(
            datetime.timezone.utc).replace(tzinfo=None)
        window = down_time * 1000000
        now_us = to_microseconds(now)
        return (self.has_service & ~self.forced_down
                & (self.heartbeat_us != NO_HEARTBEAT)
                & (self.heartbeat_us >= now_us - window)
                & ((self.heartbeat_us <= now_us + window)
                   | (self.heartbeat_us == ALIVE)))

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


def parse_multiplier(value):
    """A finite float from aggregate metadata, or None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
