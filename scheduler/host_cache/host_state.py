"""HostState: one compute node as the filters and weighers see it.

Under Nova's attribute names (``free_ram_mb``, ``vcpus_total``,
``total_usable_disk_gb``...), with its compute service (a
:class:`ServiceInfo`), its aggregates and its availability zones. It is
read-only: filters must not change it, and consuming resources returns a
new HostState. :mod:`scheduler.host_cache.host_table` lays many of them out as
NumPy columns::

    state = HostState.from_node(row, service, aggregates, ratios, 'nova')
    state.free_ram_mb
    state = state.consumed(placement_types.Resources(2, 4096, 40))

This module also reads the services' heartbeats as Nova's DB servicegroup
driver does (:func:`last_heartbeat`, :func:`service_is_up`).
"""

import collections
import datetime
import operator
import sys

from oslo_log import log as logging
import numpy as np

from scheduler import conf
from scheduler.conf import cached
from scheduler import hardware
from scheduler.host_cache import host_inputs
from scheduler.host_cache import host_instances
from scheduler.host_cache import node_extras
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
# made, its heartbeat until it sends one; None once it has sent one
# (nothing reads it then, and a datetime is 48 bytes a host).
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
    return service_info(row, alive)


def service_info(row, alive):
    """A ServiceInfo from a ``services`` row, judged ``alive`` (True,
    False, or None: not judged)."""
    # tuple.__new__, not the named tuple's own (Python) constructor: a
    # cold start makes one per compute service.
    last_seen_up = row.last_seen_up
    return _new_tuple(ServiceInfo, (
        row.id, sys.intern(row.host), sys.intern(row.binary),
        bool(row.disabled), row.disabled_reason, bool(row.forced_down),
        last_seen_up, alive, row.created_at if last_seen_up is None else None))


_new_tuple = tuple.__new__


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
# The HostState attributes that take few values in a cloud (reservations
# and allocation ratios from nova.conf, the hypervisor, the cell): held
# together in one tuple (``_profile``), one tuple object for all the
# nodes that have the same, where each took a slot of every node (88
# bytes a host at a million hosts; issue 53). Read as attributes.
PROFILE_FIELDS = ('reserved_vcpus', 'reserved_memory_mb', 'reserved_disk_gb',
                  'cpu_allocation_ratio', 'ram_allocation_ratio',
                  'disk_allocation_ratio', 'node_ratios', 'hypervisor_type',
                  'hypervisor_version', 'mapped', 'cell_uuid', 'cell_name')
_RATIOS_AT = PROFILE_FIELDS.index(_RATIO_FIELDS[0])
# The profiles met so far, one object each; emptied when it grows past
# _PROFILES_LIMIT (values that vary by node: sharing buys nothing).
_profiles = {}
_PROFILES_LIMIT = 4096


def shared_profile(values):
    """``values`` (a tuple of the PROFILE_FIELDS), as the one tuple
    object the nodes with the same share."""
    try:
        known = _profiles.get(values)
    except TypeError:
        # A value that cannot be hashed (a HostState built by hand): its
        # own.
        return values
    if known is not None:
        return known
    if len(_profiles) >= _PROFILES_LIMIT:
        _profiles.clear()
    _profiles[values] = values
    return values


def _profile_attribute(index, name):
    def read(self):
        return self._profile[index]

    def write(self, value):
        profile = list(self._profile)
        profile[index] = value
        self._profile = shared_profile(tuple(profile))
    return property(read, write, doc='``%s`` (held in the profile tuple).'
                    % name)
# node_ratios of a node that reports none (shared by all of them).
NO_RATIOS = (None, None, None)
_intern = sys.intern
_NO_LIST = []
_NO_STATS = {}
# One int object per distinct size a node row reports (RAM, disk: above
# 256, where CPython shares no int; the reservations and the hypervisor
# version are shared with the profile): a cloud has few hardware models,
# and the driver makes a new 28-byte object for each value of each row
# (5% of the host cache at a million hosts, for 0.3-0.4 us a row; issue
# 53). Emptied when it grows past _SIZES_LIMIT (values that are not the
# sizes of a few models).
_sizes = {}
_SIZES_LIMIT = 4096


