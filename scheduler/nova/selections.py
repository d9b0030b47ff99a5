"""Gantt's answers in the form Nova's conductor reads.

``select_destinations`` answers Nova with, per instance, a list of
``Selection`` 1.1 objects (the claimed host first, then alternates):
``service_host``, ``nodename``, ``compute_node_uuid``, ``cell_uuid``,
``limits`` (a ``SchedulerLimits`` 1.0), ``allocation_request`` (the JSON
of Placement's allocation request, which the conductor claims with when
it moves to an alternate), ``allocation_request_version`` (the Placement
microversion that request is written in: Nova 34's scheduler asks for
candidates at 1.36, ``SAME_SUBTREE_VERSION``, and says so) and
``availability_zone`` (the host's zone, or ``[DEFAULT]
default_availability_zone`` when it is in none, as Nova's)::

    encoder = selections.Encoder(cell_of={'compute-1': cell_uuid}.get)
    answer = [[encoder.selection(s) for s in alternates]
              for alternates in gantt_selections]

A caller that asks no objects (API 4.3 and 4.4, or 4.5 with
``return_objects=False``) gets the older ``{host, nodename, limits}``
dict of each instance's first host.

Nova's conductor reads a host's cell from ``cell_uuid`` (a UUID field,
not nullable): a host whose cell is unknown cannot be answered, and
:class:`HostUnanswerable` says which (nor one whose compute node has no
UUID).
"""

import math

from oslo_serialization import jsonutils

from scheduler import conf
from scheduler import exception
from scheduler.nova import allocations
from scheduler.nova import primitives
from scheduler.objects import selection as selection_obj
from scheduler import placement_types

CONF = conf.CONF

SELECTION_VERSION = '1.1'
LIMITS_VERSION = '1.0'
NUMA_LIMITS_VERSION = '1.1'
NETWORK_METADATA_VERSION = '1.0'
# The Placement microversion of allocation_request, as Nova 34 sends it.
ALLOCATION_REQUEST_VERSION = '1.36'
# SchedulerLimits' fields and the Gantt limit each is read from.
_LIMITS = (('vcpu', 'vcpu'), ('memory_mb', 'memory_mb'),
           ('disk_gb', 'disk_gb'))


class HostUnanswerable(exception.NoValidHost):
    """A host was chosen that Nova's conductor could not read a
    Selection of (its cell or its compute node's UUID is unknown)."""

    msg_fmt = ("No valid host was found. Host %(host)s was chosen but its "
               "%(what)s is not known; Nova needs it.")


def numa_limits_primitive(ratios, network_metadata=None):
    """Nova's NUMATopologyLimits 1.1 of ``(cpu_allocation_ratio,
    ram_allocation_ratio)`` and the request's NetworkMetadata (a decoded
    NovaObject, or None: no physnet, no tunnel)."""
    data = {'cpu_allocation_ratio': float(ratios[0]),
            'ram_allocation_ratio': float(ratios[1])}
    metadata = {'physnets': [], 'tunneled': False}
    if isinstance(network_metadata, primitives.NovaObject):
        metadata = {'physnets': sorted(network_metadata.get('physnets', [])),
                    'tunneled': bool(network_metadata.get('tunneled'))}
    data['network_metadata'] = primitives.encode(
        'NetworkMetadata', NETWORK_METADATA_VERSION, metadata)
    return primitives.encode('NUMATopologyLimits', NUMA_LIMITS_VERSION, data)


def limits_primitive(limits, numa_limits=None):
    """A SchedulerLimits 1.0 primitive of Gantt's ``{vcpu, memory_mb,
    disk_gb}`` floats (Nova's fields are whole numbers: rounded down),
    with ``numa_limits`` (a NUMATopologyLimits primitive) if given."""
    data = {'numa_topology': numa_limits}
    for name, gantt_name in _LIMITS:
        value = (limits or {}).get(gantt_name)
        data[name] = None if value is None else int(math.floor(value))
    return primitives.encode('SchedulerLimits', LIMITS_VERSION, data)


