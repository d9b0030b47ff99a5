"""Fitting an instance NUMA request onto a host's NUMA cells.

``fit_instance`` tries the host cells for each guest cell (guest cell i
onto distinct host cells, every ordered choice, as Nova's permutations)
and returns the first :class:`placement.Placement` that fits, or
``None``::

    req = request.get_request(4, 4096, {'hw:cpu_policy': 'dedicated'}, {})
    where = fitting.fit_instance(host_state.numa_topology,
                                 host_state.numa_usage, req,
                                 capacity.Limits(16.0, 1.5))

For each guest cell on a host cell it checks, in Nova's order: the page
size (a requested one must be offered by the host and fit in free pages,
``large``/``any`` taking the largest that does), memory (see
:mod:`scheduler.numa.capacity`), shared vCPUs against ``cpuset`` and the
CPU ratio, and pins dedicated vCPUs with :mod:`scheduler.numa.pinning`
(plus one host CPU for the emulator threads on the host cell of guest
cell 0, with ``hw:emulator_threads_policy=isolate``).

When the host has more cells than the guest, the host cells are tried in
Nova's order: most free memory first, then (shared guests) least shared
CPU use or (pinned guests) most free dedicated CPUs first; ``pack=True``
reverses it (Nova's ``packing_host_numa_cells_allocation_strategy``).
On a host with PCI devices, last (and whatever ``pack`` says), the cells
with fewer free devices come first for an instance that asks for none,
so that the cells with devices stay free for the ones that do.
``cells_allowed(host_cell_ids)`` may veto a complete choice of host cells
(given in guest cell order), e.g. when the PCI devices cannot follow.
"""

import itertools
import logging
from typing import Any, Callable

from scheduler.numa import capacity
from scheduler.numa import pinning
from scheduler.numa import placement
from scheduler.numa import request as numa_request
from scheduler.numa import topology

LOG = logging.getLogger(__name__)

CellsAllowed = Callable[[tuple[int, ...]], bool]


def _page_candidates(cell: topology.HostCell, pagesize) -> list[int]:
    """Page sizes to try for a requested page size, preferred first."""
    sizes = [p.size_kb for p in cell.mempages]
    if pagesize == numa_request.PAGE_SMALL:
        return sizes[:1]
    if pagesize == numa_request.PAGE_LARGE:
        return sizes[:0:-1]
    if pagesize == numa_request.PAGE_ANY:
        return sizes[::-1]
    return [pagesize] if pagesize in sizes else []


def _choose_page_size(cell, used, inst_cell, req):
    """Return ``(page size or None, reason it failed or None)``."""
    if req.pagesize is None:
        return cell.smallest_page_kb, None
    for size in _page_candidates(cell, req.pagesize):
        if capacity.memory_problem(cell, used, inst_cell.memory_mb, size,
                                   True, req.cpu_policy, None) is None:
            return size, None
    return None, 'no page size %s with room for %d MiB' % (
        req.pagesize, inst_cell.memory_mb)


def _pin(cell, used, inst_cell, req, emulator: int):
    """Return ``(pinning, reserved, emulator cpus)`` or ``None``."""
    pinned = pinning.pin_cell(cell, inst_cell.pcpuset, used.pinned_cpus,
                              req.cpu_thread_policy)
    if pinned is None:
        return None
    if not emulator:
        return pinned[0], pinned[1], frozenset()
    taken = used.pinned_cpus | set(pinned[0].values()) | pinned[1]
    extra = pinning.pin_emulator(cell, taken, req.cpu_thread_policy,
                                 emulator)
    if extra is None:
        return None
    return pinned[0], pinned[1], extra[1]


def fit_cell(cell: topology.HostCell, used: topology.CellUsage,
             inst_cell: numa_request.InstanceCell,
             req: numa_request.InstanceRequest,
             limits: capacity.Limits | None, emulator: int = 0):
    """Place one guest cell on one host cell: a PlacedCell or ``None``.

    ``emulator`` host CPUs are set aside for the emulator threads too.
    """
    size, why = _choose_page_size(cell, used, inst_cell, req)
    if why is None:
        why = capacity.memory_problem(
            cell, used, inst_cell.memory_mb, size, req.pagesize is not None,
            req.cpu_policy, limits)
    if why is None and inst_cell.cpuset:
        why = capacity.shared_cpu_problem(cell, used, len(inst_cell.cpuset),
                                          limits)
    pinned: Any = ({}, frozenset(), frozenset())
    if why is None and (inst_cell.pcpuset or emulator):
        pinned = _pin(cell, used, inst_cell, req, emulator)
        if pinned is None:
            why = 'cannot pin %d vCPUs + %d emulator (thread policy %s)' % (
                len(inst_cell.pcpuset), emulator, req.cpu_thread_policy)
    if why is not None:
        LOG.debug("Guest cell %s does not fit host cell %s: %s",
                  inst_cell.id, cell.id, why)
        return None
    return placement.PlacedCell(
        id=inst_cell.id, host_cell=cell.id, memory_mb=inst_cell.memory_mb,
        page_size_kb=size, shared_vcpus=inst_cell.cpuset,
        cpu_pinning=tuple(sorted(pinned[0].items())),
        reserved_cpus=pinned[1], emulator_cpus=pinned[2])


