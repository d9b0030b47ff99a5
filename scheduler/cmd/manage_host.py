"""``gantt-manage host show HOST``: the hardware each node of a host reports.

For every node of the host it prints, read from ``compute_nodes``:

* a Field/Value table: the node, its CPU (``cpu_info`` model, vendor,
  architecture, features, topology, ``maxphysaddr``) and
  ``disk_available_least``;
* its NUMA cells, with what claims use of them (``numa_usage``): shared
  CPUs (``cpuset``), dedicated CPUs (``pcpuset``) and which of those are
  pinned, the shared CPUs' usage, memory used/total, and per page size
  the pages used/total;
* its PCI device pools, with used/total per pool (``pci_usage``).

Example::

    $ gantt-manage host show compute1
    Node compute1 (5f0c...)

    Field                 Value
    --------------------  ----------------------------------
    cpu_info              Skylake-Client-IBRS (Intel, x86_64)
    cpu_features          avx2 sse4.2
    ...

    NUMA cell  Socket  CPUs  PCPUs  Pinned  CPU usage  Memory MB   Pages
    ---------  ------  ----  -----  ------  ---------  ----------  -----
    0          0       0-3   4-7    4-5     3          2048/16384  4K: 0/9
    ...
"""

import sqlalchemy as sa

from scheduler.cmd import manage_table
from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler.db import models
from scheduler import exception
from scheduler.pci import pools as pci_pools

_NODE = models.ComputeNode.__table__


def cpu_ranges(cpus):
    """``[0, 1, 2, 5, 7, 8]`` -> ``'0-2,5,7-8'``; ``'-'`` for none."""
    ranges = []
    for cpu in sorted(set(cpus or ())):
        if ranges and ranges[-1][1] == cpu - 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ','.join(str(first) if first == last else '%d-%d' % (first, last)
                    for first, last in ranges) or '-'


def _cpu_fields(cpu_info):
    if not isinstance(cpu_info, dict) or not cpu_info:
        return [['cpu_info', None]]
    where = ', '.join(str(cpu_info[key]) for key in ('vendor', 'arch')
                      if cpu_info.get(key))
    model = cpu_info.get('model') or '?'
    fields = [['cpu_info', '%s (%s)' % (model, where) if where else model],
              ['cpu_features',
               ' '.join(sorted(cpu_info.get('features') or ())) or None]]
    topology = cpu_info.get('topology')
    if isinstance(topology, dict):
        fields.append(['cpu_topology', ', '.join(
            '%s %s' % (topology.get(key, '?'), key)
            for key in ('sockets', 'cores', 'threads'))])
    address = cpu_info.get('maxphysaddr')
    if isinstance(address, dict):
        fields.append(['maxphysaddr', '%s, %s bits' % (
            address.get('mode'), address.get('bits'))])
    return fields


def _pages(cell, used):
    parts = []
    for page in cell.get('mempages') or ():
        size = page['size_kb']
        text = '%dK: %d/%d' % (size, used.get(str(size), 0), page['total'])
        if page.get('reserved'):
            text += ' (%d reserved)' % page['reserved']
        parts.append(text)
    return '\n'.join(parts) or None


def numa_rows(topology, usage):
    """One row per NUMA cell of ``topology``, with ``usage`` (the node's
    ``numa_usage``, None: nothing used)."""
    used_by_cell = {cell.get('id'): cell
                    for cell in (usage or {}).get('cells') or ()}
    rows = []
    for cell in (topology or {}).get('cells') or ():
        used = used_by_cell.get(cell['id'], {})
        rows.append([
            cell['id'], cell.get('socket', cell['id']),
            cpu_ranges(cell.get('cpuset')), cpu_ranges(cell.get('pcpuset')),
            cpu_ranges(used.get('pinned_cpus')), used.get('cpu_usage', 0),
            '%d/%d' % (used.get('memory_usage_mb', 0), cell['memory_mb']),
            _pages(cell, used.get('mempages_used') or {})])
    return rows


def pci_rows(pools, usage):
    """One row per PCI pool, its devices used/total from ``usage`` (the
    node's ``pci_usage``)."""
    usage = usage or {}
    return [[pool['vendor_id'], pool['product_id'], pool.get('numa_node'),
             '%d/%d' % (usage.get(pci_pools.pool_key(pool), 0),
                        pool['count']),
             ' '.join('%s=%s' % item
                      for item in sorted((pool.get('tags') or {}).items()))
             or None]
            for pool in pools or ()]


def _print_node(row):
    print('Node %s (%s)\n' % (row.hypervisor_hostname, row.uuid))
    fields = ([['host', row.host], ['mapped', row.mapped]]
              + _cpu_fields(row.cpu_info)
              + [['disk_available_least',
                  None if row.disk_available_least is None
                  else '%d GB' % row.disk_available_least]])
    print(manage_table.format_table(['Field', 'Value'], fields))
    cells = numa_rows(row.numa_topology, row.numa_usage)
    print()
    print(manage_table.format_table(
        ['NUMA cell', 'Socket', 'CPUs', 'PCPUs', 'Pinned', 'CPU usage',
         'Memory MB', 'Pages'], cells) if cells else 'No NUMA topology.')
    pools = pci_rows(row.pci_device_pools, row.pci_usage)
    print()
    print(manage_table.format_table(
        ['PCI vendor', 'Product', 'NUMA node', 'Used/Total', 'Tags'],
        pools) if pools else 'No PCI devices.')


def show(host):
    """Print the hardware of every node of ``host``."""
    migration.check_schema()
    with db_api.reader() as session:
        rows = session.execute(
            sa.select(_NODE).where(_NODE.c.host == host)
            .order_by(_NODE.c.hypervisor_hostname)).all()
    if not rows:
        raise exception.ComputeNodeNotFound(ident='on host %s' % host)
    for index, row in enumerate(rows):
        if index:
            print()
        _print_node(row)
    return 0