# {id(default ratios dict): (that dict, {a node row's profile values:
# the profile})}: see from_node.
_row_profiles = {}


def _row_profile(key, default_ratios):
    """The shared profile of a node row whose profile values are ``key``
    (see HostState.from_node), remembered for the rows after it."""
    (reserved_vcpus, reserved_memory_mb, reserved_disk_gb, cpu, ram, disk,
     hypervisor_type, hypervisor_version, mapped, cell_uuid,
     cell_name) = key
    ratios = (cpu, ram, disk)
    if ratios == NO_RATIOS:
        ratios = NO_RATIOS
    profile = shared_profile(
        (reserved_vcpus, reserved_memory_mb, reserved_disk_gb)
        + _resolved(ratios, default_ratios)
        + (ratios, hypervisor_type, hypervisor_version, bool(mapped),
           cell_uuid, cell_name))
    by_row = _row_profiles.get(id(default_ratios))
    if by_row is None or by_row[0] is not default_ratios:
        _row_profiles.clear()
        by_row = _row_profiles[id(default_ratios)] = (default_ratios, {})
    known = by_row[1]
    if len(known) >= _PROFILES_LIMIT:
        known.clear()
    try:
        known[key] = profile
    except TypeError:
        # A value that cannot be hashed: not remembered.
        pass
    return profile


def _resolved(node_ratios, default_ratios):
    """The three allocation ratios of a node reporting ``node_ratios``
    (None where the default applies), as floats."""
    return tuple(float(default_ratios[name] if value is None else value)
                 for name, value in zip(_RATIO_FIELDS, node_ratios))


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


# {HostState class: (its slots' names, an attrgetter of them all)}.
_slot_readers = {}
_UNSET = object()


def _slots_of(cls):
    known = _slot_readers.get(cls)
    if known is None:
        names = []
        for klass in reversed(cls.__mro__):
            slots = klass.__dict__.get('__slots__', ())
            names.extend((slots,) if isinstance(slots, str) else slots)
        names = tuple(name for name in dict.fromkeys(names)
                      if name not in ('__dict__', '__weakref__'))
        known = _slot_readers[cls] = (names, operator.attrgetter(*names))
    return known


