"""NUMATopologyFilter's exact batch path: host cells as host table columns.

For a request of one of the shapes :mod:`scheduler.numa.cell_figures`
decides exactly, every host is answered from per-cell columns of the
host table (its cells' free dedicated CPUs, whole free cores, memory,
pages...), computed from each HostState once and carried from table to
table row by row, like every ``state_column``. A new flavor then costs a
few array operations over the cells, not one Python fit per host::

    shape = cell_figures.shape_of(wanted.numa)       # None: not exact
    fits, decided = numa_columns.fit(host_table, shape)

``decided`` is False for the hosts whose NUMA documents cannot be read:
the per-host fit answers them (and logs why they fail).
"""

from oslo_log import log as logging
import numpy as np

from scheduler import host_cache
from scheduler.numa import cell_figures
from scheduler.numa import errors as numa_errors

LOG = logging.getLogger(__name__)

_UNREADABLE = -1


def _read_figures(state):
    """The state's cell figures, None if its documents are unreadable."""
    try:
        return cell_figures.host_figures(state.numa_topology,
                                         state.numa_usage)
    except numa_errors.InvalidHostNUMATopology:
        return None


# Computed once per HostState.
_figures_of = host_cache.StateMemo(_read_figures)


def _cell_count(state):
    figures = _figures_of(state)
    return _UNREADABLE if figures is None else len(figures)


def _pages_free(state, size_kb, width):
    values = np.full(width, cell_figures.NO_PAGES, dtype=np.int64)
    if _figures_of(state):
        free = cell_figures.host_pages_free(state.numa_topology,
                                            state.numa_usage, size_kb)
        values[:len(free)] = free
    return values


def fit(host_table, shape):
    """``(fits, decided)``: per host, whether a request of ``shape`` fits
    it, and whether that answer is exact (False: ask the per-host fit)."""
    counts = host_table.state_column('numa_cell_count', _cell_count,
                                     np.int64)
    decided = counts != _UNREADABLE
    width = max(1, int(counts.max(initial=0)))
    matrix = host_table.state_column(
        'numa_cell_figures_%d' % width,
        lambda state: cell_figures.padded(_figures_of(state), width),
        np.dtype((np.int64, (len(cell_figures.FIELDS), width))))
    pages_free = None
    if isinstance(shape.page, int):
        pages_free = host_table.state_column(
            'numa_cell_pages_free_%d_%d' % (shape.page, width),
            lambda state: _pages_free(state, shape.page, width),
            np.dtype((np.int64, width)))
    cells = cell_figures.cells_fit(matrix, pages_free, host_table.cpu_ratio,
                                   host_table.ram_ratio, shape)
    fits = decided & (np.count_nonzero(cells, axis=1) >= shape.cells)
    return fits, decided
