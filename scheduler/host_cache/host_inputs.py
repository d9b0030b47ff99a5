"""The hardware a compute reports beyond its sizes, checked and parsed.

Four documents come with each inventory report, under Nova's names, and
are stored as they came in ``compute_nodes`` (JSON text; NULL when not
reported):

* ``cpu_info``, libvirt's description of the host CPU::

      {"arch": "x86_64", "model": "Skylake-Client-IBRS", "vendor": "Intel",
       "features": ["sse4.2", "avx2"],
       "topology": {"sockets": 1, "cores": 4, "threads": 2},
       "maxphysaddr": {"mode": "emulate", "bits": 46}}

* ``numa_topology``, the host's NUMA cells; ``cpuset`` holds the CPUs of
  floating vCPUs (Nova's ``cpu_shared_set``), ``pcpuset`` those of pinned
  ones (``cpu_dedicated_set``); ``socket`` defaults to the cell's id,
  ``siblings`` lists hyperthread siblings (empty: no SMT), a page's
  ``reserved`` defaults to 0::

      {"cells": [{"id": 0, "socket": 0, "cpuset": [0, 1], "pcpuset": [2, 3],
                  "memory_mb": 16384, "siblings": [[0, 1], [2, 3]],
                  "mempages": [{"size_kb": 4, "total": 3670016},
                               {"size_kb": 2048, "total": 1024}]}]}

* ``pci_device_pools``, the host's PCI devices grouped in pools; ``count``
  is every device of the pool, ``numa_node`` may be None::

      [{"vendor_id": "8086", "product_id": "154d", "numa_node": 0,
        "count": 4, "tags": {"dev_type": "type-PF"}}]

* ``disk_available_least``, an integer number of GiB (may be negative:
  Nova's meaning, the disk left once every image is fully grown).

Claims alone write ``numa_usage`` and ``pci_usage``. The ``check_*``
functions raise InvalidRequest naming the field and the problem (the
conductor checks reports with them, the compute agent its options);
:func:`from_row` gives the scheduler's parsed values, sharing one object
between hosts that report the same document and one empty value between
those that report none::

    host_inputs.check_numa_topology('numa_topology', topology)
    cpu_info, least, topology, usage, pools, pci_usage = (
        host_inputs.from_row(row))
"""

import json

from oslo_log import log as logging

from scheduler import validation

LOG = logging.getLogger(__name__)

# What one report may hold: CPU ids, cells, pools, page sizes.
MAX_CPU_ID = (1 << 16) - 1
MAX_CELLS = 1024
MAX_POOLS = 1000
MAX_PAGE_KB = 1 << 30
MAX_PAGES = 1 << 50
MAX_PCI_DEVICES = 1 << 20
MAXPHYSADDR_MODES = ('passthrough', 'emulate')

# The values of a host that reports nothing (shared: HostStates are
# read-only).
NO_CPU_INFO = {}
NO_POOLS = []
NO_PCI_USAGE = {}

_CELL_KEYS = frozenset(('id', 'socket', 'cpuset', 'pcpuset', 'memory_mb',
                        'siblings', 'mempages'))
_PAGE_KEYS = frozenset(('size_kb', 'total', 'reserved'))
_POOL_KEYS = frozenset(('vendor_id', 'product_id', 'numa_node', 'count',
                        'tags'))
_TOPOLOGY_KEYS = ('sockets', 'cores', 'threads')


def check_cpu_info(field, value):
    """``cpu_info`` checked: a dict (None: not reported) whose known keys
    have their types; other keys are kept as they came."""
    if value is None:
        return None
    validation.mapping(field, value)
    validation.depth(field, value)
    for key in ('arch', 'model', 'vendor'):
        validation.text('%s.%s' % (field, key), value.get(key),
                        validation.MAX_NAME_LEN, nullable=True)
    validation.strings('%s.features' % field, value.get('features'),
                       nullable=True)
    topology = validation.mapping('%s.topology' % field,
                                  value.get('topology'), nullable=True)
    for key in _TOPOLOGY_KEYS if topology else ():
        validation.integer('%s.topology.%s' % (field, key),
                           topology.get(key), high=MAX_CPU_ID + 1,
                           nullable=True)
    address = validation.mapping('%s.maxphysaddr' % field,
                                 value.get('maxphysaddr'), nullable=True)
    if address is not None:
        validation.choice('%s.maxphysaddr.mode' % field,
                          address.get('mode'), MAXPHYSADDR_MODES)
        validation.integer('%s.maxphysaddr.bits' % field,
                           address.get('bits'), low=1, high=64)
    return value


