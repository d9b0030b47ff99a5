"""The vectorised fit of common NUMA shapes equals the per-host fit.

Random hosts (1-4 cells; cores of 1-3 threads, sibling sets uneven,
some threads shared; page sizes or not, some pages reserved) with random
usage (claims fitted one after another, or arbitrary figures) and random
requests of the shapes :mod:`scheduler.numa.cell_figures` decides: the
host passes the vectorised check exactly when
:func:`scheduler.numa.fitting.fit_instance` finds a placement.
"""

import hypothesis
from hypothesis import strategies as st
import numpy as np

from scheduler.numa import capacity
from scheduler.numa import cell_figures
from scheduler.numa import fitting
from scheduler.numa import request
from scheduler.numa import topology
from scheduler.numa import usage as numa_usage

settings = hypothesis.settings(
    max_examples=1000, deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow])


@st.composite
def cells(draw, cell_id, first_cpu):
    cpus, siblings = [], []
    for _ in range(draw(st.integers(0, 5))):
        width = draw(st.integers(1, 3))
        core = list(range(first_cpu + len(cpus),
                          first_cpu + len(cpus) + width))
        cpus.extend(core)
        if width > 1 or draw(st.booleans()):
            siblings.append(core)
    shared = set(draw(st.lists(st.sampled_from(cpus), unique=True))
                 if cpus else [])
    memory_mb = draw(st.sampled_from([512, 1024, 2048, 4096]))
    cell = {'id': cell_id, 'memory_mb': memory_mb,
            'cpuset': sorted(shared),
            'pcpuset': sorted(set(cpus) - shared), 'siblings': siblings}
    if draw(st.booleans()):
        huge_mb = min(memory_mb // 2, draw(st.sampled_from([0, 512, 1024])))
        cell['mempages'] = [
            {'size_kb': 4, 'total': (memory_mb - huge_mb) * 256,
             'reserved': draw(st.sampled_from([0, 1024]))},
            {'size_kb': 2048, 'total': huge_mb // 2,
             'reserved': min(huge_mb // 2, draw(st.sampled_from([0, 16])))}]
        if draw(st.booleans()):
            cell['mempages'].append({'size_kb': 1048576, 'total': 1})
    return cell, len(cpus)


@st.composite
def host_topologies(draw):
    raw, next_cpu = [], 0
    for cell_id in range(draw(st.integers(1, 4))):
        cell, used = draw(cells(cell_id, next_cpu))
        raw.append(cell)
        next_cpu += used
    return {'cells': raw}


@st.composite
def arbitrary_usage(draw, host):
    result = []
    for cell in topology.parse_host_topology(host):
        pinned = draw(st.lists(st.sampled_from(sorted(cell.pcpuset)),
                               unique=True)) if cell.pcpuset else []
        # Free pages near what a guest cell needs: few left, or none.
        pages = {str(p.size_kb): max(0, p.usable - draw(st.sampled_from(
            [0, 1, 64, 65536, 131072, 262144, p.usable])))
            for p in cell.mempages}
        result.append({'id': cell.id, 'pinned_cpus': pinned,
                       'cpu_usage': draw(st.integers(0, 12)),
                       'memory_usage_mb': draw(st.integers(0, 5000)),
                       'mempages_used': pages})
    return {'cells': result}


@st.composite
def shaped_requests(draw):
    """Requests of every shape cell_figures decides (and a few others)."""
    nodes = draw(st.sampled_from([None, 1, 2, 3]))
    vcpus = (nodes or 1) * draw(st.integers(1, 3))
    specs = {'hw:numa_nodes': str(nodes)} if nodes else {}
    policy = draw(st.sampled_from([None, 'shared', 'dedicated',
                                   'dedicated']))
    if policy:
        specs['hw:cpu_policy'] = policy
    if policy == 'dedicated':
        thread = draw(st.sampled_from([None, 'prefer', 'isolate',
                                       'isolate', 'require', 'require']))
        if thread:
            specs['hw:cpu_thread_policy'] = thread
        if draw(st.integers(0, 9)) == 0:
            specs['hw:emulator_threads_policy'] = 'share'
    page = draw(st.sampled_from([None, None, None, 'small', '2MB', '1GB',
                                 '4', '8', 'large']))
    if page:
        specs['hw:mem_page_size'] = page
    memory_mb = (nodes or 1) * draw(st.sampled_from([1, 256, 512, 768,
                                                     1024, 2048]))
    return request.get_request(vcpus, memory_mb, specs)


limits_strategy = st.builds(capacity.Limits,
                            st.sampled_from([1.0, 1.5, 4.0, 0.7]),
                            st.sampled_from([1.0, 1.5, 0.9]))


def vector_fits(host, used, req, limits):
    shape = cell_figures.shape_of(req)
    figures = cell_figures.host_figures(host, used)
    width = max(1, len(figures))
    matrix = cell_figures.padded(figures, width)[np.newaxis]
    pages_free = None
    if isinstance(shape.page, int):
        free = cell_figures.host_pages_free(host, used, shape.page)
        pages_free = np.array([list(free) + [cell_figures.NO_PAGES] *
                               (width - len(free))], dtype=np.int64)
    cells = cell_figures.cells_fit(
        matrix, pages_free, np.array([limits.cpu_allocation_ratio]),
        np.array([limits.ram_allocation_ratio]), shape)
    return bool(np.count_nonzero(cells[0]) >= shape.cells)


@settings
@hypothesis.given(host=host_topologies(), limits=limits_strategy,
                  req=shaped_requests(), data=st.data())
def test_the_vectorised_fit_equals_the_per_host_fit(host, limits, req,
                                                    data):
    hypothesis.assume(req is not None)
    if data.draw(st.booleans()):
        used = data.draw(arbitrary_usage(host))
    else:
        used = None
        for earlier in data.draw(st.lists(shaped_requests(), max_size=6)):
            if earlier is None:
                continue
            where = fitting.fit_instance(host, used, earlier, limits)
            if where is not None:
                used = numa_usage.apply_placement(host, used, where, limits)
    shape = cell_figures.shape_of(req)
    if shape is None:
        hypothesis.event('not vectorised (%s)' % (req.pagesize,))
        return
    expected = fitting.fit_instance(host, used, req, limits) is not None
    hypothesis.event('fits' if expected else 'does not fit')
    assert vector_fits(host, used, req, limits) == expected


def test_shapes_left_to_the_per_host_fit():
    def shape(vcpus, memory_mb, **specs):
        return cell_figures.shape_of(request.get_request(vcpus, memory_mb,
                                                         specs))
    assert shape(4, 2048, **{'hw:cpu_policy': 'dedicated'}) == (
        cell_figures.Shape(1, 4, 0, 2048, None, True, None))
    assert shape(4, 2048, **{'hw:numa_nodes': '2',
                             'hw:mem_page_size': '2MB'}) == (
        cell_figures.Shape(2, 0, 2, 1024, 2048, False, None))
    # Mixed, realtime, emulator threads of their own, uneven cells and
    # page sizes chosen per cell are fitted host by host.
    assert shape(4, 2048, **{'hw:cpu_policy': 'mixed',
                             'hw:cpu_dedicated_mask': '^0'}) is None
    assert shape(4, 2048, **{'hw:cpu_policy': 'dedicated',
                             'hw:cpu_realtime': 'yes',
                             'hw:cpu_realtime_mask': '^0'}) is None
    assert shape(4, 2048, **{'hw:cpu_policy': 'dedicated',
                             'hw:emulator_threads_policy': 'isolate'}) is None
    assert shape(3, 2048, **{'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0',
                             'hw:numa_cpus.1': '1,2', 'hw:numa_mem.0': '1024',
                             'hw:numa_mem.1': '1024'}) is None
    assert shape(2, 2048, **{'hw:mem_page_size': 'large'}) is None
    assert shape(2, 2048, **{'hw:mem_page_size': 'any'}) is None
