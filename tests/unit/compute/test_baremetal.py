"""The fake agent's baremetal nodes: names, and the inventory of Nova's
Ironic driver (hypervisor type ironic, ratios 1.0, nothing reserved)."""

from compute import manager
from tests.unit.compute import test_manager


def test_without_the_option_the_agent_runs_virtual_nodes(config):
    config.config(node_count=2, group='fake_virt')
    agent = manager.ComputeManager(host='c1')
    assert (agent.baremetal, agent.nodes) == (False, ['c1-1', 'c1-2'])


def test_baremetal_nodes_replace_the_virtual_ones(config):
    config.config(node_count=3, baremetal_nodes=2, group='fake_virt')
    agent = manager.ComputeManager(host='c1')
    assert (agent.baremetal, agent.nodes) == (True, ['c1-bm-1', 'c1-bm-2'])


def test_a_baremetal_node_reports_a_whole_machine(config):
    config.config(reserved_host_memory_mb=512, reserved_host_cpus=1,
                  cpu_allocation_ratio=16.0)
    config.config(supported_instances=['aarch64:qemu:hvm', 'x86_64:qemu:hvm',
                                       'x86_64:kvm:hvm'],
                  group='fake_virt')
    agent = test_manager._agent(baremetal_nodes=1, vcpus=8, memory_mb=16384,
                                local_gb=200)
    inventory = agent._inventory('c1-bm-1')
    assert {key: inventory[key] for key in (
        'vcpus', 'memory_mb', 'local_gb', 'hypervisor_type',
        'reserved_vcpus', 'reserved_memory_mb', 'reserved_disk_gb',
        'cpu_allocation_ratio', 'ram_allocation_ratio',
        'disk_allocation_ratio', 'supported_instances')} == {
        'vcpus': 8, 'memory_mb': 16384, 'local_gb': 200,
        'hypervisor_type': 'ironic', 'reserved_vcpus': 0,
        'reserved_memory_mb': 0, 'reserved_disk_gb': 0,
        'cpu_allocation_ratio': 1.0, 'ram_allocation_ratio': 1.0,
        'disk_allocation_ratio': 1.0,
        'supported_instances': [['aarch64', 'baremetal', 'hvm'],
                                ['x86_64', 'baremetal', 'hvm']]}
    # The report goes to the conductor like any other.
    agent.update_available_resource(None)
    [(name, args, _kwargs)] = agent.conductor_api.calls
    assert name == 'compute_node_update'
    assert [node['nodename'] for node in args[2]] == ['c1-bm-1']


def test_a_baremetal_node_reports_hardware_as_the_ironic_driver(config):
    config.config(numa_topology='{"cells": [{"id": 0, "cpuset": [0], '
                  '"memory_mb": 1024}]}', cpu_info='{"model": "Haswell"}',
                  disk_available_least=5, group='fake_virt')
    agent = test_manager._agent(baremetal_nodes=1, local_gb=200)
    inventory = agent._inventory('c1-bm-1')
    assert [inventory[key] for key in (
        'cpu_info', 'numa_topology', 'pci_device_pools',
        'disk_available_least')] == [None, None, None, 200]
    # A virtual node of the same agent reports what is configured.
    virtual = test_manager._agent(local_gb=200)._inventory('c1')
    assert virtual['disk_available_least'] == 5
    assert virtual['cpu_info'] == {'model': 'Haswell'}
