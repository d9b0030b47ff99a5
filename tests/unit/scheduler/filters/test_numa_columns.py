"""NUMATopologyFilter's columns path (scheduler.filters.numa_columns) on
whole host tables: hosts of different cell counts, without topology, with
unreadable documents, and tables derived by claims, answer as the
per-host fit does."""

import hypothesis
from hypothesis import strategies as st
import numpy as np

from scheduler.filters import numa_columns
from scheduler.filters import numa_topology_filter
from scheduler import hardware
from scheduler.numa import cell_figures
from tests.unit.scheduler import fakes
from tests.unit.scheduler.numa import hosts
from tests.unit.scheduler.numa import test_cell_figures as strategies


def _state(name, topology=None, usage=None, cpu_ratio=1.0, ram_ratio=1.0):
    return fakes.host_state(name, numa_topology=topology, numa_usage=usage,
                            cpu_ratio=cpu_ratio, ram_ratio=ram_ratio)


def _spec(vcpus, memory_mb, extra_specs):
    spec = fakes.spec(vcpus=vcpus, memory_mb=memory_mb)
    spec.flavor.extra_specs = dict(extra_specs)
    return spec


@st.composite
def host_states(draw, index):
    kind = draw(st.sampled_from(['numa', 'numa', 'numa', 'plain',
                                 'unreadable']))
    name = 'h%d' % index
    ratios = dict(cpu_ratio=draw(st.sampled_from([1.0, 4.0])),
                  ram_ratio=draw(st.sampled_from([1.0, 1.5])))
    if kind == 'plain':
        return _state(name, **ratios)
    topology = draw(strategies.host_topologies())
    if kind == 'unreadable':
        # A usage naming a cell the host does not have.
        return _state(name, topology, {'cells': [{'id': 9}]}, **ratios)
    usage = None
    if draw(st.booleans()):
        usage = draw(strategies.arbitrary_usage(topology))
    return _state(name, topology, usage, **ratios)


@st.composite
def specs(draw):
    nodes = draw(st.sampled_from([None, 1, 2]))
    per_cell = draw(st.integers(1, 3))
    extra = {'hw:numa_nodes': str(nodes)} if nodes else {}
    policy = draw(st.sampled_from([None, 'dedicated']))
    if policy:
        extra['hw:cpu_policy'] = policy
        thread = draw(st.sampled_from([None, 'isolate', 'require']))
        if thread:
            extra['hw:cpu_thread_policy'] = thread
    page = draw(st.sampled_from([None, 'small', '2MB']))
    if page:
        extra['hw:mem_page_size'] = page
    if not extra:
        extra['hw:numa_nodes'] = '1'
    return _spec((nodes or 1) * per_cell, (nodes or 1) * draw(
        st.sampled_from([256, 1024])), extra)


@hypothesis.settings(max_examples=150, deadline=None, suppress_health_check=[
    hypothesis.HealthCheck.too_slow])
@hypothesis.given(data=st.data(), spec=specs())
def test_the_columns_answer_as_the_per_host_fit(data, spec):
    states = [data.draw(host_states(index)) for index in range(
        data.draw(st.integers(1, 6)))]
    filt = numa_topology_filter.NUMATopologyFilter()
    wanted = hardware.Request.from_spec(spec)
    assert cell_figures.shape_of(wanted.numa) is not None
    # fakes.passes checks that the batch path equals host_passes.
    passed = fakes.passes(filt, states, spec)
    hypothesis.event('%d of %d pass' % (sum(passed), len(states)))


def test_unreadable_hosts_are_left_to_the_per_host_fit(caplog):
    topology = hosts.host(hosts.cell(0, [0], [1, 2], memory_mb=4096))
    states = [_state('good', topology),
              _state('bad', topology, {'cells': [{'id': 7}]}),
              _state('none')]
    table = fakes.table(states)
    shape = cell_figures.Shape(1, 2, 0, 1024, None, True, None)
    fits, decided = numa_columns.fit(table, shape)
    assert list(fits) == [True, False, False]
    assert list(decided) == [True, False, True]
    spec = _spec(2, 1024, {'hw:cpu_policy': 'dedicated'})
    assert fakes.passes(numa_topology_filter.NUMATopologyFilter(), states,
                        spec) == [True, False, False]
    assert 'bad' in caplog.text


def test_columns_follow_claims_on_derived_tables():
    topology = hosts.host(*[hosts.cell(cell, [], range(cell * 4,
                                                       cell * 4 + 4))
                            for cell in (0, 1)])
    table = fakes.table([_state('a', topology), _state('b', topology)])
    filt = numa_topology_filter.NUMATopologyFilter()
    spec = _spec(4, 1024, {'hw:cpu_policy': 'dedicated'})
    wanted = hardware.Request.from_spec(spec)
    everyone = np.ones(2, dtype=np.bool_)
    assert list(filt.filter_all(table, everyone, spec)) == [True, True]
    for _ in range(2):
        table = table.consumed(0, fakes.spec().resources(), wanted)
    assert list(filt.filter_all(table, everyone, spec)) == [False, True]
    # A three-cell host joins: the columns widen.
    wider = hosts.host(*[hosts.cell(cell, [], range(cell * 4, cell * 4 + 4))
                         for cell in (0, 1, 2)])
    table = table.replace({1: _state('b', wider)})
    assert list(filt.filter_all(table, everyone, _spec(
        12, 3072, {'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '3'}))) \
        == [False, True]