def check_disk_available_least(field, value):
    return validation.integer(field, value, low=-validation.MAX_DISK_GB,
                              high=validation.MAX_DISK_GB, nullable=True)


def _cpu_ids(field, value):
    ids = validation.sequence(field, value, MAX_CPU_ID + 1)
    for index, cpu in enumerate(ids):
        validation.integer('%s[%d]' % (field, index), cpu, high=MAX_CPU_ID)
    if len(set(ids)) != len(ids):
        validation.refuse(field, 'lists a CPU twice')
    return ids


def _check_mempages(field, pages):
    sizes = set()
    for index, page in enumerate(validation.sequence(field, pages)):
        item = '%s[%d]' % (field, index)
        validation.mapping(item, page)
        unknown = set(page) - _PAGE_KEYS
        if unknown:
            validation.refuse(item, 'has unknown keys %s'
                              % ', '.join(sorted(map(repr, unknown))))
        size = validation.integer('%s.size_kb' % item, page.get('size_kb'),
                                  low=1, high=MAX_PAGE_KB)
        total = validation.integer('%s.total' % item, page.get('total'),
                                   high=MAX_PAGES)
        validation.integer('%s.reserved' % item, page.get('reserved', 0),
                           high=total)
        if size in sizes:
            validation.refuse(item, 'repeats the page size %d kB' % size)
        sizes.add(size)


def _check_cell(field, cell, seen_cpus):
    validation.mapping(field, cell)
    unknown = set(cell) - _CELL_KEYS
    missing = {'id', 'cpuset', 'memory_mb'} - set(cell)
    if unknown or missing:
        validation.refuse(field, 'must have the keys id, cpuset and '
                          'memory_mb, and may have socket, pcpuset, '
                          'siblings and mempages (%s)'
                          % ', '.join(sorted(map(repr, unknown | missing))))
    validation.integer('%s.id' % field, cell['id'], high=MAX_CELLS)
    validation.integer('%s.socket' % field, cell.get('socket'),
                       high=MAX_CELLS, nullable=True)
    validation.integer('%s.memory_mb' % field, cell['memory_mb'],
                       high=validation.MAX_MEMORY_MB)
    cpus = set()
    for key in ('cpuset', 'pcpuset'):
        ids = _cpu_ids('%s.%s' % (field, key), cell.get(key, []))
        taken = seen_cpus.intersection(ids) | cpus.intersection(ids)
        if taken:
            validation.refuse('%s.%s' % (field, key), 'lists CPU(s) %s '
                              'that another set or cell lists too'
                              % sorted(taken))
        cpus.update(ids)
    for index, group in enumerate(validation.sequence(
            '%s.siblings' % field, cell.get('siblings', []))):
        item = '%s.siblings[%d]' % (field, index)
        strangers = set(_cpu_ids(item, group)) - cpus
        if strangers:
            validation.refuse(item, 'names CPU(s) %s that are not in the '
                              "cell's cpuset or pcpuset" % sorted(strangers))
    _check_mempages('%s.mempages' % field, cell.get('mempages', []))
    seen_cpus.update(cpus)


def check_numa_topology(field, value):
    """``numa_topology`` checked (None: not reported); every CPU in one
    set of one cell, cell ids distinct."""
    if value is None:
        return None
    validation.mapping(field, value)
    if set(value) != {'cells'}:
        validation.refuse(field, 'must be {"cells": [...]}, not a dict '
                          'with the keys %s'
                          % ', '.join(sorted(map(repr, value))))
    cells = validation.sequence('%s.cells' % field, value['cells'],
                                MAX_CELLS)
    seen_cpus = set()
    ids = set()
    for index, cell in enumerate(cells):
        item = '%s.cells[%d]' % (field, index)
        _check_cell(item, cell, seen_cpus)
        if cell['id'] in ids:
            validation.refuse('%s.id' % item, 'repeats cell id %d'
                              % cell['id'])
        ids.add(cell['id'])
    return value


