"""What an instance asks of a host's hardware beyond vCPUs, RAM and disk,
and where it fits: NUMA cells, pinned CPUs and huge pages
(:mod:`scheduler.numa`) and PCI devices (:mod:`scheduler.pci`), fitted
together as Nova fits them (the devices on the instance's NUMA cells when
its PCI NUMA policy asks).

The NUMATopologyFilter, the PciPassthroughFilter and the claims all go
through :meth:`Request.fit`, so a host a filter passed is one the claim
can take, and a claim re-fits on the node's usage as it is in SQL at the
time (the row locked), so two schedulers never pin one CPU or hand out
one device twice. What a claim took is a *record*, kept on its
allocation, and :func:`release` gives exactly that back::

    wanted = hardware.Request.from_spec(spec)   # None: nothing to fit
    host = hardware.Host.of_state(host_state)
    record = wanted.fit(host)                   # None: does not fit
    columns = hardware.apply(host, record)      # {'numa_usage': ...}
    columns = hardware.release(host, record)    # the exact inverse

The scheduler's host cache takes the same fit when it reserves a host
for a request (:func:`reserve`), so that the next request of the process
sees the CPUs, pages and devices as taken before the claim's SQL returns.

A record is a JSON document: ``{"numa": <scheduler.numa Placement as a
dict, or null>, "pci": {<pool key>: <devices>} or null}``.
"""

import collections
import json

from scheduler.numa import capacity
from scheduler.numa import errors as numa_errors
from scheduler.numa import fitting
from scheduler.numa import placement as numa_placement
from scheduler.numa import request as numa_request
from scheduler.numa import topology as numa_topology
from scheduler.numa import usage as numa_usage
from scheduler.pci import errors as pci_errors
from scheduler.pci import pools as pci_pools
from scheduler.pci import request as pci_request

# The keys a NUMA or PCI request can come from: flavor extra specs
# ``hw:*``, ``resources:PCPU`` and the PCI alias; image ``hw_*``.
_EXTRA_SPEC_PREFIXES = ('hw:', 'resources:', pci_request.ALIAS_EXTRA_SPEC)
_IMAGE_PREFIX = 'hw_'

# A host's hardware and usage, as a HostState or a compute_nodes row has
# them (JSON documents parsed or not), and its allocation ratios.
Host = collections.namedtuple(
    'Host', 'numa_topology numa_usage pci_device_pools pci_usage '
            'cpu_allocation_ratio ram_allocation_ratio')


def _of_state(state):
    return Host(getattr(state, 'numa_topology', None),
                getattr(state, 'numa_usage', None),
                getattr(state, 'pci_device_pools', None) or [],
                getattr(state, 'pci_usage', None) or {},
                state.cpu_allocation_ratio, state.ram_allocation_ratio)


Host.of_state = staticmethod(_of_state)

# What fitting, applying or releasing raise when a host's documents or
# usage do not allow it (unreadable, or already taken).
HOST_ERRORS = (numa_errors.InvalidHostNUMATopology,
               numa_errors.NUMAUsageConflict, numa_errors.InvalidNUMAPlacement,
               pci_errors.PciPoolInvalid, pci_errors.PciUsageInvalid,
               pci_errors.PciDevicesUnavailable)


class Request:
    """The NUMA request (or None) and the PCI requests (or ()) of one
    instance."""

    __slots__ = ('numa', 'pci')

    def __init__(self, numa=None, pci=()):
        self.numa = numa
        self.pci = tuple(pci)

    @classmethod
    def from_spec(cls, spec):
        """The request of ``spec``'s flavor and image; None when it asks
        for no NUMA placement and no PCI device (the common case).

        :raises: InvalidRequest subclasses naming a malformed extra spec
            or image property, or an unknown PCI alias.
        """
        flavor = spec.flavor
        image = spec.obj_get('image')
        extra_specs = flavor.obj_get('extra_specs', {})
        image_props = image.obj_get('properties', {}) if image else {}
        if not (any(key.startswith(_EXTRA_SPEC_PREFIXES)
                    for key in extra_specs)
                or any(key.startswith(_IMAGE_PREFIX) for key in image_props)):
            # Nothing a NUMA or PCI request is made of: every request
            # pays this check, few pay the parsing.
            return None
        numa = numa_request.get_request(
            flavor.vcpus, flavor.memory_mb, dict(extra_specs),
            dict(image_props))
        pci = pci_request.requests_from_spec(spec)
        if numa is None and not pci:
            return None
        return cls(numa, pci)

    def fit(self, host):
        """Where the instance fits on ``host`` (a :class:`Host`), as a
        record; None if it does not."""
        cells = None
        found = None
        if self.numa is not None:
            found = fitting.fit_instance(
                host.numa_topology, host.numa_usage, self.numa,
                _limits(host), self._pci_cells(host) if self.pci else None,
                pci_free=_pci_free_by_cell(host), wants_pci=bool(self.pci))
            if found is None:
                return None
            cells = found.host_cells
        delta = None
        if self.pci:
            delta = pci_pools.allocate(
                host.pci_device_pools, host.pci_usage, self.pci,
                numa_cells=cells, host_topology=host.numa_topology)
            if delta is None:
                return None
        return {'numa': None if found is None else found.to_dict(),
                'pci': delta}

    def _pci_cells(self, host):
        def allowed(cells):
            return pci_pools.supports(
                host.pci_device_pools, host.pci_usage, self.pci,
                numa_cells=cells, host_topology=host.numa_topology)
        return allowed


