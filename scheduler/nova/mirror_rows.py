"""What the mirror should hold: Nova's state and Placement's providers as
rows of Gantt's schema.

:func:`desired` joins one read of Nova's databases
(:class:`scheduler.nova.nova_reader.NovaState`) with one of Placement
(:meth:`scheduler.nova.placement_reader.ProviderReader.read`) into a
:class:`Desired`, which :mod:`scheduler.nova.mirror_write` writes::

    wanted = mirror_rows.desired(nova_state, providers)
    wanted.nodes[uuid]['vcpus_used']

The mapping, and why:

* a compute node is mirrored when Placement has a root provider of its
  uuid (Nova's resource tracker makes it): without one, Nova's scheduler
  gets no allocation candidate on it, and neither should Gantt;
* ``VCPU``, ``MEMORY_MB`` and ``DISK_GB`` of the provider give the
  node's columns (total, reserved, allocation ratio; its usage the
  ``*_used`` ones); every other class of the root provider is a row of
  ``compute_node_inventories`` (with min/max unit, step and usage); its
  traits are ``compute_node_traits`` but ``COMPUTE_STATUS_DISABLED``,
  which the host cache derives from the service as Nova sets it;
* nested providers (a VGPU's, a PCI device's in Placement) are not
  mirrored: the root's usage is its own (Placement's usages of a
  provider never include its children's), so nothing is counted twice,
  but the classes only children have are not offered. Sharing providers
  (no compute node of their uuid) are not mirrored either;
* a host's aggregates are Nova's host aggregates it belongs to, and the
  Placement aggregates of its nodes' root providers (``member_of``
  requests name these): an aggregate only Placement knows is mirrored
  with the name ``placement:<uuid>`` and no metadata;
* a node is ``mapped`` when Nova's API database maps its host to a
  cell; services are mirrored as the host cache's compute binary, with
  Nova's heartbeat (``last_seen_up``, else ``created_at``) so that the
  cache judges liveness as Nova's servicegroup DB driver does.
"""

from oslo_log import log as logging

from scheduler import exception
from scheduler import host_cache

LOG = logging.getLogger(__name__)

# Placement's classes with columns of their own in compute_nodes:
# class -> (total, reserved, ratio, used) columns.
CLASSIC = {
    'VCPU': ('vcpus', 'reserved_vcpus', 'cpu_allocation_ratio',
             'vcpus_used'),
    'MEMORY_MB': ('memory_mb', 'reserved_memory_mb', 'ram_allocation_ratio',
                  'memory_mb_used'),
    'DISK_GB': ('local_gb', 'reserved_disk_gb', 'disk_allocation_ratio',
                'local_gb_used'),
}
# The compute_nodes columns the mirror writes (and compares).
NODE_COLUMNS = (
    'host', 'hypervisor_hostname', 'hypervisor_type', 'hypervisor_version',
    'host_ip', 'cpu_info', 'disk_available_least', 'num_instances',
    'io_workload', 'mapped') + tuple(
        column for columns in CLASSIC.values() for column in columns)
SERVICE_COLUMNS = ('disabled', 'disabled_reason', 'forced_down',
                   'last_seen_up', 'created_at')
INSTANCE_COLUMNS = ('host', 'node', 'vm_state', 'task_state', 'display_name',
                    'project_id', 'user_id', 'availability_zone')
# A class beyond the classic ones: the values of its inventory row.
INVENTORY_FIELDS = ('total', 'reserved', 'min_unit', 'max_unit',
                    'step_size', 'allocation_ratio', 'used')
PLACEMENT_AGGREGATE_NAME = 'placement:%s'


class Desired:
    """The rows the mirror should hold, keyed as the mirror matches them:
    ``nodes`` ``{uuid: {column: value}}``, ``inventories`` ``{node uuid:
    {class: (INVENTORY_FIELDS values)}}``, ``traits`` ``{node uuid:
    frozenset}``, ``services`` ``{host: {column: value}}``, ``instances``
    ``{uuid: {column: value}}``, ``aggregates`` ``{uuid: (name,
    created_at, frozenset of hosts, {key: value})}``; and what was left
    out (``skipped``: ``{why: count}``)."""

    def __init__(self):
        self.nodes = {}
        self.inventories = {}
        self.traits = {}
        self.services = {}
        self.instances = {}
        self.aggregates = {}
        self.skipped = {}

    def skip(self, why):
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _checked_cpu_info(value, where):
    """Nova's cpu_info as the host cache takes it, or None."""
    if value is None:
        return None
    try:
        host_cache.REPORT_CHECKS['cpu_info']('cpu_info', value)
    except exception.InvalidRequest as error:
        LOG.debug('Ignoring the cpu_info of %s: %s', where, error)
        return None
    return value


# Providers whose classic units were said not to be honoured, and the
# units said: one warning per provider and change.
_UNITS_WARNED = {}


