"""The exact fit of common NUMA requests, over NumPy columns of host cells.

:func:`scheduler.numa.fitting.fit_instance` searches one host at a time.
For the shapes most flavors ask for, whether a guest cell fits a host cell
depends on a few numbers of that cell only, and a host fits when enough
of its cells do: this module computes the answer for every cell of every
host at once, and it must equal the per-host fit (a property test
compares them). The shapes (:func:`shape_of`; None for any other, which
goes through the per-host fit):

* guest cells all alike (one cell, or ``hw:numa_nodes=N`` split evenly);
* CPU policy none, ``shared`` or ``dedicated`` (thread policy none,
  ``prefer``, ``isolate`` or ``require``), no realtime mask, no emulator
  threads of their own;
* page size none, ``small`` or a size (``large`` and ``any`` choose among
  sizes per cell: per-host fit).

Guest cells alike go onto distinct host cells, each fitting on its own
(the fit of one guest cell on one host cell does not depend on the
others), so a host fits exactly when at least as many of its cells fit
one guest cell as the guest has cells::

    figures = [cell_figures.host_figures(topo, usage) for ...]  # per host
    shape = cell_figures.shape_of(req)
    fits = cell_figures.cells_fit(matrix, pages_free, cpu_ratio,
                                  ram_ratio, shape)    # (hosts, cells)
    host_fits = fits.sum(axis=1) >= shape.cells

``matrix`` is ``(hosts, len(FIELDS), cells)``: for each host cell the
figures named in :data:`FIELDS` (zeros for the padding cells of hosts
with fewer cells; ``present`` tells them apart).
"""

import collections
from typing import Any

import numpy as np

from scheduler.numa import pinning
from scheduler.numa import request as numa_request
from scheduler.numa import topology

FIELDS = (
    'present',            # 1 for a real cell, 0 for padding
    'memory_mb',          # the cell's memory
    'memory_used_mb',     # memory the claims use on it
    'cpu_usage',          # shared vCPUs the claims use on it
    'shared_cpus',        # len(cpuset)
    'free_pcpus',         # dedicated CPUs not pinned
    'smt',                # 1 if the cell has hyperthread siblings
    'whole_free_cores',   # cores isolate may use (all threads free)
    'require_room',       # vCPUs 'require' can pack on sibling threads
    'small_page_kb',      # smallest page size, 0 when none reported
    'small_pages_total',  # pages of that size in all
    'small_pages_free',   # of which free (usable minus used)
)
_INDEX = {name: index for index, name in enumerate(FIELDS)}
NO_PAGES = -1

Shape = collections.namedtuple(
    'Shape', 'cells pcpus shared memory_mb page pinned thread_policy')


def shape_of(req: numa_request.InstanceRequest) -> Shape | None:
    """The request's shape if this module decides it exactly, else None."""
    if req.cpu_policy not in (None, numa_request.SHARED,
                              numa_request.DEDICATED):
        return None
    if req.realtime_cpus or req.emulator_cpus:
        return None
    if req.pagesize in (numa_request.PAGE_LARGE, numa_request.PAGE_ANY):
        return None
    first = req.cells[0]
    size = (len(first.pcpuset), len(first.cpuset), first.memory_mb)
    if any((len(c.pcpuset), len(c.cpuset), c.memory_mb) != size
           for c in req.cells):
        return None
    return Shape(len(req.cells), size[0], size[1], size[2], req.pagesize,
                 req.cpu_policy == numa_request.DEDICATED,
                 req.cpu_thread_policy)


def _cell_figures(cell: topology.HostCell, used: topology.CellUsage):
    small = cell.mempages[0] if cell.mempages else None
    free = cell.pcpuset - used.pinned_cpus
    return (1, cell.memory_mb, used.memory_usage_mb, used.cpu_usage,
            len(cell.cpuset), len(free), int(cell.threads_per_core > 1),
            len(pinning.whole_free_cores(cell, used.pinned_cpus)),
            pinning.packed_room(cell, used.pinned_cpus, 2),
            small.size_kb if small else 0, small.total if small else 0,
            used.free_pages(cell, small.size_kb) if small else 0)


