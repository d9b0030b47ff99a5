"""Property tests: fitting, applying and releasing NUMA placements.

Random hosts (1-3 cells, SMT or not, with or without page sizes) receive
random requests one after another; each fitted placement is applied to
the usage. Along the way:

* applying what fitting just chose never raises, and releasing it again
  gives back exactly the usage before;
* no host CPU is ever pinned twice, no page size beyond the smallest is
  used beyond its pages, shared vCPUs stay within cpuset * ratio;
* a host below the prescreen minimums never fits;
* releasing everything, in any order, gives back an empty usage;
* every placement survives its JSON round trip.
"""

import json

import hypothesis
from hypothesis import strategies as st

from scheduler.numa import capacity
from scheduler.numa import fitting
from scheduler.numa import placement
from scheduler.numa import prescreen
from scheduler.numa import request
from scheduler.numa import topology
from scheduler.numa import usage as numa_usage

settings = hypothesis.settings(
    max_examples=150, deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow])


@st.composite
def host_topologies(draw):
    cells, next_cpu = [], 0
    for cell_id in range(draw(st.integers(1, 3))):
        threads = draw(st.sampled_from([1, 2]))
        cores = []
        for _ in range(draw(st.integers(1, 4))):
            cores.append(list(range(next_cpu, next_cpu + threads)))
            next_cpu += threads
        shared = draw(st.integers(0, len(cores)))
        memory_mb = draw(st.sampled_from([1024, 2048, 4096, 8192]))
        cell = {'id': cell_id, 'memory_mb': memory_mb,
                'cpuset': [c for core in cores[:shared] for c in core],
                'pcpuset': [c for core in cores[shared:] for c in core],
                'siblings': cores if threads > 1 else []}
        if draw(st.booleans()):
            huge_mb = draw(st.sampled_from([0, 512, 1024]))
            huge_mb = min(huge_mb, memory_mb // 2)
            cell['mempages'] = [
                {'size_kb': 4, 'total': (memory_mb - huge_mb) * 256},
                {'size_kb': 2048, 'total': huge_mb // 2,
                 'reserved': min(huge_mb // 2,
                                 draw(st.sampled_from([0, 16])))}]
            if draw(st.booleans()):
                cell['mempages'].append({'size_kb': 1048576, 'total': 1})
        cells.append(cell)
    return {'cells': cells}


def numa_requests():
    """Requests that have NUMA needs (``get_request`` is not None)."""
    return _maybe_numa_requests().filter(lambda req: req is not None)


@st.composite
def _maybe_numa_requests(draw):
    nodes = draw(st.sampled_from([None, 1, 2]))
    vcpus = draw(st.sampled_from([2, 4]) if nodes == 2 else st.integers(1, 4))
    specs = {'hw:numa_nodes': str(nodes)} if nodes else {}
    policies = [None, 'shared', 'dedicated'] + (['mixed'] if vcpus > 1
                                                else [])
    policy = draw(st.sampled_from(policies))
    if policy:
        specs['hw:cpu_policy'] = policy
    if policy == 'mixed':
        specs['hw:cpu_dedicated_mask'] = '^0'
    if policy in ('dedicated', 'mixed'):
        thread = draw(st.sampled_from([None, 'prefer', 'isolate',
                                       'require']))
        if thread:
            specs['hw:cpu_thread_policy'] = thread
        emulator = draw(st.sampled_from([None, 'share', 'isolate']))
        if emulator:
            specs['hw:emulator_threads_policy'] = emulator
    page = draw(st.sampled_from([None, 'small', 'large', 'any', '2MB',
                                 '1GB']))
    if page:
        specs['hw:mem_page_size'] = page
    memory_mb = draw(st.sampled_from([256, 512, 1024, 2048]))
    if draw(st.booleans()):
        memory_mb = 256
    return request.get_request(vcpus, memory_mb, specs)


limits_strategy = st.builds(capacity.Limits,
                            st.sampled_from([1.0, 1.5, 4.0]),
                            st.sampled_from([1.0, 1.5]))


def check_invariants(host, used, placements, limits):
    cells = {c.id: c for c in topology.parse_host_topology(host)}
    parsed = topology.parse_usage(tuple(cells.values()), used)
    for cell_id, cell in cells.items():
        cell_used = parsed[cell_id]
        taken = [cpu for where in placements for placed in where.cells
                 if placed.host_cell == cell_id
                 for cpu in placed.pinned_host_cpus]
        assert len(taken) == len(set(taken)) == len(cell_used.pinned_cpus)
        assert cell_used.pinned_cpus <= cell.pcpuset
        limit = len(cell.cpuset) * limits.cpu_allocation_ratio
        assert cell_used.cpu_usage <= limit
        for pages in cell.mempages[1:]:
            assert cell_used.pages_used(pages.size_kb) <= pages.usable
        for where in placements:
            if where.cpu_thread_policy != 'isolate':
                continue
            for placed in where.cells:
                if placed.host_cell != cell_id:
                    continue
                # An isolated guest owns every thread of each core it uses.
                used_cores = [core for core in cell.cores()
                              if core & placed.pinned_host_cpus]
                assert all(core <= placed.pinned_host_cpus
                           for core in used_cores)
                assert len(used_cores) == (len(placed.cpu_pinning) +
                                           bool(placed.emulator_cpus))


@settings
@hypothesis.given(host=host_topologies(), limits=limits_strategy,
                  reqs=st.lists(numa_requests(), min_size=1, max_size=8),
                  data=st.data())
def test_fitted_placements_apply_release_and_respect_capacity(
        host, limits, reqs, data):
    cells = topology.parse_host_topology(host)
    used = topology.normalize_usage(cells, None)
    placements = []
    for req in reqs:
        where = fitting.fit_instance(host, used, req, limits)
        have = prescreen.host_summary(host, used, limits)
        if not prescreen.meets_minimums(have,
                                        prescreen.request_minimums(req)):
            assert where is None
        if where is None:
            continue
        assert len(set(where.host_cells)) == len(req.cells)
        assert placement.Placement.from_dict(
            json.loads(json.dumps(where.to_dict()))) == where
        after = numa_usage.apply_placement(host, used, where, limits)
        assert numa_usage.release_placement(host, after, where) == used
        used = after
        placements.append(where)
        hypothesis.event('placed %d' % len(placements))
        check_invariants(host, used, placements, limits)
    order = data.draw(st.permutations(placements))
    for where in order:
        used = numa_usage.release_placement(host, used, where)
    assert used == topology.normalize_usage(cells, None)


@settings
@hypothesis.given(host=host_topologies(), limits=limits_strategy,
                  req=numa_requests(), seed=st.lists(numa_requests(),
                                                     max_size=4))
def test_prescreen_minimums_are_necessary(host, limits, req, seed):
    used = None
    for earlier in seed:
        where = fitting.fit_instance(host, used, earlier, limits)
        if where is not None:
            used = numa_usage.apply_placement(host, used, where, limits)
    where = fitting.fit_instance(host, used, req, limits)
    have = prescreen.host_summary(host, used, limits)
    meets = prescreen.meets_minimums(have, prescreen.request_minimums(req))
    hypothesis.event('fits' if where else 'below minimums' if not meets
                     else 'meets minimums but does not fit')
    assert meets or where is None