def _order_cells(cells, usage, req, pack: bool, pci_free=None,
                 wants_pci: bool = False):
    if len(cells) <= len(req.cells):
        return list(cells)
    ordered = sorted(cells, reverse=not pack,
                     key=lambda c: c.memory_mb - usage[c.id].memory_usage_mb)
    if req.pinned:
        ordered = sorted(ordered, reverse=not pack,
                         key=lambda c: len(usage[c.id].free_pcpus(c)))
    else:
        ordered = sorted(ordered, reverse=pack,
                         key=lambda c: usage[c.id].cpu_usage)
    if pci_free is not None:
        # As Nova, whatever ``pack`` says: cells with more free devices
        # first for an instance with devices, last for one without (it
        # leaves them to the instances that need them).
        ordered = sorted(ordered, reverse=wants_pci,
                         key=lambda c: pci_free.get(c.id, 0))
    return ordered


def fit_cells(cells: tuple[topology.HostCell, ...],
              usage: dict[int, topology.CellUsage],
              req: numa_request.InstanceRequest,
              limits: capacity.Limits | None = None,
              cells_allowed: CellsAllowed | None = None,
              pack: bool = False, pci_free: dict | None = None,
              wants_pci: bool = False) -> placement.Placement | None:
    """As :func:`fit_instance`, on parsed cells and usage."""
    if not cells or len(cells) < len(req.cells):
        return None
    fitted: dict[tuple[int, int], Any] = {}
    order = _order_cells(cells, usage, req, pack, pci_free, wants_pci)
    for choice in itertools.permutations(order, len(req.cells)):
        placed = []
        for index, (cell, inst_cell) in enumerate(zip(choice, req.cells)):
            key = (cell.id, inst_cell.id)
            if key not in fitted:
                fitted[key] = fit_cell(
                    cell, usage[cell.id], inst_cell, req, limits,
                    req.emulator_cpus if index == 0 else 0)
            if fitted[key] is None:
                break
            placed.append(fitted[key])
        if len(placed) != len(req.cells):
            continue
        host_ids = tuple(c.id for c in choice)
        if cells_allowed is not None and not cells_allowed(host_ids):
            LOG.debug("Host cells %s vetoed by the caller", host_ids)
            continue
        return placement.Placement(
            cells=tuple(placed), cpu_policy=req.cpu_policy,
            cpu_thread_policy=req.cpu_thread_policy,
            pagesize_request=req.pagesize, realtime_vcpus=req.realtime_cpus,
            emulator_threads_policy=req.emulator_threads_policy)
    return None


def fit_instance(host_topology: Any, host_usage: Any,
                 req: numa_request.InstanceRequest,
                 limits: capacity.Limits | None = None,
                 cells_allowed: CellsAllowed | None = None,
                 pack: bool = False, pci_free: dict | None = None,
                 wants_pci: bool = False) -> placement.Placement | None:
    """Return where ``req`` fits on the host, or ``None`` if nowhere.

    ``host_topology`` and ``host_usage`` are the host's
    ``numa_topology``/``numa_usage`` (JSON text, parsed dicts or
    ``None``). A host without a NUMA topology fits no NUMA request.
    ``limits`` carries the allocation ratios; ``None`` checks no ratio
    (Nova without limits). ``pci_free`` (``{host cell id: free PCI
    devices}``, given when the host has PCI pools) orders the cells
    further, as Nova does: an instance that ``wants_pci`` tries the
    cells with more free devices first, any other one those with fewer.
    """
    cells = topology.parse_host_topology(host_topology)
    if cells is None:
        return None
    usage = topology.parse_usage(cells, host_usage)
    return fit_cells(cells, usage, req, limits, cells_allowed, pack,
                     pci_free, wants_pci)
