"""Applying a placement to a host's NUMA usage, and releasing it.

A claim reads ``compute_nodes.numa_usage``, applies the placement fitting
chose, and writes the result back in the same conditional write; deleting
or moving the instance releases it, the exact inverse::

    new = usage.apply_placement(node.numa_topology, node.numa_usage, where)
    old = usage.release_placement(node.numa_topology, new, where)

Both return the canonical usage dict (``topology.usage_to_dict``) with
every host cell listed. Applying re-checks that the placement still fits
(the CPUs to pin are dedicated CPUs of the cell and free, pages are free,
memory and, when ``limits`` are given, the ratio limits hold); if not it
raises :class:`errors.NUMAUsageConflict`, which the claim code takes as a
lost race. Releasing what was never applied raises it too.
"""

import dataclasses
from typing import Any

from scheduler.numa import capacity
from scheduler.numa import errors
from scheduler.numa import placement as numa_placement
from scheduler.numa import topology


def _cells_and_usage(host_topology: Any, host_usage: Any, where):
    cells = topology.parse_host_topology(host_topology)
    if cells is None:
        raise errors.NUMAUsageConflict(
            cell='-', reason='the host reports no NUMA topology')
    by_id = {c.id: c for c in cells}
    for placed in where.cells:
        if placed.host_cell not in by_id:
            raise errors.NUMAUsageConflict(
                cell=placed.host_cell, reason='the host has no such cell')
    return cells, by_id, topology.parse_usage(cells, host_usage)


def _add_pages(used: topology.CellUsage, size_kb, count: int):
    pages = dict(used.mempages_used)
    if size_kb is not None:
        pages[size_kb] = pages.get(size_kb, 0) + count
    return tuple(sorted((s, n) for s, n in pages.items() if n))


def _check_fits(cell, used, placed, where, limits):
    take = placed.pinned_host_cpus
    why = None
    if take - cell.pcpuset:
        why = 'CPUs %s are not dedicated CPUs of the cell' % sorted(
            take - cell.pcpuset)
    elif take & used.pinned_cpus:
        why = 'CPUs %s are already pinned' % sorted(take & used.pinned_cpus)
    if why is None:
        why = capacity.memory_problem(
            cell, used, placed.memory_mb, placed.page_size_kb,
            where.pagesize_request is not None, where.cpu_policy, limits)
    if why is None and placed.shared_vcpus:
        why = capacity.shared_cpu_problem(cell, used,
                                          len(placed.shared_vcpus), limits)
    if why is not None:
        raise errors.NUMAUsageConflict(cell=cell.id, reason=why)


def apply_placement(host_topology: Any, host_usage: Any,
                    where: numa_placement.Placement,
                    limits: capacity.Limits | None = None) -> dict:
    """Return the usage after taking ``where``; raise if it does not fit."""
    cells, by_id, usage = _cells_and_usage(host_topology, host_usage, where)
    for placed in where.cells:
        used = usage[placed.host_cell]
        _check_fits(by_id[placed.host_cell], used, placed, where, limits)
        usage[placed.host_cell] = dataclasses.replace(
            used, cpu_usage=used.cpu_usage + len(placed.shared_vcpus),
            memory_usage_mb=used.memory_usage_mb + placed.memory_mb,
            pinned_cpus=used.pinned_cpus | placed.pinned_host_cpus,
            mempages_used=_add_pages(used, placed.page_size_kb,
                                     placed.pages))
    return topology.usage_to_dict(usage)


def release_placement(host_topology: Any, host_usage: Any,
                      where: numa_placement.Placement) -> dict:
    """Return the usage after giving back ``where`` (inverse of apply)."""
    cells, by_id, usage = _cells_and_usage(host_topology, host_usage, where)
    for placed in where.cells:
        used = usage[placed.host_cell]
        give = placed.pinned_host_cpus
        why = None
        if give - used.pinned_cpus:
            why = 'CPUs %s are not pinned' % sorted(give - used.pinned_cpus)
        elif used.cpu_usage < len(placed.shared_vcpus):
            why = 'only %d shared vCPUs in use' % used.cpu_usage
        elif used.memory_usage_mb < placed.memory_mb:
            why = 'only %d MiB in use' % used.memory_usage_mb
        elif placed.page_size_kb is not None and \
                used.pages_used(placed.page_size_kb) < placed.pages:
            why = 'only %d pages of %d KiB in use' % (
                used.pages_used(placed.page_size_kb), placed.page_size_kb)
        if why is not None:
            raise errors.NUMAUsageConflict(
                cell=placed.host_cell, reason='cannot release: ' + why)
        usage[placed.host_cell] = dataclasses.replace(
            used, cpu_usage=used.cpu_usage - len(placed.shared_vcpus),
            memory_usage_mb=used.memory_usage_mb - placed.memory_mb,
            pinned_cpus=used.pinned_cpus - give,
            mempages_used=_add_pages(used, placed.page_size_kb,
                                     -placed.pages))
    return topology.usage_to_dict(usage)