def host_figures(host_topology: Any, host_usage: Any):
    """One tuple of :data:`FIELDS` per host cell (by cell id); () for a
    host without NUMA topology.

    :raises: InvalidHostNUMATopology: the topology or usage is unreadable.
    """
    cells = topology.parse_host_topology(host_topology) or ()
    usage = topology.parse_usage(cells, host_usage)
    return tuple(_cell_figures(cell, usage[cell.id]) for cell in cells)


def host_pages_free(host_topology: Any, host_usage: Any,
                    size_kb: int) -> tuple[int, ...]:
    """Free pages of ``size_kb`` per host cell, :data:`NO_PAGES` where the
    cell does not report the size."""
    cells = topology.parse_host_topology(host_topology) or ()
    usage = topology.parse_usage(cells, host_usage)
    return tuple(usage[cell.id].free_pages(cell, size_kb)
                 if cell.pages(size_kb) is not None else NO_PAGES
                 for cell in cells)


def padded(figures, width: int) -> np.ndarray:
    """``(len(FIELDS), width)`` of one host's figures, zero-padded."""
    matrix = np.zeros((len(FIELDS), width), dtype=np.int64)
    if figures:
        matrix[:, :len(figures)] = np.asarray(figures, dtype=np.int64).T
    return matrix


def _pages_fit(page_kb, free, memory_kb):
    """Whole pages of ``page_kb`` (an array; 0: no such size) cover
    ``memory_kb`` within ``free``."""
    has = page_kb > 0
    size = np.where(has, page_kb, 1)
    return has & (memory_kb % size == 0) & (memory_kb // size <= free)


def _memory_fits(get, shape, pages_free, ram_ratio):
    memory_kb = shape.memory_mb * 1024
    if shape.page is None:
        page_kb = get('small_page_kb')
        pages = _pages_fit(page_kb, get('small_pages_free' if shape.pinned
                                        else 'small_pages_total'),
                           memory_kb)
        if shape.pinned:
            no_pages = get('memory_used_mb') + shape.memory_mb <= get(
                'memory_mb')
        else:
            no_pages = shape.memory_mb <= get('memory_mb')
        fits = np.where(page_kb > 0, pages, no_pages)
    elif shape.page == numa_request.PAGE_SMALL:
        fits = _pages_fit(get('small_page_kb'), get('small_pages_free'),
                          memory_kb)
    else:
        fits = ((pages_free != NO_PAGES) & (memory_kb % shape.page == 0)
                & (memory_kb // shape.page <= pages_free))
    if not shape.pinned:
        # Dedicated guests are not held to the RAM ratio (as Nova).
        fits &= (get('memory_used_mb') + shape.memory_mb
                 <= get('memory_mb') * ram_ratio[:, None])
    return fits


def _cpus_fit(get, shape, cpu_ratio):
    fits = np.ones(get('present').shape, dtype=np.bool_)
    if shape.shared:
        fits &= shape.shared <= get('shared_cpus')
        fits &= (get('cpu_usage') + shape.shared
                 <= get('shared_cpus') * cpu_ratio[:, None])
    if shape.pcpus:
        fits &= shape.pcpus <= get('free_pcpus')
        if shape.thread_policy == numa_request.ISOLATE:
            fits &= (get('smt') == 0) & (
                get('whole_free_cores') >= shape.pcpus)
        elif shape.thread_policy == numa_request.REQUIRE:
            fits &= (get('smt') == 1) & (get('require_room') >= shape.pcpus)
    return fits


def cells_fit(matrix: np.ndarray, pages_free: np.ndarray | None,
              cpu_ratio: np.ndarray, ram_ratio: np.ndarray,
              shape: Shape) -> np.ndarray:
    """``(hosts, cells)`` booleans: one guest cell of ``shape`` fits that
    host cell (``pages_free``: ``(hosts, cells)`` free pages of the
    requested size, when it is a size; ratios per host)."""

    def get(name):
        return matrix[:, _INDEX[name], :]
    return (get('present') == 1) & _memory_fits(
        get, shape, pages_free, ram_ratio) & _cpus_fit(get, shape, cpu_ratio)
