"""Checks of what compute agents send the conductor (ConductorAPI 1.0).

Each function takes an RPC method's arguments as they arrived and returns
them checked, or raises InvalidRequest naming the field, before anything
is written::

    nodes = payloads.checked_nodes(host, nodes)
    updates = payloads.checked_instance_updates(updates)

What is accepted:

* a heartbeat (``service_update``) of one of Gantt's services
  (:data:`SERVICE_TOPICS`) on its own topic;
* inventory (``compute_node_update``): a list of at most :data:`MAX_NODES`
  nodes ``{uuid, nodename, inventory}``, each inventory field of
  ``scheduler.db.compute_nodes.INVENTORY_FIELDS`` with its type and range
  (sizes within ``scheduler.validation``'s bounds, ratios finite and not
  negative, ``host_ip`` an IP address, stats a dict of strings, metrics
  ``{name, value, timestamp, source}`` with a finite value; since
  ConductorAPI 1.2 ``cpu_info``, ``disk_available_least``,
  ``numa_topology`` and ``pci_device_pools`` in the shapes
  :mod:`scheduler.host_cache.host_inputs` describes; since ConductorAPI
  1.5, each node's optional ``inventories`` of classes beyond VCPU,
  MEMORY_MB and DISK_GB and its ``traits``, standard or custom names, see
  :func:`checked_inventories` and :func:`checked_traits`);
* an instance update (``instance_update``): only the spawn report, the
  one transition a compute makes (``vm_state`` ``active``, ``task_state``
  None, optionally ``launched_at`` true and a ``fault`` of at most
  ``validation.MAX_FAULT_LEN`` characters).
"""

import functools
import re

import os_resource_classes
import os_traits
from oslo_utils import netutils

from compute import rpcapi as compute_rpcapi
from conductor import rpcapi as conductor_rpcapi
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import inventories as db_inventories
from scheduler import host_cache
from scheduler import rpcapi as scheduler_rpcapi
from scheduler import validation

# Gantt's binaries, and the topic each serves.
SERVICE_TOPICS = {
    'gantt-compute': compute_rpcapi.RPC_TOPIC,
    'gantt-conductor': conductor_rpcapi.RPC_TOPIC,
    'gantt-scheduler': scheduler_rpcapi.RPC_TOPIC,
}

# Nodes one agent may report (an ironic-like agent has many).
MAX_NODES = 1000
MAX_SUPPORTED_INSTANCES = 100
MAX_IP_LEN = 39

_SIZES = {
    'vcpus': validation.MAX_VCPUS,
    'memory_mb': validation.MAX_MEMORY_MB,
    'local_gb': validation.MAX_DISK_GB,
    'reserved_vcpus': validation.MAX_VCPUS,
    'reserved_memory_mb': validation.MAX_MEMORY_MB,
    'reserved_disk_gb': validation.MAX_DISK_GB,
    'hypervisor_version': validation.MAX_HYPERVISOR_VERSION,
    'num_instances': validation.MAX_INSTANCES_PER_NODE,
    'io_workload': validation.MAX_INSTANCES_PER_NODE,
}
_RATIOS = ('cpu_allocation_ratio', 'ram_allocation_ratio',
           'disk_allocation_ratio')
_METRIC_KEYS = frozenset(('name', 'value', 'timestamp', 'source'))
_NODE_KEYS = frozenset(('uuid', 'nodename', 'inventory'))
_OPTIONAL_NODE_KEYS = frozenset(conductor_rpcapi.NODE_KEYS_NEW_IN_1_5)
# Classes and traits one node may report.
MAX_CLASSES = 100
MAX_TRAITS = 1000
_CUSTOM_NAME = re.compile(r'^CUSTOM_[A-Z0-9_]+$')


def checked_service(host, binary, topic):
    validation.name('host', host)
    validation.choice('binary', binary, tuple(sorted(SERVICE_TOPICS)))
    validation.choice('topic', topic, (SERVICE_TOPICS[binary],))
    return host, binary, topic