def _pci_free_by_cell(host):
    """``{NUMA node: free devices}`` when the host has PCI pools (they
    order its cells, see :func:`scheduler.numa.fitting.fit_instance`);
    None when it has none, or pools that cannot be read (no order)."""
    if not host.pci_device_pools:
        return None
    try:
        return pci_pools.free_by_numa_node(host.pci_device_pools,
                                           host.pci_usage)
    except (pci_errors.PciPoolInvalid, pci_errors.PciUsageInvalid):
        return None


def _limits(host):
    return capacity.Limits(float(host.cpu_allocation_ratio),
                           float(host.ram_allocation_ratio))


def apply(host, record):
    """The usage columns after taking ``record`` on ``host``:
    ``{'numa_usage': ..., 'pci_usage': ...}`` (only the ones it changes).

    :raises: NUMAUsageConflict, PciDevicesUnavailable: it no longer fits.
    """
    columns = {}
    if record.get('numa'):
        columns['numa_usage'] = numa_usage.apply_placement(
            host.numa_topology, host.numa_usage,
            numa_placement.Placement.from_dict(record['numa']),
            _limits(host))
    if record.get('pci'):
        columns['pci_usage'] = pci_pools.apply(
            host.pci_usage, record['pci'], host.pci_device_pools)
    return columns


def reserve(host, wanted):
    """Where ``wanted`` fits on ``host``, as a claim would fit it (a
    record for :func:`apply`); None when it does not fit or the host's
    documents cannot be read (the claim in SQL decides then)."""
    try:
        return wanted.fit(host)
    except HOST_ERRORS:
        return None


def release(host, record):
    """The usage columns after giving ``record`` back on ``host``."""
    columns = {}
    if record.get('numa'):
        columns['numa_usage'] = numa_usage.release_placement(
            host.numa_topology, host.numa_usage,
            numa_placement.Placement.from_dict(record['numa']))
    if record.get('pci'):
        columns['pci_usage'] = pci_pools.release(host.pci_usage,
                                                 record['pci'])
    return columns


def usage_problems(host, records):
    """What is wrong with ``host``'s NUMA and PCI usage, given the records
    of every allocation on it: the usage they add up to (from nothing, in
    any order) must be the usage the node holds. A list of sentences,
    empty when all is well (``gantt-manage db check``)."""
    cells = numa_topology.parse_host_topology(host.numa_topology) or ()
    numa_sum, pci_sum = None, {}
    try:
        for record in records:
            if record.get('numa'):
                numa_sum = numa_usage.apply_placement(
                    host.numa_topology, numa_sum,
                    numa_placement.Placement.from_dict(record['numa']))
            if record.get('pci'):
                pci_sum = pci_pools.apply(pci_sum, record['pci'],
                                          host.pci_device_pools)
    except (numa_errors.NUMAUsageConflict, numa_errors.InvalidNUMAPlacement,
            pci_errors.PciDevicesUnavailable) as error:
        return ['the claims on it overlap: %s' % error]
    problems = []
    if numa_topology.normalize_usage(cells, host.numa_usage) != \
            numa_topology.normalize_usage(cells, numa_sum):
        problems.append('numa_usage %s but the claims add up to %s' % (
            _compact(host.numa_usage), _compact(numa_sum)))
    if pci_pools.normalized_usage(host.pci_usage) != \
            pci_pools.normalized_usage(pci_sum):
        problems.append('pci_usage %s but the claims add up to %s' % (
            _compact(host.pci_usage), _compact(pci_sum)))
    return problems


def _compact(value):
    return json.dumps(value, sort_keys=True, separators=(',', ':'))