def check_pci_device_pools(field, value):
    """``pci_device_pools`` checked (None: not reported)."""
    if value is None:
        return None
    for index, pool in enumerate(validation.sequence(field, value,
                                                     MAX_POOLS)):
        item = '%s[%d]' % (field, index)
        validation.mapping(item, pool)
        unknown = set(pool) - _POOL_KEYS
        missing = {'vendor_id', 'product_id', 'count'} - set(pool)
        if unknown or missing:
            validation.refuse(item, 'must have the keys vendor_id, '
                              'product_id and count, and may have '
                              'numa_node and tags (%s)' % ', '.join(
                                  sorted(map(repr, unknown | missing))))
        for key in ('vendor_id', 'product_id'):
            _hex_id('%s.%s' % (item, key), pool[key])
        validation.integer('%s.numa_node' % item, pool.get('numa_node'),
                           high=MAX_CELLS, nullable=True)
        validation.integer('%s.count' % item, pool['count'],
                           high=MAX_PCI_DEVICES)
        validation.string_dict('%s.tags' % item, pool.get('tags', {}),
                               max_len=validation.MAX_NAME_LEN)
    return value


def _hex_id(field, value):
    validation.text(field, value, 4)
    if len(value) != 4 or any(char not in '0123456789abcdefABCDEF'
                              for char in value):
        validation.refuse(field, 'must be 4 hexadecimal digits, not %r'
                          % value)


# What a report may hold, with its check.
CHECKS = {
    'cpu_info': check_cpu_info,
    'disk_available_least': check_disk_available_least,
    'numa_topology': check_numa_topology,
    'pci_device_pools': check_pci_device_pools,
}
REPORTED_FIELDS = tuple(CHECKS)


# -- the scheduler's side -----------------------------------------------------

# JSON text (as stored, or canonical) -> the one parsed value the hosts
# reporting it share.
_shared = {}
_SHARED_LIMIT = 4096


def _remember(key, value):
    if len(_shared) >= _SHARED_LIMIT:
        _shared.clear()
    _shared[key] = value
    return value


def shared_document(value):
    """One parsed object for every host that reports an equal document:
    ``value`` is the stored JSON text (parsed once per distinct text) or
    the parsed document; None for an empty one, or text that is not
    JSON (logged)."""
    if not value:
        return None
    if isinstance(value, str):
        known = _shared.get(value)
        if known is not None:
            return known
        try:
            parsed = json.loads(value)
        except ValueError:
            LOG.warning('Ignoring a stored host document that is not JSON: '
                        '%.80r', value)
            return None
        return _remember(value, parsed) if parsed else None
    key = json.dumps(value, sort_keys=True)
    known = _shared.get(key)
    return known if known is not None else _remember(key, value)


def from_row(row):
    """``(cpu_info, disk_available_least, numa_topology, numa_usage,
    pci_device_pools, pci_usage)`` of a ``compute_nodes`` row, as HostState
    carries them: ``{}``/None/None/None/``[]``/``{}`` when not reported
    (shared empty values), the static documents shared between hosts (the
    row may hold them parsed or as JSON text, see
    ``compute_nodes.get_nodes(raw_documents=True)``)."""
    return (shared_document(row.cpu_info) or NO_CPU_INFO,
            row.disk_available_least,
            shared_document(row.numa_topology),
            row.numa_usage or None,
            shared_document(row.pci_device_pools) or NO_POOLS,
            row.pci_usage or NO_PCI_USAGE)


def free_pci_devices(pools, usage):
    """Devices of every pool minus those claims use: ``sum(count) -
    sum(usage)``."""
    total = sum(pool.get('count', 0) for pool in pools)
    return total - sum(usage.values()) if usage else total
