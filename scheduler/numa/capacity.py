"""The per-cell capacity checks shared by fitting and by claims.

Fitting asks them before choosing a host cell; applying a placement to a
usage asks them again, so that a claim racing another one sees the same
verdict the scheduler would have given. Each check returns ``None`` when
the cell has room, else a sentence saying why not (for logs and errors)::

    why = capacity.memory_problem(cell, used, 2048, 2048, True,
                                  'dedicated', limits)

Rules (Nova's): with a requested page size, or for pinned guests, memory
is taken from free pages with no overcommit and must be a whole number of
pages; otherwise a guest cell may not exceed the host cell on its own,
and the cell's memory is limited by ``ram_allocation_ratio``. Shared
vCPUs may not exceed the cell's ``cpuset`` on their own, and in total
``len(cpuset) * cpu_allocation_ratio``.
"""

import dataclasses

from scheduler.numa import request as numa_request
from scheduler.numa import topology


@dataclasses.dataclass(frozen=True)
class Limits:
    """Allocation ratios for the host (Nova's NUMATopologyLimits)."""

    cpu_allocation_ratio: float = 1.0
    ram_allocation_ratio: float = 1.0


def _pages_problem(cell: topology.HostCell, used: topology.CellUsage,
                   memory_mb: int, size_kb: int, use_free: bool):
    pages = cell.pages(size_kb)
    if pages is None:
        return 'no %d KiB pages' % size_kb
    memory_kb = memory_mb * 1024
    if memory_kb % size_kb:
        return '%d MiB is not a whole number of %d KiB pages' % (
            memory_mb, size_kb)
    available = (used.free_pages(cell, size_kb) if use_free
                 else pages.total)
    if memory_kb // size_kb > available:
        return 'needs %d pages of %d KiB, %d %s' % (
            memory_kb // size_kb, size_kb, available,
            'free' if use_free else 'in total')
    return None


def memory_problem(cell: topology.HostCell, used: topology.CellUsage,
                   memory_mb: int, page_size_kb: int | None,
                   page_requested: bool, cpu_policy: str | None,
                   limits: Limits | None):
    """Why ``memory_mb`` does not fit the cell, or ``None``.

    ``page_size_kb`` is the page size charged (``None`` when the host
    cell reports none), ``page_requested`` whether the guest asked for a
    page size, ``cpu_policy`` the guest's (pinned guests never overcommit
    memory; ``dedicated`` ones are not held to the ratio, as in Nova) and
    ``limits`` the ratios, if any.
    """
    pinned = cpu_policy in (numa_request.DEDICATED, numa_request.MIXED)
    if page_size_kb is not None:
        why = _pages_problem(cell, used, memory_mb, page_size_kb,
                             use_free=page_requested or pinned)
        if why:
            return why
    elif pinned:
        if used.memory_usage_mb + memory_mb > cell.memory_mb:
            return 'needs %d MiB, %d MiB free' % (
                memory_mb, cell.memory_mb - used.memory_usage_mb)
    elif memory_mb > cell.memory_mb:
        return 'needs %d MiB, the cell has %d MiB' % (memory_mb,
                                                      cell.memory_mb)
    if limits is not None and cpu_policy != numa_request.DEDICATED:
        limit = cell.memory_mb * limits.ram_allocation_ratio
        if used.memory_usage_mb + memory_mb > limit:
            return 'memory use would be %d MiB, limit %g MiB' % (
                used.memory_usage_mb + memory_mb, limit)
    return None


def shared_cpu_problem(cell: topology.HostCell, used: topology.CellUsage,
                       shared_vcpus: int, limits: Limits | None):
    """Why ``shared_vcpus`` floating vCPUs do not fit the cell, or ``None``.

    Only meaningful for guests with shared vCPUs (shared or mixed policy).
    """
    if shared_vcpus > len(cell.cpuset):
        return '%d shared vCPUs, the cell has %d shared CPUs' % (
            shared_vcpus, len(cell.cpuset))
    if limits is not None:
        limit = len(cell.cpuset) * limits.cpu_allocation_ratio
        if used.cpu_usage + shared_vcpus > limit:
            return 'shared vCPU use would be %d, limit %g' % (
                used.cpu_usage + shared_vcpus, limit)
    return None
