"""What the fake-virt agent reports of its nodes beyond vCPUs, RAM and
disk: inventories of other resource classes, and traits.

Read once when the agent starts (a bad value stops it with ConfigError
naming the option), as Nova's virt drivers read them:

* ``[compute] cpu_dedicated_set``: a ``PCPU`` inventory of as many units
  as the set has CPUs (ratio 1.0, nothing reserved), and with it no
  ``VCPU`` unless ``cpu_shared_set`` is set too; ``[compute]
  cpu_shared_set``: ``VCPU`` is the number of CPUs in that set instead of
  every host CPU (Nova's libvirt driver). The host's CPUs are numbered
  0 .. ``[fake_virt] vcpus`` - 1; both sets must be among them and
  disjoint, and neither may be set with ``[DEFAULT] reserved_host_cpus``.
* ``[fake_virt] traits``: standard (os-traits) or custom names; every
  node also reports ``COMPUTE_NODE``, as Nova's resource tracker adds.
* ``[fake_virt] baremetal_resource_class``: the class a baremetal node is
  one unit of (see :func:`baremetal_inventory`).

Example::

    totals = resources.cpu_totals(16)       # CpuTotals(vcpus=4, pcpus=12)
    inventories = resources.cpu_inventories(totals)   # {'PCPU': {...}}
"""

import collections

import os_resource_classes
import os_traits

from compute import provider_config
from scheduler import conf
from scheduler import exception
from scheduler.numa import cpuspec
from scheduler.numa import errors as numa_errors

CONF = conf.CONF

COMPUTE_NODE_TRAIT = os_traits.COMPUTE_NODE

CpuTotals = collections.namedtuple('CpuTotals', 'vcpus pcpus')


def _cpu_set(name):
    """The CPUs of ``[compute] <name>``, or None when it is unset."""
    spec = getattr(CONF.compute, name)
    if not spec:
        return None
    try:
        cpus = cpuspec.parse_cpu_spec(spec, '[compute] %s' % name)
    except numa_errors.InvalidCPUSpec as error:
        raise exception.ConfigError(reason=str(error))
    if not cpus:
        raise exception.ConfigError(
            reason='no CPUs left after parsing [compute] %s %r'
            % (name, spec))
    return cpus


def cpu_totals(host_cpus):
    """:class:`CpuTotals` of a node whose host has ``host_cpus`` CPUs,
    as Nova's libvirt driver counts them (see the module's docstring)."""
    shared = _cpu_set('cpu_shared_set')
    dedicated = _cpu_set('cpu_dedicated_set')
    if shared is None and dedicated is None:
        return CpuTotals(host_cpus, 0)
    if shared and dedicated and shared & dedicated:
        raise exception.ConfigError(
            reason="[compute] cpu_dedicated_set and [compute] "
                   "cpu_shared_set must be disjoint (both have %s)"
            % cpuspec.format_cpu_spec(shared & dedicated))
    if CONF.reserved_host_cpus:
        raise exception.ConfigError(
            reason='[DEFAULT] reserved_host_cpus cannot be set with '
                   '[compute] cpu_shared_set or cpu_dedicated_set; leave '
                   'the CPUs kept for the host out of the sets instead')
    online = set(range(host_cpus))
    for name, cpus in (('cpu_shared_set', shared),
                       ('cpu_dedicated_set', dedicated)):
        if cpus and not cpus <= online:
            raise exception.ConfigError(
                reason='[compute] %s names CPUs the host does not have: '
                       '%s (it has 0-%d)'
                % (name, cpuspec.format_cpu_spec(cpus - online),
                   host_cpus - 1))
    return CpuTotals(len(shared or ()), len(dedicated or ()))


def _whole_units(total, reserved=0):
    return {'total': total, 'reserved': reserved, 'min_unit': 1,
            'max_unit': total, 'step_size': 1, 'allocation_ratio': 1.0}


def cpu_inventories(totals):
    """``{'PCPU': inventory}`` of a node with dedicated CPUs, else {}."""
    if not totals.pcpus:
        return {}
    return {os_resource_classes.PCPU: _whole_units(totals.pcpus)}


def configured_traits(names):
    """The traits every node reports: ``names`` (refused with
    ConfigError unless standard or custom) and ``COMPUTE_NODE``."""
    standard = set(os_traits.get_traits())
    wrong = sorted(name for name in names
                   if name not in standard
                   and not provider_config.is_custom(name))
    if wrong:
        raise exception.ConfigError(
            reason='[fake_virt] traits: %s neither standard traits nor '
                   'custom ones (CUSTOM_ and capitals, digits, underscores)'
            % ', '.join(wrong))
    return sorted(set(names) | {COMPUTE_NODE_TRAIT})


def baremetal_class(name):
    """The custom resource class of ``[fake_virt]
    baremetal_resource_class`` (Nova's normalization of an Ironic node's
    resource class), or None when it is unset."""
    if not name:
        return None
    normalized = os_resource_classes.normalize_name(name)
    if not provider_config.is_custom(normalized):
        raise exception.ConfigError(
            reason='[fake_virt] baremetal_resource_class %r does not make '
                   'a resource class name' % name)
    return normalized


def baremetal_inventory(resource_class, in_use):
    """A baremetal node's inventory of its class, as Nova's Ironic driver
    reports it: one unit, reserved while an instance is on the node (so
    that it is not given again before the node is cleaned)."""
    return {resource_class: _whole_units(1, reserved=int(in_use))}
