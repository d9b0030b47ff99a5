"""NUMATopologyFilter on both paths: Nova's cases on small hosts worked
out by hand, the prescreen never dropping a host that fits, PCI devices
fitted on the instance's cells."""

import json

import hypothesis
from hypothesis import strategies as st
import pytest

from scheduler import exception
from scheduler.filters import numa_topology_filter
from scheduler.pci import pools
from scheduler.pci import request as pci_request
from tests.unit.scheduler import fakes
from tests.unit.scheduler.numa import hosts

# Two cells of 4 dedicated CPUs in 2 cores each, 4 shared CPUs, 8 GiB
# with 512 pages of 2 MiB.
def _two_cells(pinned=((), ()), pages_used=(0, 0)):
    topology = hosts.host(*[
        hosts.cell(cell, cpuset=range(cell * 8, cell * 8 + 4),
                   pcpuset=range(cell * 8 + 4, cell * 8 + 8),
                   memory_mb=8192,
                   siblings=[[cell * 8 + 4, cell * 8 + 5],
                             [cell * 8 + 6, cell * 8 + 7]],
                   mempages={4: 1048576, 2048: 512})
        for cell in (0, 1)])
    usage = hosts.usage(*[
        {'id': cell, 'pinned_cpus': list(pinned[cell]),
         'mempages_used': {'2048': pages_used[cell]}}
        for cell in (0, 1)])
    return topology, usage


def _state(name, topology=None, usage=None, **extra):
    return fakes.host_state(name, numa_topology=topology, numa_usage=usage,
                            cpu_ratio=1.0, ram_ratio=1.0, **extra)


def _spec(vcpus=2, memory_mb=1024, **extra_specs):
    spec = fakes.spec(vcpus=vcpus, memory_mb=memory_mb)
    spec.flavor.extra_specs = {key.replace('__', ':'): str(value)
                               for key, value in extra_specs.items()}
    return spec


@pytest.fixture
def filt():
    return numa_topology_filter.NUMATopologyFilter()


def test_a_request_without_numa_needs_passes_every_host(filt):
    states = [_state('plain'), _state('numa', *_two_cells())]
    assert fakes.passes(filt, states, _spec()) == [True, True]


def test_a_pinned_request_needs_a_host_with_free_dedicated_cpus(filt):
    # Cell 0 has CPUs 4-7 pinned, cell 1 CPUs 12-14: one free on cell 1.
    full = _two_cells(pinned=((4, 5, 6, 7), (12, 13, 14)))
    half = _two_cells(pinned=((4, 5), ()))
    states = [_state('plain'), _state('full', *full),
              _state('half', *half), _state('empty', *_two_cells())]
    spec = _spec(vcpus=2, hw__cpu_policy='dedicated')
    assert fakes.passes(filt, states, spec) == [False, False, True, True]
    # Four pinned vCPUs fit only a cell with four free: 'half' has 2 and
    # 4 on its cells, so it passes; on one node.
    spec = _spec(vcpus=4, hw__cpu_policy='dedicated')
    assert fakes.passes(filt, states, spec) == [False, False, True, True]
    # Five do not fit in a cell of four.
    spec = _spec(vcpus=5, hw__cpu_policy='dedicated')
    assert fakes.passes(filt, states, spec) == [False, False, False, False]
    # ... but split over two nodes (3 + 2) they fit an empty host, and
    # 'half' (2 free on cell 0, 4 on cell 1) with the guest cells
    # crossed: 3 on host cell 1, 2 on host cell 0.
    spec = _spec(vcpus=5, hw__cpu_policy='dedicated', hw__numa_nodes=2,
                 **{'hw__numa_cpus.0': '0-2', 'hw__numa_cpus.1': '3,4',
                    'hw__numa_mem.0': 512, 'hw__numa_mem.1': 512})
    assert fakes.passes(filt, states, spec) == [False, False, True, True]


def test_isolate_passes_only_hosts_without_smt(filt):
    # Nova since bug 1889633: a host reporting dedicated CPUs and
    # hyperthread siblings takes no 'isolate' guest, however free.
    no_smt = hosts.host(hosts.cell(0, cpuset=[0], pcpuset=[1, 2, 3],
                                   memory_mb=8192))
    states = [_state('smt', *_two_cells()), _state('no-smt', no_smt)]
    isolate = dict(hw__cpu_policy='dedicated',
                   hw__cpu_thread_policy='isolate')
    assert fakes.passes(filt, states, _spec(vcpus=1, **isolate)) == [
        False, True]
    assert fakes.passes(filt, states, _spec(vcpus=4, **isolate)) == [
        False, False]
    # The same guest without a thread policy fits both.
    assert fakes.passes(filt, states, _spec(
        vcpus=3, hw__cpu_policy='dedicated')) == [True, True]