def _warn_units(provider):
    """The host table keeps VCPU, MEMORY_MB and DISK_GB as columns, with
    Placement's default units (min_unit 1, max_unit the total, step_size
    1), which Nova's virt drivers report. Other units are not honoured by
    the candidates (Placement still refuses a claim beyond them: the
    scheduler then tries its next host): say so, once."""
    odd = {}
    for name in CLASSIC:
        inventory = provider.inventories.get(name)
        if inventory is None:
            continue
        units = (inventory.get('min_unit', 1),
                 inventory.get('max_unit', inventory['total']),
                 inventory.get('step_size', 1))
        if units != (1, inventory['total'], 1):
            odd[name] = units
    if odd and _UNITS_WARNED.get(provider.uuid) != odd:
        LOG.warning(
            'Provider %(uuid)s has %(classes)s: Gantt\'s host table assumes '
            'min_unit 1, max_unit the total and step_size 1 for these '
            'classes, so it may offer the node for a request Placement '
            'then refuses (the claim moves on to the next host)',
            {'uuid': provider.uuid, 'classes': ', '.join(
                '%s (min_unit %d, max_unit %d, step_size %d)'
                % ((name,) + units) for name, units in sorted(odd.items()))})
    if odd:
        _UNITS_WARNED[provider.uuid] = odd


def _classic_columns(provider):
    _warn_units(provider)
    columns = {}
    for name, (total, reserved, ratio, used) in CLASSIC.items():
        inventory = provider.inventories.get(name)
        if inventory is None:
            columns.update({total: 0, reserved: 0, ratio: None, used: 0})
            continue
        columns[total] = inventory['total']
        columns[reserved] = inventory.get('reserved', 0)
        columns[ratio] = float(inventory.get('allocation_ratio', 1.0))
        columns[used] = provider.usages.get(name, 0)
    return columns


def _other_inventories(provider):
    inventories = {}
    for name, inventory in provider.inventories.items():
        if name in CLASSIC:
            continue
        inventories[name] = (
            inventory['total'], inventory.get('reserved', 0),
            inventory.get('min_unit', 1),
            inventory.get('max_unit', inventory['total']),
            inventory.get('step_size', 1),
            float(inventory.get('allocation_ratio', 1.0)),
            provider.usages.get(name, 0))
    return inventories


def desired(state, providers):
    """The :class:`Desired` rows of ``state`` (a NovaState) and
    ``providers`` (``{uuid: Provider}``)."""
    wanted = Desired()
    placement_hosts = {}
    for uuid, node in state.nodes.items():
        provider = providers.get(uuid)
        if provider is None or provider.parent is not None:
            wanted.skip('compute nodes without a root provider')
            continue
        if not node['host'] or not node['hypervisor_hostname']:
            wanted.skip('compute nodes without a host or node name')
            continue
        row = {name: node[name] for name in (
            'host', 'hypervisor_hostname', 'hypervisor_type',
            'hypervisor_version', 'host_ip', 'disk_available_least',
            'num_instances', 'io_workload')}
        row['cpu_info'] = _checked_cpu_info(node['cpu_info'],
                                            'node %s' % uuid)
        row['mapped'] = node['host'] in state.host_cells
        row.update(_classic_columns(provider))
        wanted.nodes[uuid] = row
        wanted.inventories[uuid] = _other_inventories(provider)
        wanted.traits[uuid] = frozenset(
            provider.traits - {host_cache.COMPUTE_STATUS_DISABLED})
        for aggregate in provider.aggregates:
            placement_hosts.setdefault(aggregate, set()).add(node['host'])
    for provider in providers.values():
        if provider.parent is not None:
            wanted.skip('nested providers')
    wanted.services = {host: dict(service)
                       for host, service in state.services.items()}
    wanted.instances = {uuid: dict(instance)
                        for uuid, instance in state.instances.items()}
    for uuid, (name, created_at, hosts, metadata) in \
            state.aggregates.items():
        hosts = set(hosts) | placement_hosts.pop(uuid, set())
        wanted.aggregates[uuid] = (name, created_at, frozenset(hosts),
                                   dict(metadata))
    for uuid, hosts in placement_hosts.items():
        wanted.aggregates[uuid] = (PLACEMENT_AGGREGATE_NAME % uuid, None,
                                   frozenset(hosts), {})
    return wanted


_PARTS = ('nodes', 'inventories', 'traits', 'services', 'instances',
          'aggregates')


def seen_changes(previous, wanted):
    """What changed from ``previous`` to ``wanted`` (two Desired; None:
    nothing known before) as a host cache must hear of it, whoever wrote
    the mirror (the forked workers of a scheduler share one):
    ``(anything changed, nodes and services gone, hosts whose instances
    changed)``."""
    if previous is None:
        return False, 0, set()
    changed = any(getattr(previous, name) != getattr(wanted, name)
                  for name in _PARTS)
    removed = (len(previous.nodes.keys() - wanted.nodes.keys())
               + len(previous.services.keys() - wanted.services.keys()))
    hosts = set()
    if previous.instances != wanted.instances:
        for uuid in previous.instances.keys() | wanted.instances.keys():
            old, new = previous.instances.get(uuid), wanted.instances.get(uuid)
            if old != new:
                hosts.update(instance['host'] for instance in (old, new)
                             if instance and instance['host'])
    return changed, removed, hosts
