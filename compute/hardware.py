"""The hardware the fake-virt agent reports, read from ``[fake_virt]``.

``cpu_info``, ``numa_topology`` and ``pci_device_pools`` are JSON strings
in the configuration, ``disk_available_least`` an integer; each is read
and checked once, when the agent starts, against the shapes of
:mod:`scheduler.host_cache.host_inputs`. A value that cannot be used stops the
agent with one line naming the option and the problem::

    hardware.configured(lambda name: getattr(CONF.fake_virt, name))
    # ConfigError: [fake_virt] numa_topology: numa_topology.cells[0] must
    # have the keys id, cpuset and memory_mb, ... ('memory_mb')

A per-agent override (the demo and the tests run unlike hosts in one
process) may give the document itself instead of its JSON text.

``disk_available_least`` is the node's value with no instance on it: as
libvirt's does (each instance's disks may grow to their full size), the
value reported drops by the disk of every instance the node runs (see
:func:`reported`).
"""

import json

from scheduler import exception
from scheduler import host_cache

# The options, each holding a JSON document (the others hold a value).
JSON_OPTIONS = ('cpu_info', 'numa_topology', 'pci_device_pools')


def _parsed(name, value):
    if name not in JSON_OPTIONS or not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError as error:
        raise exception.ConfigError(
            reason='[fake_virt] %s is not valid JSON: %s' % (name, error))


def configured(option):
    """``{name: value}`` of the four reported fields (None: unset), from
    ``option(name)``, the agent's value of a ``[fake_virt]`` option;
    raises ConfigError naming the option when one cannot be used."""
    values = {}
    for name, check in host_cache.REPORT_CHECKS.items():
        value = _parsed(name, option(name))
        try:
            values[name] = check(name, value)
        except exception.InvalidRequest as error:
            raise exception.ConfigError(reason='[fake_virt] %s: %s'
                                        % (name, error.kwargs['reason']))
    return values


def reported(hardware, instances_disk_gb):
    """What a node reports: the configured ``hardware`` (see
    :func:`configured`), its ``disk_available_least`` less the
    ``instances_disk_gb`` its instances take."""
    least = hardware['disk_available_least']
    if least is None or not instances_disk_gb:
        return hardware
    return dict(hardware, disk_available_least=least - instances_disk_gb)
