"""A host's nested providers: its NUMA cells and its PCI devices.

Placement models parts of a compute node as child providers of its root
provider. Gantt shows two kinds, each behind an option, under the root
of :mod:`scheduler.host_cache.host_placement`:

* ``[filter_scheduler] pci_in_placement`` (Nova's option, default off):
  each PCI device pool becomes providers as Nova's compute reports them
  with ``[pci] report_in_placement``: a pool of PFs or of standalone
  devices is one provider per device (inventory 1), a pool of VFs one
  provider holding them all (Gantt's pools do not say which PF a VF
  belongs to). Their class is the pool's ``resource_class`` tag
  (normalised as Nova does), else ``CUSTOM_PCI_<VENDOR>_<PRODUCT>``;
  their traits the pool's ``traits`` tag (comma separated, normalised),
  ``COMPUTE_MANAGED_PCI_DEVICE``, and ``HW_PCI_LIVE_MIGRATABLE`` where
  the pool is tagged ``live_migratable``. Used: the pool's count in the
  host's ``pci_usage``, the first devices of a pool taken first.
* ``[filter_scheduler] numa_in_placement`` (Gantt's, default off): each
  host NUMA cell with dedicated CPUs, on a node that reports ``PCPU``,
  becomes a provider holding the cell's ``PCPU`` (its ``pcpuset``,
  ratio 1, nothing reserved; used: the cell's pinned CPUs), and the root
  no longer shows ``PCPU``. Pinned
  CPUs are always charged to one cell (a claim pins them there), so the
  cells' used amounts are true; VCPU and MEMORY_MB stay on the root,
  because shared vCPUs and the memory of a guest without a NUMA
  topology float over the cells. A PCI provider whose pool is on a
  cell shown here is that cell's child.

Granular groups then land on these providers as on Placement's
(``resources1:PCPU=2``, ``resources2:PCPU=2``, ``group_policy=isolate``:
two distinct cells). Children are named after their root so that a table
derived from another finds them again::

    kids = host_children.of(state, root_uuid, numa=True, pci=True)
    used = host_children.used(state, root_uuid, numa=True, pci=True)
"""

import collections

import os_resource_classes
import os_traits
from oslo_utils import strutils

from scheduler import conf
from scheduler.numa import topology
from scheduler.pci import alias as pci_alias
from scheduler.pci import pools as pci_pools
from scheduler.resources import names

CONF = conf.CONF

PCPU = os_resource_classes.PCPU
MANAGED_TRAIT = os_traits.COMPUTE_MANAGED_PCI_DEVICE
MIGRATABLE_TRAIT = os_traits.HW_PCI_LIVE_MIGRATABLE
# Pools of these types are one provider per device.
_ONE_PER_DEVICE = (pci_alias.TYPE_PF, pci_alias.TYPE_PCI)

# ``inventory``: ``{class: (total, used)}`` (no reservation, ratio 1,
# min_unit 1, max_unit the total, step 1); ``parent`` the uuid of its
# parent (the root's or a cell's).
Child = collections.namedtuple('Child', 'uuid parent inventory traits')


def options():
    """``(numa, pci)``: which children the options ask for."""
    group = CONF.filter_scheduler
    return bool(group.numa_in_placement), bool(group.pci_in_placement)


def cell_uuid(root_uuid, cell_id):
    return '%s:numa%d' % (root_uuid, cell_id)


def pci_uuid(root_uuid, pool_index, device=0):
    return '%s:pci%d.%d' % (root_uuid, pool_index, device)


def _cells(state):
    """``(cells, usage)`` of a state's NUMA topology, or None."""
    cells = topology.parse_host_topology(state.numa_topology)
    if not cells:
        return None
    return cells, topology.parse_usage(cells, state.numa_usage)


def numa_shown(state):
    """Whether the state's cells hold its PCPU: the node reports PCPU
    and some cell has CPUs to pin."""
    if PCPU not in (state.inventories or {}):
        return False
    found = _cells(state)
    return found is not None and any(cell.pcpuset for cell in found[0])


def _cell_children(state, root_uuid):
    found = _cells(state) if numa_shown(state) else None
    if found is None:
        return {}
    cells, usage = found
    return {cell.id: Child(cell_uuid(root_uuid, cell.id), root_uuid,
                           {PCPU: (len(cell.pcpuset),
                                   len(usage[cell.id].pinned_cpus))},
                           frozenset())
            for cell in cells if cell.pcpuset}


def _pool_children(state, root_uuid, cells, pool_index, pool):
    tags = pool.get('tags') or {}
    name = names.pci_class(pool['vendor_id'], pool['product_id'],
                     tags.get('resource_class'))
    traits = names.pci_traits(tags.get('traits')) | {MANAGED_TRAIT}
    if strutils.bool_from_string(tags.get('live_migratable', 'false')):
        traits.add(MIGRATABLE_TRAIT)
    traits = frozenset(traits)
    cell = cells.get(pool.get('numa_node'))
    parent = cell.uuid if cell is not None else root_uuid
    count = pool.get('count', 0)
    used = min(count, (state.pci_usage or {}).get(
        pci_pools.pool_key(pool), 0))
    if tags.get('dev_type') in _ONE_PER_DEVICE:
        return [Child(pci_uuid(root_uuid, pool_index, device), parent,
                      {name: (1, int(device < used))}, traits)
                for device in range(count)]
    if not count:
        return []
    return [Child(pci_uuid(root_uuid, pool_index), parent,
                  {name: (count, used)}, traits)]


def of(state, root_uuid, numa, pci):
    """The children of ``state``'s root provider ``root_uuid``, parents
    before their children."""
    cells = _cell_children(state, root_uuid) if numa else {}
    children = list(cells.values())
    if pci:
        for index, pool in enumerate(state.pci_device_pools or ()):
            children.extend(_pool_children(state, root_uuid, cells, index,
                                           pool))
    return children


def used(state, root_uuid, numa, pci):
    """``{child uuid: {class: used}}`` of ``state``'s children."""
    return {child.uuid: {name: amounts[1]
                         for name, amounts in child.inventory.items()}
            for child in of(state, root_uuid, numa, pci)}


def fixed(state, numa, pci):
    """What of ``state`` its children show, but for the used amounts:
    equal for two states whose children differ in used amounts only."""
    return (state.numa_topology if numa else None,
            tuple(map(pci_pools.pool_key, state.pci_device_pools or ()))
            + tuple(pool.get('count') for pool in state.pci_device_pools
                    or ()) if pci else None)
