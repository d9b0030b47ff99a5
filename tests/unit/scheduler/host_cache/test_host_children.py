"""Nested providers in HostTable.placement: NUMA cells holding PCPU
([filter_scheduler] numa_in_placement) and PCI devices
([filter_scheduler] pci_in_placement), asked by granular groups."""

import pytest

from scheduler import host_cache
from scheduler.db import claims
from scheduler.host_cache import host_children
from scheduler.host_cache import host_placement
from scheduler.pci import pools as pci_pools
from scheduler.resources import request as request_mod
from tests.unit.scheduler import fakes
from tests.unit.scheduler.numa import hosts


def pcpu(total, used=0):
    return host_cache.ClassInventory(total, 0, 1, total, 1, 1.0, used)


def two_cells(pinned=((), ())):
    """Two cells of 4 CPUs to pin each (and 2 shared)."""
    topology = hosts.host(*[
        hosts.cell(cell, cpuset=range(cell * 8, cell * 8 + 2),
                   pcpuset=range(cell * 8 + 4, cell * 8 + 8))
        for cell in (0, 1)])
    usage = hosts.usage(*[{'id': cell, 'pinned_cpus': list(pinned[cell])}
                          for cell in (0, 1)])
    return topology, usage


def pf_pool(count, numa_node=0, **tags):
    return {'vendor_id': '8086', 'product_id': '154d',
            'numa_node': numa_node, 'count': count,
            'tags': dict({'dev_type': 'type-PF'}, **tags)}


def vf_pool(count, numa_node=1, **tags):
    return {'vendor_id': '8086', 'product_id': '154c',
            'numa_node': numa_node, 'count': count,
            'tags': dict({'dev_type': 'type-VF'}, **tags)}


def groups(*asked, policy='isolate', unsuffixed=None):
    """A request of suffixed groups ``(resources, required traits)``."""
    found = [request_mod.RequestGroup(resources=unsuffixed)] \
        if unsuffixed else []
    found += [request_mod.RequestGroup(suffix=str(number),
                                       resources=resources,
                                       required_traits=frozenset(traits))
              for number, (resources, traits) in enumerate(asked, 1)]
    return request_mod.ResourceRequest(groups=tuple(found),
                                       group_policy=policy)


@pytest.fixture
def numa(config):
    config.config(numa_in_placement=True, group='filter_scheduler')


@pytest.fixture
def pci(config):
    config.config(pci_in_placement=True, group='filter_scheduler')


def numa_host(name, pinned=((), ()), **extra):
    topology, usage = two_cells(pinned)
    return fakes.host_state(name, numa_topology=topology, numa_usage=usage,
                            inventories={'PCPU': pcpu(8, sum(map(
                                len, pinned)))}, **extra)


def accepted(states, request):
    return fakes.table(states).placement.acceptable_roots(request).tolist()


def test_without_the_options_a_host_is_one_provider():
    state = numa_host('h1', pci_device_pools=[pf_pool(2)])
    placement = fakes.table([state]).placement
    assert list(placement.columns.uuids) == [state.uuid]
    # 5 + 3 PCPU fit the node's 8, as Nova 34 sees them (one provider:
    # only without isolate).
    assert accepted([state], groups(({'PCPU': 5}, ()), ({'PCPU': 3}, ()),
                                    policy='none')) == [True]
    assert accepted([state], groups(({'PCPU': 5}, ()),
                                    ({'PCPU': 3}, ()))) == [False]


def test_cells_hold_pcpu_and_isolate_puts_groups_on_distinct_cells(numa):
    state = numa_host('h1')
    placement = fakes.table([state]).placement
    assert sorted(placement.columns.uuids) == sorted(
        [state.uuid, state.uuid + ':numa0', state.uuid + ':numa1'])
    assert accepted([state], groups(({'PCPU': 4}, ()),
                                    ({'PCPU': 4}, ()))) == [True]
    # No cell has 5 to pin, though the node has 8.
    assert not accepted([state], groups(({'PCPU': 5}, ()),
                                        ({'PCPU': 3}, ())))[0]
    # Isolate: two groups of 2 on distinct cells; three need three cells.
    three = groups(({'PCPU': 2}, ()), ({'PCPU': 2}, ()), ({'PCPU': 2}, ()))
    assert not accepted([state], three)[0]
    assert accepted([state], groups(
        ({'PCPU': 2}, ()), ({'PCPU': 2}, ()), ({'PCPU': 2}, ()),
        policy='none')) == [True]
    # The unsuffixed group takes PCPU from one cell; VCPU stays on the
    # node.
    plain = request_mod.ResourceRequest(groups=(request_mod.RequestGroup(
        resources={'PCPU': 4, 'VCPU': 2}),))
    assert accepted([state], plain) == [True]
    allocation = fakes.table([state]).placement.allocation_for(
        plain, state.uuid)
    assert allocation[state.uuid] == {'VCPU': 2}
    assert list(allocation) in ([state.uuid, state.uuid + ':numa0'],
                                [state.uuid, state.uuid + ':numa1'])


def test_pinned_cpus_are_used_on_their_cell(numa):
    busy = numa_host('h1', pinned=((4, 5), ()))
    free = numa_host('h2')
    request = groups(({'PCPU': 3}, ()), ({'PCPU': 4}, ()))
    assert accepted([busy, free], request) == [False, True]
    assert accepted([busy, free], groups(({'PCPU': 2}, ()),
                                         ({'PCPU': 4}, ()))) == [True, True]


def test_a_node_without_pcpu_inventory_keeps_no_cells(numa):
    topology, usage = two_cells()
    state = fakes.host_state('h1', numa_topology=topology, numa_usage=usage)
    assert list(fakes.table([state]).placement.columns.uuids) == [state.uuid]


