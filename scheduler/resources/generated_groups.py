"""Request groups made from other parts of a request than its
``resources``/``trait`` extra specs, for nested providers.

* PCI (``[filter_scheduler] pci_in_placement``, Nova's): each device a
  flavor's ``pci_passthrough:alias`` asks for is a group of its own,
  ``{class: 1}`` with the alias's traits required, as Nova's
  ``RequestSpec.generate_request_groups_from_pci_requests`` makes them
  (one group per device, so that two devices may come from two PFs).
  An alias with several entries cannot say which class to ask, and is
  refused, as Nova refuses it.
* NUMA (``[filter_scheduler] numa_in_placement``, Gantt's): a guest of
  several NUMA nodes with dedicated CPUs asks each node's PCPU in a
  group of its own (``numa-0``, ``numa-1``...), the emulator threads'
  extra CPU with the first, since the host's cells, not its node, hold
  PCPU then.

Where the flavor itself has at most one suffixed group and sets no
``group_policy``, groups made here get ``'none'``, as Nova defaults it for
groups that come from outside the flavor::

    groups = generated_groups.pci_groups(spec)
    suffixes = generated_groups.numa_suffixes(numa_request)
"""

import os_resource_classes

from scheduler import conf
from scheduler import exception
from scheduler.numa import request as numa_request
from scheduler.pci import alias as pci_alias
from scheduler.pci import request as pci_request
from scheduler.resources import names
from scheduler.resources import request

CONF = conf.CONF

PCPU = os_resource_classes.PCPU
NUMA_SUFFIX = 'numa-%d'
# Suffixes: within Nova's 1 to 64 of a-zA-Z0-9_-; a flavor using one for
# a group of its own would merge with it (its own, asked beside).
PCI_PREFIX = 'pci-'
PCI_SUFFIX = PCI_PREFIX + '%d-%d'


def numa_split(numa):
    """``{suffix: PCPU amount}`` for a pinned guest of several NUMA nodes
    when ``numa_in_placement`` is on, else None (PCPU stays in the
    unsuffixed group)."""
    if (not CONF.filter_scheduler.numa_in_placement or numa is None
            or not numa.pinned or len(numa.cells) < 2):
        return None
    split = {}
    for index, cell in enumerate(numa.cells):
        amount = (len(cell.pcpuset) if numa.cpu_policy == numa_request.MIXED
                  else cell.vcpus)
        if index == 0:
            amount += numa.emulator_cpus
        split[NUMA_SUFFIX % index] = amount
    return split


def pci_groups(spec):
    """The request groups of the PCI devices ``spec``'s flavor asks for,
    when ``pci_in_placement`` is on; ``()`` otherwise.

    :raises: InvalidResourceRequest for an alias of several entries, and
        what reading the alias raises (PciRequestAliasNotDefined...).
    """
    if not CONF.filter_scheduler.pci_in_placement:
        return ()
    requests = pci_request.requests_from_spec(spec)
    if not requests:
        return ()
    aliases = pci_alias.get_aliases()
    groups = []
    for number, asked in enumerate(requests):
        alias = aliases[asked.alias_name]
        if len(alias.specs) != 1:
            raise exception.InvalidResourceRequest(
                reason='PCI alias %r has %d entries; with [filter_scheduler]'
                ' pci_in_placement an alias must have exactly one, so that '
                'it names one resource class' % (alias.name,
                                                  len(alias.specs)))
        device = alias.specs[0]
        resource_class, traits = (alias.placement[0] if alias.placement
                                  else (None, None))
        name = names.pci_class(device['vendor_id'],
                                       device['product_id'], resource_class)
        required = frozenset(names.pci_traits(traits))
        for index in range(asked.count):
            groups.append(request.RequestGroup(
                suffix=PCI_SUFFIX % (number, index), resources={name: 1},
                required_traits=required))
    return tuple(groups)


def node_resources(resource_request):
    """``{class: amount}`` a claim charges to the node's inventories:
    every group's but the PCI devices' (their claim takes devices from
    the host's pools)."""
    total = {}
    for group in resource_request.groups:
        if group.suffix.startswith(PCI_PREFIX):
            continue
        for name, amount in group.resources.items():
            total[name] = total.get(name, 0) + amount
    return total