def checked_nodes(host, nodes):
    """``nodes`` checked; no two with one uuid or one nodename."""
    validation.name('host', host)
    nodes = validation.sequence('nodes', nodes, MAX_NODES)
    seen = set()
    for index, node in enumerate(nodes):
        field = 'nodes[%d]' % index
        validation.mapping(field, node)
        missing = _NODE_KEYS - set(node)
        extra = set(node) - _NODE_KEYS - _OPTIONAL_NODE_KEYS
        if missing or extra:
            validation.refuse(field, 'must have the keys uuid, nodename '
                              'and inventory, and may have inventories '
                              'and traits')
        validation.uuid('%s.uuid' % field, node['uuid'])
        validation.name('%s.nodename' % field, node['nodename'])
        checked_inventory('%s.inventory' % field, node['inventory'])
        checked_inventories('%s.inventories' % field,
                            node.get('inventories'))
        checked_traits('%s.traits' % field, node.get('traits'))
        for key in ('uuid', 'nodename'):
            if (key, node[key]) in seen:
                validation.refuse('%s.%s' % (field, key),
                                  'is reported twice')
            seen.add((key, node[key]))
    return nodes


def checked_inventory(field, inventory):
    validation.mapping(field, inventory)
    unknown = set(inventory) - set(db_compute_nodes.INVENTORY_FIELDS) - set(
        db_compute_nodes.INITIAL_RATIO_FIELDS)
    if unknown:
        validation.refuse(field, 'has unknown fields %s'
                          % ', '.join(sorted(map(repr, unknown))))
    for name, high in _SIZES.items():
        if name in inventory:
            validation.integer('%s.%s' % (field, name), inventory[name],
                               high=high)
    for name in _RATIOS + db_compute_nodes.INITIAL_RATIO_FIELDS:
        validation.number('%s.%s' % (field, name), inventory.get(name),
                          high=validation.MAX_ALLOCATION_RATIO,
                          nullable=True)
    validation.text('%s.hypervisor_type' % field,
                    inventory.get('hypervisor_type'),
                    validation.MAX_NAME_LEN, nullable=True)
    host_ip = validation.text('%s.host_ip' % field, inventory.get('host_ip'),
                              MAX_IP_LEN, nullable=True)
    if host_ip is not None and not (
            netutils.is_valid_ipv4(host_ip, strict=True)
            or netutils.is_valid_ipv6(host_ip)):
        validation.refuse('%s.host_ip' % field, 'is not an IP address')
    for index, triple in enumerate(validation.sequence(
            '%s.supported_instances' % field,
            inventory.get('supported_instances'), MAX_SUPPORTED_INSTANCES,
            nullable=True) or ()):
        validation.strings('%s.supported_instances[%d]' % (field, index),
                           triple, max_items=3)
    if inventory.get('stats') is not None:
        validation.string_dict('%s.stats' % field, inventory['stats'],
                               max_len=validation.MAX_NAME_LEN)
    _check_metrics('%s.metrics' % field, inventory.get('metrics'))
    for name, check in host_cache.REPORT_CHECKS.items():
        if name in inventory:
            check('%s.%s' % (field, name), inventory[name])
    return inventory


def _is_custom(name):
    return len(name) <= validation.MAX_NAME_LEN and bool(
        _CUSTOM_NAME.match(name))