def test_huge_pages_must_be_free_on_one_cell(filt):
    # 1024 MiB of 2 MiB pages is 512 pages: cell 0 has 12 free, cell 1
    # has 512.
    states = [_state('cell1-free', *_two_cells(pages_used=(500, 0))),
              _state('none-free', *_two_cells(pages_used=(500, 100)))]
    spec = _spec(vcpus=1, memory_mb=1024, hw__mem_page_size='2MB')
    assert fakes.passes(filt, states, spec) == [True, False]
    # Memory that is not a whole number of pages never fits.
    spec = _spec(vcpus=1, memory_mb=1023, hw__mem_page_size='2048')
    assert fakes.passes(filt, states, spec) == [False, False]


def test_a_malformed_extra_spec_is_refused_naming_it(filt):
    with pytest.raises(exception.InvalidRequest, match='numa_nodes'):
        filt.host_passes(_state('h', *_two_cells()),
                         _spec(vcpus=2, hw__numa_nodes='three'))


QAT = json.dumps({'name': 'qat', 'vendor_id': '8086', 'product_id': '0443',
                  'device_type': 'type-PCI', 'numa_policy': 'required'})


def _pool(count, numa_node):
    return {'vendor_id': '8086', 'product_id': '0443',
            'numa_node': numa_node, 'count': count,
            'tags': {'dev_type': 'type-PCI'}}


def test_pci_devices_are_fitted_on_the_instance_cells(filt, config):
    config.config(alias=[QAT], group='pci')
    topology, usage = _two_cells(pinned=((), (12, 13, 14, 15)))
    # The devices are on cell 1, whose dedicated CPUs are all pinned: a
    # pinned instance fits only on cell 0, where the required policy
    # finds no device.
    on_cell1 = _state('devices-on-full-cell', topology, usage,
                      pci_device_pools=[_pool(2, 1)], pci_usage={})
    on_cell0 = _state('devices-on-free-cell', topology, usage,
                      pci_device_pools=[_pool(2, 0)], pci_usage={})
    used = _state('device-used', topology, usage,
                  pci_device_pools=[_pool(1, 0)],
                  pci_usage={pools.pool_key(_pool(1, 0)): 1})
    spec = _spec(vcpus=2, hw__cpu_policy='dedicated')
    spec.flavor.extra_specs[pci_request.ALIAS_EXTRA_SPEC] = 'qat:1'
    assert fakes.passes(filt, [on_cell1, on_cell0, used], spec) == [
        False, True, False]


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(
    pinned=st.tuples(st.sets(st.integers(4, 7)), st.sets(st.integers(12, 15))),
    pages=st.tuples(st.integers(0, 512), st.integers(0, 512)),
    vcpus=st.integers(1, 6), nodes=st.sampled_from([None, 1, 2]),
    policy=st.sampled_from(['dedicated', 'shared', 'mixed']),
    page_size=st.sampled_from([None, '2MB', 'small']))
def test_the_batch_path_equals_the_per_host_path(pinned, pages, vcpus, nodes,
                                                  policy, page_size):
    filt = numa_topology_filter.NUMATopologyFilter()
    states = [_state('h%d' % index, *_two_cells(pinned, pages))
              for index in range(3)] + [_state('plain')]
    extra = {'hw__cpu_policy': policy}
    if policy == 'mixed':
        if vcpus < 2:
            return
        extra['hw__cpu_dedicated_mask'] = '^0'
    if nodes is not None and vcpus % nodes == 0:
        extra['hw__numa_nodes'] = nodes
    if page_size is not None:
        extra['hw__mem_page_size'] = page_size
    # fakes.passes asserts that both paths agree.
    fakes.passes(filt, states, _spec(vcpus=vcpus, memory_mb=1024, **extra))


def test_an_equal_request_refits_only_the_hosts_that_changed(filt):
    # The answers of a request are kept for the next equal one, on the
    # tables derived from the first (claims, refreshes): a host whose
    # usage changed meanwhile is fitted again.
    states = [_state('h%d' % index, *_two_cells()) for index in range(3)]
    spec = _spec(vcpus=4, hw__cpu_policy='dedicated')
    first = fakes.table(states)
    assert list(filt.filter_all(first, first.candidates | True, spec)) == [
        True, True, True]
    full = _state('h1', *_two_cells(pinned=((4, 5, 6, 7), (12, 13))))
    second = first.replace({1: full})
    assert list(filt.filter_all(second, second.candidates | True,
                                spec)) == [True, False, True]
    # The first table still answers for its own states.
    assert list(filt.filter_all(first, first.candidates | True, spec)) == [
        True, True, True]
