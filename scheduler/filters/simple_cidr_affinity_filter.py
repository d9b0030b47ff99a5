"""SimpleCIDRAffinityFilter: only hosts whose IP is near a given address.

With the scheduler hint ``build_near_host_ip``, a host passes when its
``host_ip`` lies in the network of that address and the ``cidr`` hint (a
prefix length such as ``/24``, the default). Without the hint every host
passes; a host with no IP, or one that does not parse, fails. A hint that
is not an address (or a prefix) is refused with InvalidRequest::

    gantt-manage server create --flavor m1.small \\
        --hint build_near_host_ip=10.1.20.7 --hint cidr=/22
"""

import ipaddress

from oslo_log import log as logging
import numpy as np

from scheduler import exception
from scheduler import filters

LOG = logging.getLogger(__name__)

_LOW_BITS = (1 << 64) - 1


def network(spec):
    """The requested network, or None when the request names none."""
    address = spec.get_scheduler_hint('build_near_host_ip')
    if not address:
        return None
    cidr = spec.get_scheduler_hint('cidr', '/24')
    if not isinstance(address, str) or not isinstance(cidr, str):
        raise exception.InvalidRequest(
            reason='build_near_host_ip and cidr take one value each')
    try:
        return ipaddress.ip_network(address + cidr, strict=False)
    except ValueError as error:
        raise exception.InvalidRequest(
            reason='build_near_host_ip %s with cidr %s: %s'
            % (address, cidr, error))


def host_address(host_state):
    """The host's IP as an ipaddress object, or None."""
    try:
        return ipaddress.ip_address(host_state.host_ip)
    except ValueError:
        return None


def _address_parts(host_state):
    """``(version, high 64 bits, low 64 bits)`` of the host's IP; version
    0 when it has none."""
    address = host_address(host_state)
    if address is None:
        return (0, 0, 0)
    number = int(address)
    return (address.version, number >> 64, number & _LOW_BITS)


class SimpleCIDRAffinityFilter(filters.BaseHostFilter):
    """Passes hosts in the network of the ``build_near_host_ip`` hint."""

    pure = True

    # A host's address does not change within a request.
    run_filter_once_per_request = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        near = network(spec)
        if near is None:
            return True
        address = host_address(host_state)
        if address is not None and address.version == near.version and (
                address in near):
            return True
        LOG.debug('%(host)s with IP %(ip)s is not in %(net)s',
                  {'host': host_state, 'ip': host_state.host_ip,
                   'net': near})
        return False

    def filter_all(self, host_table, mask, spec):
        if not mask.any():
            return mask  # no host to judge: the hints are not read
        near = network(spec)
        if near is None:
            return mask
        version = host_table.state_column(
            'ip_version', lambda state: _address_parts(state)[0], np.int64)
        high = host_table.state_column(
            'ip_high', lambda state: _address_parts(state)[1], np.uint64)
        low = host_table.state_column(
            'ip_low', lambda state: _address_parts(state)[2], np.uint64)
        net = int(near.network_address)
        net_mask = int(near.netmask)
        return (mask & (version == near.version)
                & ((high & np.uint64(net_mask >> 64))
                   == np.uint64(net >> 64))
                & ((low & np.uint64(net_mask & _LOW_BITS))
                   == np.uint64(net & _LOW_BITS)))
