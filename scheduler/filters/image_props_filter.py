"""ImagePropertiesFilter: only hosts that can run the requested image.

The image may ask for an architecture (``hw_architecture``), a hypervisor
type (``img_hv_type``) and a virtual machine mode (``hw_vm_mode``); the
older names ``architecture``, ``hypervisor_type`` and ``vm_mode`` are read
when the new ones are absent. Names are canonicalised as Nova does
(``amd64`` is ``x86_64``, ``i386`` is ``i686``, ``xapi`` is ``xen``, ``hv``
is ``hvm``...; see :mod:`scheduler.image_properties`). An image without
an architecture asks for ``[filter_scheduler]
image_properties_default_architecture``, if set.

A host passes when the image asks for none of the three, or when one of
its ``supported_instances`` entries (``[arch, hypervisor type, vm mode]``
triples the compute reports) contains every one the image asks for, and
its ``hypervisor_version`` meets ``img_hv_requested_version`` (such as
``>=6.0, <7.0``; a host reporting no version, or an image asking for none,
passes that part). Versions are integers of three decimal digits per
part: 6002001 is 6.2.1. A host that reports no supported instances fails
an image that asks for anything.

As in Nova, an image's ``hw_maxphysaddr_bits`` is checked with the
supported entry (so only when the image asks for an architecture,
hypervisor type or vm mode): the host's ``cpu_info`` must report at least
that many bits, or none; an image's ``hw_maxphysaddr_mode`` needs a host
whose ``cpu_info`` reports a ``maxphysaddr`` (see
:mod:`scheduler.filters.maxphysaddr`). Example::

    openstack image set --property hw_architecture=aarch64 \\
        --property img_hv_requested_version='>=6.0' debian-arm
"""

import re

from oslo_log import log as logging
import numpy as np

from scheduler.conf import cached
from scheduler import filters
from scheduler.filters import maxphysaddr
from scheduler import image_properties

LOG = logging.getLogger(__name__)

_CONDITION = re.compile(r'^\s*(<=|>=|<|>|!=|==)\s*([0-9]+(?:\.[0-9]+)*)\s*$')
_COMPARE = {
    '<': lambda a, b: a < b, '<=': lambda a, b: a <= b,
    '>': lambda a, b: a > b, '>=': lambda a, b: a >= b,
    '==': lambda a, b: a == b, '!=': lambda a, b: a != b,
}


def wanted(spec):
    """``((arch, hv_type, vm_mode), version requirement)`` the spec's image
    asks for, read as Nova's image-meta model reads them; None in place of
    what it does not ask."""
    properties = image_properties.of_spec(spec)
    arch = properties.get(
        'hw_architecture',
        cached.group('filter_scheduler')
        .image_properties_default_architecture)
    triple = (image_properties.canonical_architecture(arch),
              properties.get('img_hv_type'), properties.get('hw_vm_mode'))
    return triple, properties.get('img_hv_requested_version')


def version_parts(version):
    """``6002001`` -> ``(6, 2, 1)``: three decimal digits per part."""
    parts = []
    while version > 0:
        version, part = divmod(version, 1000)
        parts.insert(0, part)
    return tuple(parts)


def _padded(parts, width):
    return tuple(parts) + (0,) * (width - len(parts))


def version_satisfies(version, requirement):
    """True if the integer ``version`` meets ``requirement``, a comma
    separated list of ``<op> <dotted version>``; an unreadable requirement
    is met by no version."""
    have = version_parts(version)
    for condition in requirement.split(','):
        found = _CONDITION.match(condition)
        if found is None:
            LOG.warning('Cannot read the hypervisor version requirement %r',
                        requirement)
            return False
        need = tuple(int(part) for part in found.group(2).split('.'))
        width = max(len(have), len(need))
        if not _COMPARE[found.group(1)](_padded(have, width),
                                        _padded(need, width)):
            return False
    return True


def _frozen(value):
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, dict):
        return frozenset(value)
    return value


def address_wanted(spec):
    """``(bits, mode)`` the spec's image asks for (None: not asked)."""
    properties = image_properties.of_spec(spec)
    where = 'image property '
    return (maxphysaddr.requested_bits(
                where + maxphysaddr.BITS_PROPERTY,
                properties.get(maxphysaddr.BITS_PROPERTY)),
            maxphysaddr.requested_mode(
                where + maxphysaddr.MODE_PROPERTY,
                properties.get(maxphysaddr.MODE_PROPERTY)))


def host_key(host_state):
    """What the filter reads of a host, hashable."""
    supported = host_state.supported_instances
    if not isinstance(supported, (list, tuple)):
        supported = ()
    bits = maxphysaddr.host_bits(host_state)
    return (_frozen(supported), host_state.hypervisor_version,
            bits if isinstance(bits, int) else None,
            maxphysaddr.host_has_mode(host_state))


def supports(key, triple, requirement, bits=None, mode=None):
    """True if a host of ``key`` (see host_key) can run the image (``bits``
    and ``mode``: see :func:`address_wanted`)."""
    supported, version, host_bits, has_mode = key
    if mode is not None and not has_mode:
        return False
    if not any(triple):
        return True
    if not supported:
        return False
    for entry in supported:
        try:
            fits = all(part in entry for part in triple if part)
        except TypeError:
            fits = False
        if fits and (not version or not requirement
                     or version_satisfies(version, requirement)) and (
                maxphysaddr.bits_allow(host_bits, bits)):
            return True
    return False


class ImagePropertiesFilter(filters.BaseHostFilter):
    """Passes hosts that support the image's architecture, hypervisor
    type, vm mode and hypervisor version."""

    pure = True

    RUN_ON_REBUILD = True

    # Images and host capabilities do not change within a request.
    run_filter_once_per_request = True

    def host_passes(self, host_state, spec):
        triple, requirement = wanted(spec)
        if supports(host_key(host_state), triple, requirement,
                    *address_wanted(spec)):
            return True
        LOG.debug('%(host)s does not support the requested image '
                  'properties %(wanted)s (version %(version)s)',
                  {'host': host_state, 'wanted': triple,
                   'version': requirement})
        return False

    def filter_all(self, host_table, mask, spec):
        triple, requirement = wanted(spec)
        bits, mode = address_wanted(spec)
        if not any(triple) and mode is None:
            return mask
        codes, keys = host_table.grouped('image_properties', host_key)
        answers = np.fromiter(
            (supports(key, triple, requirement, bits, mode)
             for key in keys),
            dtype=np.bool_, count=len(keys))
        return mask & answers[codes]
