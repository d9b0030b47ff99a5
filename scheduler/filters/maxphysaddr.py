"""Guest physical address bits and mode (``maxphysaddr``), as Nova checks
them at scheduling.

A flavor asks with the extra specs ``hw:maxphysaddr_bits`` and
``hw:maxphysaddr_mode``, an image with the properties
``hw_maxphysaddr_bits`` and ``hw_maxphysaddr_mode``. The host's side is
the ``maxphysaddr`` of its ``cpu_info`` (``{"mode": "emulate", "bits":
46}``). What Nova does, and Gantt with it:

* ComputeCapabilitiesFilter reads ``hw:maxphysaddr_bits=N`` as
  ``capabilities:cpu_info:maxphysaddr:bits='>= N'``: a host passes if it
  reports at least N bits (a host reporting none fails);
* ImagePropertiesFilter checks ``hw_maxphysaddr_bits`` together with the
  image's architecture, hypervisor type and vm mode (only when the image
  asks for one of those): a host reporting no bits passes;
* a mode, from the flavor or the image, requires the
  ``COMPUTE_ADDRESS_SPACE_PASSTHROUGH``/``_EMULATED`` trait in Nova,
  which its libvirt driver reports when libvirt can set the address
  space, the same libvirt that reports ``maxphysaddr`` in ``cpu_info``.
  Gantt has no traits: a host passes when its ``cpu_info`` has a
  ``maxphysaddr`` (ComputeCapabilitiesFilter for the flavor's mode,
  ImagePropertiesFilter for the image's).

A value that is not a number of bits (1 to 64) or not a mode Nova knows
(``passthrough``, ``emulate``) makes the request invalid, naming the
extra spec or property::

    openstack flavor set big-mem --property hw:maxphysaddr_mode=emulate \\
        --property hw:maxphysaddr_bits=42
"""

from scheduler import exception
from scheduler import host_cache

BITS_SPEC = 'hw:maxphysaddr_bits'
MODE_SPEC = 'hw:maxphysaddr_mode'
BITS_PROPERTY = 'hw_maxphysaddr_bits'
MODE_PROPERTY = 'hw_maxphysaddr_mode'
MODES = host_cache.MAXPHYSADDR_MODES
# What ComputeCapabilitiesFilter walks for the host's bits and mode.
BITS_PATH = ('cpu_info', 'maxphysaddr', 'bits')
MODE_PATH = ('cpu_info', 'maxphysaddr', 'mode')
# Met by a host that reports a mode (see the module docstring).
ANY_MODE = ' '.join('<or> %s' % mode for mode in MODES)


def requested_bits(where, value):
    """The bits ``value`` (a string) asks for, or None when unset."""
    if value is None:
        return None
    try:
        bits = int(value)
    except (TypeError, ValueError):
        bits = None
    if bits is None or not 1 <= bits <= 64:
        raise exception.InvalidRequest(
            reason='%s must be a number of bits from 1 to 64, not %r'
            % (where, value))
    return bits


def requested_mode(where, value):
    """The mode ``value`` asks for, or None when unset."""
    if value is None:
        return None
    if value not in MODES:
        raise exception.InvalidRequest(
            reason='%s must be one of %s, not %r'
            % (where, ', '.join(MODES), value))
    return value


def flavor_requirements(extra_specs):
    """``{path: requirement}`` the flavor's maxphysaddr extra specs add to
    ComputeCapabilitiesFilter's."""
    found = {}
    bits = requested_bits('flavor extra spec ' + BITS_SPEC,
                          extra_specs.get(BITS_SPEC))
    if bits is not None:
        found[BITS_PATH] = '>= %d' % bits
    if requested_mode('flavor extra spec ' + MODE_SPEC,
                      extra_specs.get(MODE_SPEC)) is not None:
        found[MODE_PATH] = ANY_MODE
    return found


def host_address(host_state):
    """The host's ``cpu_info.maxphysaddr`` dict, or None."""
    cpu_info = host_state.cpu_info
    address = cpu_info.get('maxphysaddr') if isinstance(cpu_info,
                                                        dict) else None
    return address if isinstance(address, dict) else None


def host_bits(host_state):
    address = host_address(host_state)
    return None if address is None else address.get('bits')


def host_has_mode(host_state):
    """True if the host can set a guest's address space (see above)."""
    address = host_address(host_state)
    return address is not None and address.get('mode') in MODES


def bits_allow(host_bits_, required):
    """Nova's image check: met when nothing is required, when the host
    reports no bits, or when it reports at least as many."""
    if not required or not host_bits_:
        return True
    return host_bits_ >= required