def checked_inventories(field, inventories):
    """A node's ``{class: inventory}`` beyond the classic classes (None:
    not reported): each class standard (os-resource-classes) or custom,
    not VCPU, MEMORY_MB or DISK_GB (reported in ``inventory``); each
    inventory Placement's fields, ``total`` of at least 1, ``reserved``
    at most ``total``, ``min_unit`` at most ``max_unit``."""
    validation.mapping(field, inventories, max_items=MAX_CLASSES,
                       nullable=True)
    for name, record in (inventories or {}).items():
        where = '%s[%r]' % (field, name)
        validation.text(where, name, validation.MAX_NAME_LEN)
        if name in db_inventories.CLASSIC_CLASSES:
            validation.refuse(where, 'is reported in the inventory '
                              '(vcpus, memory_mb, local_gb), not here')
        if name not in os_resource_classes.STANDARDS and \
                not _is_custom(name):
            validation.refuse(where, 'is neither a standard resource '
                              'class nor a custom one (CUSTOM_ and '
                              'capitals, digits, underscores)')
        validation.mapping(where, record)
        unknown = set(record) - set(db_inventories.FIELDS)
        if unknown or 'total' not in record:
            validation.refuse(where, 'must have a total and may have only '
                              '%s' % ', '.join(db_inventories.FIELDS))
        record = db_inventories.with_defaults(record)
        high = db_inventories.MAX_INT
        total = validation.integer(where + '.total', record['total'], 1,
                                   high)
        validation.integer(where + '.reserved', record['reserved'], 0, total)
        low = validation.integer(where + '.min_unit', record['min_unit'], 1,
                                 high)
        validation.integer(where + '.max_unit', record['max_unit'], low, high)
        validation.integer(where + '.step_size', record['step_size'], 1,
                           high)
        validation.number(where + '.allocation_ratio',
                          record['allocation_ratio'],
                          high=validation.MAX_ALLOCATION_RATIO)
        if record['allocation_ratio'] <= 0:
            validation.refuse(where + '.allocation_ratio',
                              'must be more than 0')
    return inventories


@functools.cache
def _standard_traits():
    return frozenset(os_traits.get_traits())


def checked_traits(field, traits):
    """A node's traits (None: not reported): standard (os-traits) or
    custom names."""
    validation.strings(field, traits, max_items=MAX_TRAITS, nullable=True)
    for index, trait in enumerate(traits or ()):
        if not _is_custom(trait) and trait not in _standard_traits():
            validation.refuse('%s[%d]' % (field, index),
                              '%r is neither a standard trait nor a custom '
                              'one' % trait)
    return traits


def _check_metrics(field, metrics):
    for index, metric in enumerate(validation.sequence(
            field, metrics, nullable=True) or ()):
        item = '%s[%d]' % (field, index)
        validation.mapping(item, metric)
        if set(metric) - _METRIC_KEYS or 'name' not in metric:
            validation.refuse(item, 'must have a name and only the keys '
                              '%s' % ', '.join(sorted(_METRIC_KEYS)))
        validation.text('%s.name' % item, metric['name'],
                        validation.MAX_NAME_LEN)
        validation.number('%s.value' % item, metric.get('value'), low=None,
                          nullable=True)
        for key in ('timestamp', 'source'):
            validation.text('%s.%s' % (item, key), metric.get(key),
                            validation.MAX_NAME_LEN, nullable=True)


def checked_instance_updates(updates):
    """The spawn report a compute may send, checked (see above)."""
    validation.mapping('updates', updates)
    unknown = set(updates) - {'vm_state', 'task_state', 'fault',
                              'launched_at'}
    if unknown:
        validation.refuse('updates', 'may hold only vm_state, task_state, '
                          'fault and launched_at, not %s'
                          % ', '.join(sorted(map(repr, unknown))))
    if 'vm_state' not in updates:
        validation.refuse('updates.vm_state', 'is missing: a compute '
                          'reports a spawn (vm_state active)')
    validation.choice('updates.vm_state', updates['vm_state'],
                      (db_instances.ACTIVE,))
    validation.choice('updates.task_state', updates.get('task_state'),
                      (None,))
    if 'launched_at' in updates:
        validation.choice('updates.launched_at', updates['launched_at'],
                          (True,))
    validation.text('updates.fault', updates.get('fault'),
                    validation.MAX_FAULT_LEN, nullable=True)
    return dict(updates)
