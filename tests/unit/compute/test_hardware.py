"""The fake agent's hardware options: read, checked, reported."""

import json

import pytest

from compute import hardware
from compute import manager
from scheduler import exception
from scheduler.objects import request_spec

TOPOLOGY = {'cells': [{'id': 0, 'cpuset': [0, 1], 'pcpuset': [2, 3],
                       'memory_mb': 2048, 'siblings': [],
                       'mempages': [{'size_kb': 4, 'total': 524288}]}]}
POOLS = [{'vendor_id': '8086', 'product_id': '154d', 'numa_node': 0,
          'count': 2, 'tags': {'physical_network': 'physnet1'}}]


def test_the_options_are_reported_with_the_inventory(config):
    config.config(numa_topology=json.dumps(TOPOLOGY),
                  pci_device_pools=json.dumps(POOLS),
                  cpu_info='{"model": "Haswell", "features": ["avx2"]}',
                  disk_available_least=-5, group='fake_virt')
    inventory = manager.ComputeManager(host='c1')._inventory('c1')
    assert inventory['numa_topology'] == TOPOLOGY
    assert inventory['pci_device_pools'] == POOLS
    assert inventory['cpu_info'] == {'model': 'Haswell',
                                     'features': ['avx2']}
    assert inventory['disk_available_least'] == -5


def test_unset_options_report_none(config):
    inventory = manager.ComputeManager(host='c1')._inventory('c1')
    assert [inventory[name] for name in (
        'cpu_info', 'disk_available_least', 'numa_topology',
        'pci_device_pools')] == [None, None, None, None]


def test_an_agent_override_may_give_the_document_itself(config):
    agent = manager.ComputeManager(host='c1',
                                   capacity={'numa_topology': TOPOLOGY})
    assert agent._inventory('c1')['numa_topology'] == TOPOLOGY


def test_bad_json_names_the_option(config):
    config.config(pci_device_pools='[{"count": 2', group='fake_virt')
    with pytest.raises(exception.ConfigError) as error:
        manager.ComputeManager(host='c1')
    assert str(error.value).startswith(
        'Configuration error: [fake_virt] pci_device_pools is not valid '
        'JSON: ')


def test_a_topology_out_of_shape_names_the_option_and_the_problem():
    broken = {'cells': [{'id': 0, 'cpuset': [0, 1], 'pcpuset': [1],
                         'memory_mb': 2048}]}
    options = {'numa_topology': json.dumps(broken)}
    with pytest.raises(exception.ConfigError) as error:
        hardware.configured(lambda name: options.get(name))
    assert str(error.value) == (
        'Configuration error: [fake_virt] numa_topology: '
        'numa_topology.cells[0].pcpuset lists CPU(s) [1] that another set '
        'or cell lists too')


def test_the_least_drops_by_the_disk_of_the_instances_on_the_node(config):
    config.config(disk_available_least=100, node_count=2, group='fake_virt')
    agent = manager.ComputeManager(host='c1')
    flavor = request_spec.Flavor(vcpus=1, memory_mb=512, root_gb=20,
                                 ephemeral_gb=5, swap=1024)
    agent._track('9a8b7c6d-5e4f-4a3b-8c2d-1e0f00000001', 'c1-1',
                 request_spec.RequestSpec(flavor=flavor))
    # 20 + 5 + 1 GB of swap on c1-1; nothing on c1-2.
    assert agent._inventory('c1-1')['disk_available_least'] == 74
    assert agent._inventory('c1-2')['disk_available_least'] == 100
