"""PciPassthroughFilter: only hosts with the PCI devices the flavor asks for.

A flavor asks for devices with the extra spec ``pci_passthrough:alias``
(see :mod:`scheduler.pci.request`); a host passes if its free devices
(``pci_device_pools`` minus ``pci_usage``) can serve every request at
once (:func:`scheduler.pci.pools.supports`). A request for no device
passes every host without reading anything. NUMA affinity is not checked
here: the instance's NUMA cells are only known once its topology is fitted
to the host. Example::

    [pci]
    alias = {"name": "qat", "vendor_id": "8086", "product_id": "0443"}

    openstack flavor set qat.small --property pci_passthrough:alias=qat:2

passes the hosts with two free 8086:0443 devices. A host whose pools or
usage cannot be read fails, with a warning; a request naming an alias
that is not defined, or a malformed count, raises InvalidRequest.

The batch path drops first the hosts with fewer free devices in all than
the requests need, then decides once for each distinct pair of pools and
usage among the hosts left.
"""

import json

from oslo_log import log as logging
import numpy as np

from scheduler import filters
from scheduler.pci import errors
from scheduler.pci import pools as pci_pools
from scheduler.pci import request as pci_request

LOG = logging.getLogger(__name__)

_UNREADABLE = (errors.PciPoolInvalid, errors.PciUsageInvalid)


def pci_state(host_state):
    """``(pci_device_pools, pci_usage)`` of a host, ``([], {})`` if it
    has none."""
    return (getattr(host_state, 'pci_device_pools', None) or [],
            getattr(host_state, 'pci_usage', None) or {})


def free_devices(host_state):
    """Free PCI devices of a host in all, 0 if they cannot be read."""
    device_pools, usage = pci_state(host_state)
    try:
        return pci_pools.free_devices_total(device_pools, usage)
    except _UNREADABLE:
        return 0


def _pci_key(host_state):
    """A hashable key equal for hosts with equal pools and usage."""
    try:
        return json.dumps(pci_state(host_state), sort_keys=True)
    except (TypeError, ValueError):
        # Decided on its own (holding the state keeps its identity).
        return ('host', host_state)


def _supports(host_state, requests):
    device_pools, usage = pci_state(host_state)
    try:
        return pci_pools.supports(device_pools, usage, requests)
    except _UNREADABLE as error:
        LOG.warning('%(host)s fails PCI requests: %(error)s',
                    {'host': host_state, 'error': error})
        return False


class PciPassthroughFilter(filters.BaseHostFilter):
    """Passes hosts with free PCI devices for the flavor's aliases."""

    pure = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        requests = pci_request.requests_from_spec(spec)
        if not requests:
            return True
        if _supports(host_state, requests):
            return True
        LOG.debug("%(host)s doesn't have the required PCI devices "
                  "(%(requests)s)", {'host': host_state,
                                     'requests': requests})
        return False

    def filter_all(self, host_table, mask, spec):
        if not mask.any():
            return mask
        requests = pci_request.requests_from_spec(spec)
        if not requests:
            return mask
        free = host_table.state_column('pci_free_devices', free_devices,
                                       np.int64)
        mask = mask & (free >= pci_request.devices_needed(requests))
        if not mask.any():
            return mask
        return filters.decide_per_group(
            host_table, mask, 'pci_pools_and_usage', _pci_key,
            lambda state: _supports(state, requests))
