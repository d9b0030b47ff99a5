"""Request groups made for nested providers: one per PCI device
([filter_scheduler] pci_in_placement), PCPU per guest NUMA node
([filter_scheduler] numa_in_placement), and Nova's default policy."""

import json

import pytest

from scheduler import exception
from scheduler.resources import generated_groups
from scheduler.resources import request
from tests.unit.scheduler.resources import test_from_spec as base


def _groups(found):
    return {group.suffix: (group.resources, set(group.required_traits))
            for group in found.groups}


@pytest.fixture
def pci(config):
    config.config(pci_in_placement=True, group='filter_scheduler')
    config.config(alias=[
        json.dumps({'name': 'nic', 'vendor_id': '8086', 'product_id': '154d',
                    'resource_class': 'nic-fast',
                    'traits': 'physnet1,HW_NIC_SRIOV'}),
        json.dumps({'name': 'qat', 'vendor_id': '8086',
                    'product_id': '0443'})], group='pci')


def test_each_device_is_a_group_of_one(pci):
    found = base._read({'pci_passthrough:alias': 'nic:2,qat:1'})
    traits = {'CUSTOM_PHYSNET1', 'HW_NIC_SRIOV'}
    assert _groups(found) == {
        '': (base.FLAVOR, set()),
        'pci-0-0': ({'CUSTOM_NIC_FAST': 1}, traits),
        'pci-0-1': ({'CUSTOM_NIC_FAST': 1}, traits),
        'pci-1-0': ({'CUSTOM_PCI_8086_0443': 1}, set())}
    # Groups from outside the flavor default the policy to 'none'.
    assert found.group_policy == 'none'
    # The claim on the node leaves the devices to the PCI claim.
    assert generated_groups.node_resources(found) == base.FLAVOR


def test_a_single_device_needs_no_policy(pci):
    found = base._read({'pci_passthrough:alias': 'qat:1'})
    assert found.group_policy is None
    assert 'pci-0-0' in _groups(found)


def test_the_flavors_policy_is_kept(pci):
    found = base._read({'pci_passthrough:alias': 'nic:2',
                        'group_policy': 'isolate'})
    assert found.group_policy == 'isolate'


def test_two_flavor_groups_without_policy_are_still_refused(pci):
    with pytest.raises(exception.ResourceRequestRefused,
                       match='sets no group_policy'):
        base._read({'pci_passthrough:alias': 'qat:1',
                    'resources1:CUSTOM_A': '1', 'resources2:CUSTOM_B': '1'})


def test_without_the_option_pci_asks_nothing_of_placement():
    found = base._read({'pci_passthrough:alias': 'nic:2'})
    assert found == base._one(base.FLAVOR)


@pytest.fixture
def numa(config):
    config.config(numa_in_placement=True, group='filter_scheduler')


def test_pinned_guest_of_two_nodes_asks_pcpu_per_node(numa):
    found = base._read({'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '2',
                        'hw:emulator_threads_policy': 'isolate'}, vcpus=6)
    assert _groups(found) == {
        '': ({'MEMORY_MB': 2048, 'DISK_GB': 10}, set()),
        'numa-0': ({'PCPU': 4}, set()), 'numa-1': ({'PCPU': 3}, set())}
    assert found.group_policy == 'none'
    assert generated_groups.node_resources(found)['PCPU'] == 7


def test_mixed_guest_asks_its_dedicated_cpus_per_node(numa):
    found = base._read({'hw:cpu_policy': 'mixed', 'hw:numa_nodes': '2',
                        'hw:cpu_dedicated_mask': '1,2,3'}, vcpus=4)
    groups = _groups(found)
    assert groups[''] == ({'VCPU': 1, 'MEMORY_MB': 2048, 'DISK_GB': 10},
                           set())
    assert groups['numa-0'][0]['PCPU'] + groups['numa-1'][0]['PCPU'] == 3


def test_one_node_keeps_pcpu_unsuffixed(numa):
    found = base._read({'hw:cpu_policy': 'dedicated'}, vcpus=4)
    assert found == base._one({'PCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 10})


def test_without_the_option_two_nodes_keep_pcpu_unsuffixed():
    found = base._read({'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '2'},
                       vcpus=4)
    assert [group.suffix for group in found.groups] == [request.UNSUFFIXED]