def test_pf_pool_is_one_provider_per_device_under_its_cell(numa, pci):
    state = numa_host('h1', pci_device_pools=[pf_pool(2, numa_node=0),
                                              vf_pool(4, numa_node=None)])
    kids = {child.uuid: child
            for child in host_children.of(state, 'cn', True, True)}
    assert {uuid: (child.parent, child.inventory)
            for uuid, child in kids.items()} == {
        'cn:numa0': ('cn', {'PCPU': (4, 0)}),
        'cn:numa1': ('cn', {'PCPU': (4, 0)}),
        'cn:pci0.0': ('cn:numa0', {'CUSTOM_PCI_8086_154D': (1, 0)}),
        'cn:pci0.1': ('cn:numa0', {'CUSTOM_PCI_8086_154D': (1, 0)}),
        # A pool on no cell hangs from the node.
        'cn:pci1.0': ('cn', {'CUSTOM_PCI_8086_154C': (4, 0)})}
    assert kids['cn:pci0.0'].traits == {'COMPUTE_MANAGED_PCI_DEVICE'}
    pf = {'CUSTOM_PCI_8086_154D': 1}
    assert accepted([state], groups((pf, ()), (pf, ()))) == [True]
    assert not accepted([state], groups((pf, ()), (pf, ()), (pf, ())))[0]


def test_pci_usage_takes_devices(pci):
    pool = pf_pool(2)
    used = fakes.host_state('h1', pci_device_pools=[pool],
                            pci_usage={pci_pools.pool_key(pool): 1})
    vfs = vf_pool(4)
    busy_vfs = fakes.host_state('h2', pci_device_pools=[vfs],
                                pci_usage={pci_pools.pool_key(vfs): 3})
    pf = {'CUSTOM_PCI_8086_154D': 1}
    vf = {'CUSTOM_PCI_8086_154C': 1}
    assert accepted([used, busy_vfs], groups((pf, ()), (pf, ()))) == [
        False, False]
    assert accepted([used, busy_vfs], groups((pf, ()),)) == [True, False]
    # VFs of one pool are one provider: 'none' lets two groups share it.
    assert accepted([used, busy_vfs], groups((vf, ()),)) == [False, True]
    assert accepted([used, busy_vfs], groups((vf, ()), (vf, ()),
                                             policy='none')) == [False, False]


def test_pool_tags_name_the_class_and_the_traits(pci):
    tagged = fakes.host_state('h1', pci_device_pools=[
        vf_pool(4, resource_class='nic-fast', traits='physnet1,HW_NIC_SRIOV',
                live_migratable='true')])
    plain = fakes.host_state('h2', pci_device_pools=[vf_pool(4)])
    asked = {'CUSTOM_NIC_FAST': 1}
    assert accepted([tagged, plain], groups((asked, ()),)) == [True, False]
    wanted = ('CUSTOM_PHYSNET1', 'HW_NIC_SRIOV', 'COMPUTE_MANAGED_PCI_DEVICE',
              'HW_PCI_LIVE_MIGRATABLE')
    assert accepted([tagged], groups((asked, wanted),)) == [True]
    assert accepted([tagged], groups((asked, ('CUSTOM_OTHER',)),)) == [False]


def test_children_follow_claims_in_derived_tables(numa, pci):
    topology, usage = two_cells()
    pool = pf_pool(2, numa_node=1)
    state = numa_host('h1', pci_device_pools=[pool])
    table = fakes.table([state])
    assert table.placement is not None
    pinned = hosts.usage({'id': 0, 'pinned_cpus': [4, 5, 6]},
                         {'id': 1, 'pinned_cpus': []})
    after = state.consumed(claims.Resources(0, 0, 0), extra={'PCPU': 3})
    after.numa_usage = pinned
    after.pci_usage = {pci_pools.pool_key(pool): 1}
    derived = table.replace({0: after})
    assert isinstance(derived._placement, host_placement.Deferred)
    rebuilt = host_placement.build(derived)
    for request in (groups(({'PCPU': 4}, ()), ({'PCPU': 1}, ())),
                    groups(({'PCPU': 4}, ()), ({'PCPU': 2}, ())),
                    groups(({'CUSTOM_PCI_8086_154D': 1}, ()),
                           ({'CUSTOM_PCI_8086_154D': 1}, ()))):
        assert (derived.placement.acceptable_roots(request).tolist()
                == rebuilt.acceptable_roots(request).tolist())
    assert derived.placement.acceptable_roots(
        groups(({'PCPU': 4}, ()), ({'PCPU': 1}, ()))).tolist() == [True]
    assert derived.placement.acceptable_roots(
        groups(({'PCPU': 4}, ()), ({'PCPU': 2}, ()))).tolist() == [False]
    assert not derived.placement.acceptable_roots(
        groups(({'CUSTOM_PCI_8086_154D': 1}, ()),
               ({'CUSTOM_PCI_8086_154D': 1}, ()))).tolist()[0]


def test_a_new_topology_builds_the_table_again(numa):
    state = numa_host('h1')
    table = fakes.table([state])
    assert table.placement is not None
    other = numa_host('h1', node_id=state.id)
    other.uuid = state.uuid
    other.numa_topology = hosts.host(hosts.cell(0, pcpuset=range(8)))
    other.numa_usage = None
    replaced = table.replace({0: other})
    assert replaced._placement is None
    assert replaced.placement.acceptable_roots(
        groups(({'PCPU': 8}, ()),)).tolist() == [True]


def test_child_names_are_stable():
    assert host_children.cell_uuid('cn', 1) == 'cn:numa1'
    assert host_children.pci_uuid('cn', 2, 3) == 'cn:pci2.3'
