"""The filter scheduler with nested providers: granular groups on NUMA
cells ([filter_scheduler] numa_in_placement) and PCI devices
([filter_scheduler] pci_in_placement), and what the claims take."""

import json

import pytest

from scheduler.drivers import filter_scheduler
from scheduler import exception
from scheduler.pci import pools as pci_pools
from tests.unit.scheduler.drivers import test_placement_stage as stage

TWO_CELLS = {'cells': [
    {'id': cell, 'cpuset': [cell * 8, cell * 8 + 1],
     'pcpuset': list(range(cell * 8 + 4, cell * 8 + 8)), 'memory_mb': 8192}
    for cell in (0, 1)]}
ONE_CELL = {'cells': [{'id': 0, 'cpuset': [0, 1],
                       'pcpuset': list(range(4, 12)), 'memory_mb': 16384}]}


def pf_pool(count, **tags):
    return {'vendor_id': '8086', 'product_id': '154d', 'numa_node': 0,
            'count': count, 'tags': dict({'dev_type': 'type-PF'}, **tags)}


@pytest.fixture
def driver(cloud, make_driver):
    return make_driver(filter_scheduler.FilterScheduler)


@pytest.fixture
def numa(config):
    config.config(numa_in_placement=True, group='filter_scheduler')


def _pcpu_nodes(cloud):
    # 'wide' (one cell of 8) has more RAM: the weighers would take it.
    cloud.add_node('wide', numa_topology=ONE_CELL, memory_mb=65536)
    cloud.add_node('split', numa_topology=TWO_CELLS, memory_mb=8192)
    for name in ('wide', 'split'):
        stage._give(cloud, name, inventories_={'PCPU': {'total': 8}})


# Nova's rule: the PCPU asked is the flavor's vCPUs.
ISOLATED = {'resources1:PCPU': '2', 'resources2:PCPU': '2',
            'group_policy': 'isolate'}


def test_isolated_groups_need_two_cells_with_numa_in_placement(
        cloud, driver, numa):
    _pcpu_nodes(cloud)
    uuids, hosts = stage._place(driver, stage._spec(ISOLATED, vcpus=4))
    assert hosts == ['split']
    # The node's PCPU inventory takes the groups' sum.
    assert stage._items(uuids[0]) == {cloud.nodes['split']: {'PCPU': 4}}


def test_without_the_option_the_node_is_one_provider(cloud, driver):
    _pcpu_nodes(cloud)
    with pytest.raises(exception.NoValidHost):
        stage._place(driver, stage._spec(ISOLATED, vcpus=4))
    _, hosts = stage._place(driver, stage._spec(
        dict(ISOLATED, group_policy='none'), vcpus=4))
    assert hosts == ['wide']


def test_a_pinned_guest_of_two_nodes_asks_pcpu_per_cell(cloud, driver,
                                                         numa):
    # 6 pinned vCPUs in two nodes: 3 per cell. 'small' has the most RAM
    # and 6 PCPU, but 2 per cell; 'split' has 4 per cell.
    small = {'cells': [dict(cell, pcpuset=cell['pcpuset'][:2])
                       for cell in TWO_CELLS['cells']]}
    cloud.add_node('small', numa_topology=small, memory_mb=131072)
    stage._give(cloud, 'small', inventories_={'PCPU': {'total': 6}})
    cloud.add_node('split', numa_topology=TWO_CELLS, memory_mb=8192)
    stage._give(cloud, 'split', inventories_={'PCPU': {'total': 8}})
    spec = stage._spec({'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '2'},
                       vcpus=6, memory_mb=2048)
    uuids, hosts = stage._place(driver, spec)
    assert hosts == ['split']
    assert stage._items(uuids[0]) == {cloud.nodes['split']: {'PCPU': 6}}


@pytest.fixture
def pci(config):
    config.config(pci_in_placement=True, group='filter_scheduler')
    config.config(alias=[json.dumps({
        'name': 'nic', 'vendor_id': '8086', 'product_id': '154d',
        'device_type': 'type-PF', 'traits': 'fast'})], group='pci')


def test_pci_groups_need_the_alias_traits_and_claim_only_devices(
        cloud, driver, pci):
    fast, plain = pf_pool(2, traits='fast'), pf_pool(2)
    cloud.add_node('fast', pci_device_pools=[fast], memory_mb=8192)
    cloud.add_node('plain', pci_device_pools=[plain], memory_mb=65536)
    spec = stage._spec({'pci_passthrough:alias': 'nic:2'})
    uuids, hosts = stage._place(driver, spec)
    assert hosts == ['fast']
    # The devices are the PCI claim's: no class of theirs on the node.
    assert stage._items(uuids[0]) == {}
    row = cloud.node_row('fast')
    assert row.pci_usage == {pci_pools.pool_key(fast): 2}
    # Both PFs are taken: the next asks in vain.
    with pytest.raises(exception.NoValidHost):
        stage._place(driver, spec)


def test_pci_alias_of_two_entries_is_refused_with_pci_in_placement(
        cloud, driver, pci, config):
    config.config(alias=[
        json.dumps({'name': 'nic', 'vendor_id': '8086',
                    'product_id': product}) for product in ('154d', '154c')],
        group='pci')
    cloud.add_node('h1', pci_device_pools=[pf_pool(2)])
    with pytest.raises(exception.InvalidResourceRequest,
                       match="alias 'nic' has 2 entries"):
        stage._place(driver, stage._spec({'pci_passthrough:alias': 'nic:1'}))
