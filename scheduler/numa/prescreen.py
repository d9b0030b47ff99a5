"""Scalar figures for a vectorised NUMA prescreen.

Fitting a NUMA request is a search per host; a filter over thousands of
hosts first drops the hosts that cannot possibly fit by comparing a few
numbers per host (NumPy columns in the host table) with the request's
minimums. ``host_summary`` gives the numbers for one host,
``request_minimums`` the request's, with the same keys::

    have = prescreen.host_summary(topo, usage, limits)
    need = prescreen.request_minimums(req)
    prescreen.meets_minimums(have, need)    # False: the host cannot fit

Every minimum is a *necessary* condition only: a host below any minimum
never fits (``fitting.fit_instance`` returns ``None``), a host meeting them
all may still not fit (thread policies, page sizes per cell, the cells
allowed by the caller) and must go through fitting. Keys:

``cells``                    host NUMA cells / guest cells
``max_cell_free_pcpus``      most unpinned dedicated CPUs in one host cell /
                             most dedicated vCPUs in one guest cell (the
                             emulator's CPU counted on guest cell 0)
``total_free_pcpus``         unpinned dedicated CPUs on the host / dedicated
                             vCPUs of the guest, plus the emulator's
``max_cell_shared_vcpus``    most shared vCPUs one host cell can still take
                             (``len(cpuset)``, and the CPU ratio when limits
                             are given) / most shared vCPUs in a guest cell
``max_cell_memory_mb``       largest memory one host cell could ever give
                             one guest cell / largest guest cell memory
``max_cell_free_memory_mb``  largest free memory in one host cell (free
                             pages, or unused memory when no page sizes are
                             reported) / largest guest cell memory when the
                             guest may not overcommit (pinned or page size
                             requested), else 0
``free_pages``               ``{size_kb: free pages summed over cells}`` /
                             ``{size_kb: pages needed}`` for an explicit
                             page size, else ``{}``
"""

import math
from typing import Any

from scheduler.numa import capacity
from scheduler.numa import request as numa_request
from scheduler.numa import topology

SCALAR_KEYS = ('cells', 'max_cell_free_pcpus', 'total_free_pcpus',
               'max_cell_shared_vcpus', 'max_cell_memory_mb',
               'max_cell_free_memory_mb')


def _shared_room(cell: topology.HostCell, used: topology.CellUsage,
                 limits: capacity.Limits | None) -> int:
    room = len(cell.cpuset)
    if limits is None:
        return room
    limit = len(cell.cpuset) * limits.cpu_allocation_ratio
    extra = max(0, math.floor(limit - used.cpu_usage) + 1)
    while extra > 0 and used.cpu_usage + extra > limit:
        extra -= 1
    return min(room, extra)


def _free_memory_mb(cell: topology.HostCell,
                    used: topology.CellUsage) -> int:
    if not cell.mempages:
        return cell.memory_mb - used.memory_usage_mb
    return max(0, max(used.free_pages(cell, p.size_kb) * p.size_kb
                      for p in cell.mempages) // 1024)


def _memory_bound_mb(cell: topology.HostCell) -> int:
    return max([cell.memory_mb] +
               [p.total * p.size_kb // 1024 for p in cell.mempages])


def host_summary(host_topology: Any, host_usage: Any,
                 limits: capacity.Limits | None = None) -> dict:
    """Return the prescreen figures of one host (all 0 without NUMA)."""
    cells = topology.parse_host_topology(host_topology) or ()
    usage = topology.parse_usage(cells, host_usage)
    free = [len(usage[c.id].free_pcpus(c)) for c in cells]
    pages: dict[int, int] = {}
    for cell in cells:
        for p in cell.mempages:
            pages[p.size_kb] = (pages.get(p.size_kb, 0) +
                                usage[cell.id].free_pages(cell, p.size_kb))
    return {
        'cells': len(cells),
        'max_cell_free_pcpus': max(free, default=0),
        'total_free_pcpus': sum(free),
        'max_cell_shared_vcpus': max(
            (_shared_room(c, usage[c.id], limits) for c in cells),
            default=0),
        'max_cell_memory_mb': max(map(_memory_bound_mb, cells), default=0),
        'max_cell_free_memory_mb': max(
            (_free_memory_mb(c, usage[c.id]) for c in cells), default=0),
        'free_pages': pages,
    }


def request_minimums(req: numa_request.InstanceRequest) -> dict:
    """Return the figures a host must reach to have a chance of fitting."""
    memory = max(c.memory_mb for c in req.cells)
    no_overcommit = req.pinned or req.pagesize is not None
    pages = {}
    if isinstance(req.pagesize, int):
        pages[req.pagesize] = sum(c.memory_mb * 1024 // req.pagesize
                                  for c in req.cells)
    first = len(req.cells[0].pcpuset) + req.emulator_cpus
    return {
        'cells': len(req.cells),
        'max_cell_free_pcpus': max([first] +
                                   [len(c.pcpuset) for c in req.cells]),
        'total_free_pcpus': (sum(len(c.pcpuset) for c in req.cells) +
                             req.emulator_cpus),
        'max_cell_shared_vcpus': max(len(c.cpuset) for c in req.cells),
        'max_cell_memory_mb': memory,
        'max_cell_free_memory_mb': memory if no_overcommit else 0,
        'free_pages': pages,
    }


def meets_minimums(summary: dict, minimums: dict) -> bool:
    """Whether a host's figures reach every one of a request's minimums.

    The vectorised filter must compute the same thing: each scalar column
    ``>=`` its minimum, and each requested page size's free count ``>=``
    the pages needed (0 free when the host lacks the size).
    """
    if any(summary[key] < minimums[key] for key in SCALAR_KEYS):
        return False
    return all(summary['free_pages'].get(size, 0) >= count
               for size, count in minimums['free_pages'].items())