# How a host of a deployment without cells names its cell.
DEFAULT_CELL_NAME = 'default'


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
    # (see scheduler.host_cache.host_inputs), with their values when not
    # reported; optional when a HostState is built by hand.
    HARDWARE_FIELDS = {
        'cpu_info': host_inputs.NO_CPU_INFO, 'disk_available_least': None,
        'numa_topology': None, 'numa_usage': None,
        'pci_device_pools': host_inputs.NO_POOLS,
        'pci_usage': host_inputs.NO_PCI_USAGE}

    # Placement's view of the node beyond its classic classes, read from
    # ``compute_node_inventories`` and ``compute_node_traits``:
    # ``inventories`` {resource class: node_extras.ClassInventory},
    # ``traits`` a frozenset of trait names; optional when built by hand.
    PLACEMENT_FIELDS = {'inventories': node_extras.NO_INVENTORIES,
                        'traits': node_extras.NO_TRAITS}

    # ``instances``: {uuid: host_instances.InstanceInfo} on the node's host;
    # ``node_ratios``: the allocation ratios the node row holds (None where
    # the configured default applies), for :meth:`restated`;
    # ``cell_uuid``/``cell_name``: the node's cell (None/'default' in a
    # deployment of one cell).
    # ``_profile``: the PROFILE_FIELDS' values, a tuple shared by the
    # nodes with the same.
    __slots__ = tuple(name for name in NODE_FIELDS
                      if name not in PROFILE_FIELDS) + tuple(
        HARDWARE_FIELDS) + tuple(PLACEMENT_FIELDS) + (
        'service', 'aggregates', 'availability_zones', 'instances',
        '_profile')

    def __init__(self, service=None, aggregates=(),
                 availability_zones=frozenset(['nova']), cell_uuid=None,
                 cell_name=DEFAULT_CELL_NAME, **fields):
        missing = set(self.NODE_FIELDS) - set(fields)
        unknown = (set(fields) - set(self.NODE_FIELDS)
                   - set(self.HARDWARE_FIELDS) - set(self.PLACEMENT_FIELDS))
        if missing or unknown:
            raise TypeError('HostState fields missing %s, unknown %s'
                            % (sorted(missing), sorted(unknown)))
        fields = {**self.HARDWARE_FIELDS, **self.PLACEMENT_FIELDS, **fields}
        fields['inventories'] = node_extras.checked_inventories(
            fields['inventories'])
        fields['traits'] = frozenset(fields['traits'])
        fields['node_ratios'] = tuple(fields[name] for name in _RATIO_FIELDS)
        fields['cell_uuid'] = cell_uuid
        fields['cell_name'] = cell_name
        self._profile = shared_profile(tuple(
            fields.pop(name) for name in PROFILE_FIELDS))
        for name, value in fields.items():
            setattr(self, name, value)
        self.service = service
        self.aggregates = tuple(aggregates)
        self.availability_zones = frozenset(availability_zones)
        self.instances = host_instances.NO_INSTANCES

    @classmethod
    def from_node(cls, row, service, aggregates, default_ratios, default_az,
                  cell_uuid=None, cell_name=DEFAULT_CELL_NAME, host=None):
        """Build from a ``compute_nodes`` row.

        :param service: the ServiceInfo of the node's host, or None.
        :param aggregates: the aggregates the node's host belongs to.
        :param default_ratios: ``{'cpu_allocation_ratio': ..., ...}`` used
            where the node reports no ratio.
        :param default_az: ``[DEFAULT] default_availability_zone``.
        :param cell_uuid: the uuid of the node's cell (None: one cell).
        :param cell_name: its name.
        :param host: ``row.host`` interned, if the caller has it.
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
        state.host = host = _intern(row.host) if host is None else host
        nodename = row.hypervisor_hostname
        state.nodename = host if nodename == host else _intern(nodename)
        if len(_sizes) > _SIZES_LIMIT:
            _sizes.clear()
        size = _sizes.setdefault
        state.vcpus_total = row.vcpus
        state.vcpus_used = row.vcpus_used
        state.total_usable_ram_mb = size(row.memory_mb, row.memory_mb)
        state.memory_mb_used = row.memory_mb_used
        state.total_usable_disk_gb = size(row.local_gb, row.local_gb)
        state.local_gb_used = row.local_gb_used
        # The row's values of the profile, looked up as they are: most
        # rows find the profile of a row before them (and no ratios are
        # resolved again).
        key = (row.reserved_vcpus, row.reserved_memory_mb,
               row.reserved_disk_gb, row.cpu_allocation_ratio,
               row.ram_allocation_ratio, row.disk_allocation_ratio,
               row.hypervisor_type, row.hypervisor_version, row.mapped,
               cell_uuid, cell_name)
        by_row = _row_profiles.get(id(default_ratios))
        profile = None
        if by_row is not None and by_row[0] is default_ratios:
            try:
                profile = by_row[1].get(key)
            except TypeError:
                pass
        state._profile = profile or _row_profile(key, default_ratios)
        state.host_ip = row.host_ip
        # Empty ones shared (a HostState is read-only).
        state.supported_instances = row.supported_instances or _NO_LIST
        state.stats = row.stats or _NO_STATS
        state.metrics = row.metrics or _NO_LIST
        state.num_instances = row.num_instances
        state.io_workload = row.io_workload
        state.generation = row.generation
        state.updated = row.updated_at
        (state.cpu_info, state.disk_available_least, state.numa_topology,
         state.numa_usage, state.pci_device_pools,
         state.pci_usage) = host_inputs.from_row(row)
        # Set by the reader that has them (see node_extras).
        state.inventories = node_extras.NO_INVENTORIES
        state.traits = node_extras.NO_TRAITS
        return state

    def __copy__(self):
        # Slot by slot: copy.copy's own way (__reduce_ex__, a dict of the
        # slots, setattr from it) took twice as long, and a claim copies
        # its node's state (issue 53).
        cls = self.__class__
        names, read = _slots_of(cls)
        state = cls.__new__(cls)
        try:
            values = read(self)
        except AttributeError:
            # A slot never set (a state built by hand): those set only.
            values = tuple(getattr(self, name, _UNSET) for name in names)
        for name, value in zip(names, values):
            if value is not _UNSET:
                setattr(state, name, value)
        extra = getattr(self, '__dict__', None)
        if extra:
            state.__dict__.update(extra)
        return state

    def _resolve_ratios(self, default_ratios):
        profile = self._profile
        at = _RATIOS_AT
        self._profile = shared_profile(
            profile[:at] + _resolved(self.node_ratios, default_ratios)
            + profile[at + len(_RATIO_FIELDS):])

    def restated(self, service, aggregates, default_ratios, default_az,
                 instances):
        """A copy with a new service, aggregates (and so zones), ratio
        defaults and instances; the node's own values, and what was
        consumed from them, are kept."""
        state = self.__copy__()
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
            down_time = cached.group(None).service_down_time
        now = now or datetime.datetime.now(
            datetime.timezone.utc).replace(tzinfo=None)
        return service_is_up(self.service, now, down_time)

    def claim_amounts(self, resources):
        """What a claim for an instance asking ``resources`` takes on
        this node: those resources (a baremetal node is taken whole, see
        :mod:`scheduler.ironic_host_manager`)."""
        return resources

    def consumed(self, resources, hardware_record=None, extra=None):
        """A copy with ``resources`` (placement_types.Resources) taken by one
        more instance, as Nova's consume_from_request counts it; with
        ``hardware_record`` (see :func:`scheduler.hardware.reserve`), its
        NUMA cells, pinned CPUs, pages and PCI devices too; with ``extra``
        (``{resource class: amount}``), the used amounts of those classes
        of its ``inventories`` (the other classes shared with this one).

        :raises: scheduler.hardware.HOST_ERRORS: the record no longer fits.
        :raises ValueError: ``extra`` names a class the node has no
            inventory of.
        """
        state = self.__copy__()
        if extra:
            state.inventories = node_extras.with_extra_used(self, extra)
        if hardware_record:
            state._set_hardware_usage(hardware.apply(
                hardware.Host.of_state(self), hardware_record))
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

    def reserved(self, resources, hardware_request=None, extra=None):
        """``(state, hardware record)``: :meth:`consumed` (``extra``
        too), with the NUMA cells, pinned CPUs, pages and PCI devices that
        ``hardware_request`` (a :class:`scheduler.hardware.Request`)
        fits on here, as a claim would take them (record None, nothing
        of them taken, when it does not fit: the claim decides)."""
        record = None
        if hardware_request is not None:
            record = hardware.reserve(hardware.Host.of_state(self),
                                      hardware_request)
        return self.consumed(resources, record, extra), record

    def hardware_given_back(self, hardware_record):
        """A copy with what ``hardware_record`` took given back (the
        inverse of :meth:`consumed`'s hardware part).

        :raises: scheduler.hardware.HOST_ERRORS: the usage does not hold
            it.
        """
        state = self.__copy__()
        state._set_hardware_usage(hardware.release(
            hardware.Host.of_state(self), hardware_record))
        return state

    def _set_hardware_usage(self, columns):
        for name, value in columns.items():
            setattr(self, name, value)


for _index, _name in enumerate(PROFILE_FIELDS):
    setattr(HostState, _name, _profile_attribute(_index, _name))
del _index, _name
