"""Baremetal nodes of the fake-virt agent: what an Ironic compute reports.

With ``[fake_virt] baremetal_nodes = N`` a gantt-compute stands for a
nova-compute of Ironic: it runs N baremetal nodes (``<host>-bm-1`` ...)
instead of its ``node_count`` virtual nodes. Each reports the
``[fake_virt]`` vCPUs, RAM and disk, with what Nova's Ironic driver
reports for a node: hypervisor type ``ironic``, allocation ratios of 1.0,
nothing reserved, ``<arch>:baremetal:hvm`` as supported instances, its
whole disk as ``disk_available_least`` and no ``cpu_info``, NUMA topology
or PCI devices. A
scheduler with ``[scheduler] host_manager = ironic_host_manager`` then
gives each node to one instance only::

    [fake_virt]
    baremetal_nodes = 4
    vcpus = 8
    memory_mb = 16384
    local_gb = 200

With ``[fake_virt] baremetal_resource_class`` the nodes report what
Nova's Ironic driver has reported since Stein instead: no vCPUs, RAM or
disk, and one unit of the custom resource class made of it (see
:func:`compute.resources.baremetal_inventory`), which flavors ask for.
"""

HYPERVISOR_TYPE = 'ironic'
# What Nova's Ironic driver put in supported_instances for a node's
# architecture.
BAREMETAL_HV_TYPE = 'baremetal'
VM_MODE = 'hvm'
DEFAULT_ARCH = 'x86_64'

_WHOLE_MACHINE = {
    'reserved_vcpus': 0,
    'reserved_memory_mb': 0,
    'reserved_disk_gb': 0,
    'cpu_allocation_ratio': 1.0,
    'ram_allocation_ratio': 1.0,
    'disk_allocation_ratio': 1.0,
    'initial_cpu_allocation_ratio': 1.0,
    'initial_ram_allocation_ratio': 1.0,
    'initial_disk_allocation_ratio': 1.0,
    'hypervisor_type': HYPERVISOR_TYPE,
    # Nova's Ironic driver reports no CPU description, NUMA topology or
    # PCI devices for a node (its capabilities go in its stats).
    'cpu_info': None,
    'numa_topology': None,
    'pci_device_pools': None,
}


def node_names(host, count):
    """The names of a host's ``count`` baremetal nodes."""
    return ['%s-bm-%d' % (host, index) for index in range(1, count + 1)]


# What Nova's Ironic driver reports of a node since it reports a
# resource class (Stein): its capacity is that one unit.
_NO_CLASSIC_RESOURCES = {'vcpus': 0, 'memory_mb': 0, 'local_gb': 0}


def inventory(virtual, resource_class=None):
    """A baremetal node's inventory, from the one the agent would report
    for a virtual node (``virtual``, which is not changed): the same
    capacity and stats, as Nova's Ironic driver reports them; with a
    ``resource_class``, no vCPUs, RAM or disk."""
    node = dict(virtual)
    node.update(_WHOLE_MACHINE)
    if resource_class:
        node.update(_NO_CLASSIC_RESOURCES)
    arches = sorted({entry[0] for entry in virtual['supported_instances']}
                    or {DEFAULT_ARCH})
    node['supported_instances'] = [[arch, BAREMETAL_HV_TYPE, VM_MODE]
                                   for arch in arches]
    # As the Ironic driver reports it for a node that is not deployed
    # (local_gb - local_gb_used); a deployed one is taken whole anyway.
    node['disk_available_least'] = node['local_gb']
    return node