def _allocation_request(selection):
    """Placement's allocation request (JSON) of a Gantt Selection whose
    ``allocation_request`` is Gantt's ``{vcpus, memory_mb, disk_gb}``."""
    if not selection.obj_get('allocation_request'):
        return None
    wanted = dict(selection.requested_resources())
    extra = wanted.pop(selection_obj.EXTRA_KEY, None)
    resources = placement_types.Resources(
        wanted.get('vcpus', 0), wanted.get('memory_mb', 0),
        wanted.get('disk_gb', 0))
    return jsonutils.dumps(allocations.allocation_request(
        selection.compute_node_uuid, resources, extra))


class Encoder:
    """Encodes Gantt Selections for Nova: ``cell_of(host)`` gives a
    host's cell UUID (None: the Selection's ``cell_uuid``),
    ``availability_zone_of(host)`` its zone (None: in none), and
    ``ratios_of(host, nodename)`` its ``(cpu_allocation_ratio,
    ram_allocation_ratio)`` (None: unknown).

    For a request with a NUMA topology, Nova's NUMATopologyFilter gives
    the compute the host's ratios as ``limits.numa_topology``, and the
    compute fits the guest's NUMA cells within them; without them it
    fits them without overcommit. The ratios come from ``ratios_of``;
    without it no NUMA limits are sent."""

    def __init__(self, cell_of=None, availability_zone_of=None,
                 ratios_of=None):
        self.cell_of = cell_of or (lambda host: None)
        self.availability_zone_of = availability_zone_of or (lambda h: None)
        self.ratios_of = ratios_of or (lambda host, nodename: None)

    def _numa_limits(self, selection, numa):
        if numa is None:
            return None
        ratios = self.ratios_of(selection.service_host, selection.nodename)
        if ratios is None:
            return None
        return numa_limits_primitive(ratios, numa.network_metadata)

    def selection(self, selection, numa=None):
        """The Nova Selection 1.1 primitive of a Gantt Selection;
        ``numa``: the request's :class:`NumaRequest`, if it has one."""
        host = selection.service_host
        cell_uuid = self.cell_of(host) or selection.obj_get('cell_uuid')
        if not cell_uuid:
            raise HostUnanswerable(host=host, what='cell')
        if not selection.obj_get('compute_node_uuid'):
            raise HostUnanswerable(host=host, what='compute node UUID')
        zone = (self.availability_zone_of(host)
                or CONF.default_availability_zone)
        data = {
            'service_host': host,
            'nodename': selection.nodename,
            'compute_node_uuid': selection.compute_node_uuid,
            'cell_uuid': cell_uuid,
            'limits': limits_primitive(selection.obj_get('limits'),
                                       self._numa_limits(selection, numa)),
            'allocation_request': _allocation_request(selection),
            'allocation_request_version': ALLOCATION_REQUEST_VERSION,
            'availability_zone': zone,
        }
        return primitives.encode('Selection', SELECTION_VERSION, data)

    def answer(self, selections, return_objects, numa=None):
        """What ``select_destinations`` sends back: lists of Selection
        primitives, or the legacy dicts."""
        if return_objects:
            return [[self.selection(item, numa) for item in alternates]
                    for alternates in selections]
        return [legacy_dict(alternates[0], self._numa_limits(
            alternates[0], numa)) for alternates in selections]


class NumaRequest:
    """That a Nova request has a NUMA topology, and its network
    metadata (a decoded NovaObject or None)."""

    def __init__(self, network_metadata=None):
        self.network_metadata = network_metadata

    @classmethod
    def of_spec(cls, spec):
        """The NumaRequest of a decoded Nova RequestSpec; None when it
        asks no NUMA topology."""
        if spec.get('numa_topology') is None:
            return None
        return cls(spec.get('network_metadata'))


def legacy_dict(selection, numa_limits=None):
    """Nova's ``{host, nodename, limits}`` of a first choice (its
    SchedulerLimits' ``to_dict``: the limits that are set)."""
    data = limits_primitive(selection.obj_get('limits'), numa_limits)[
        primitives.PREFIX + 'data']
    return {'host': selection.service_host, 'nodename': selection.nodename,
            'limits': {name: value for name, value in data.items()
                       if value is not None}}
