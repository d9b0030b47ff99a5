"""What the fake agent reports beyond vCPUs, RAM and disk: PCPU and VCPU
from the CPU sets, traits, a baremetal node's class."""

import pytest

from compute import resources
from scheduler import exception
from tests.unit.compute import test_manager


def test_without_cpu_sets_every_cpu_is_a_vcpu(config):
    agent = test_manager._agent(vcpus=8)
    assert agent._inventory('c1')['vcpus'] == 8
    assert agent._placement_report('c1') == {
        'inventories': {}, 'traits': ['COMPUTE_NODE']}


def test_the_dedicated_set_is_pcpu_and_the_shared_set_vcpu(config):
    config.config(cpu_shared_set='0-1', cpu_dedicated_set='2-7,^5',
                  group='compute')
    agent = test_manager._agent(vcpus=8)
    assert agent._inventory('c1')['vcpus'] == 2
    assert agent._placement_report('c1')['inventories'] == {'PCPU': {
        'total': 5, 'reserved': 0, 'min_unit': 1, 'max_unit': 5,
        'step_size': 1, 'allocation_ratio': 1.0}}


def test_a_dedicated_set_alone_leaves_no_vcpu(config):
    config.config(cpu_dedicated_set='0-3', group='compute')
    assert resources.cpu_totals(8) == resources.CpuTotals(0, 4)
    config.config(cpu_dedicated_set=None, cpu_shared_set='1,3',
                  group='compute')
    assert resources.cpu_totals(8) == resources.CpuTotals(2, 0)


@pytest.mark.parametrize('options, message', [
    ({'cpu_shared_set': '0-3', 'cpu_dedicated_set': '3-5'},
     'must be disjoint (both have 3)'),
    ({'cpu_dedicated_set': '6-9'},
     'cpu_dedicated_set names CPUs the host does not have: 8-9 (it has 0-7)'),
    ({'cpu_shared_set': '0-x'}, "'0-x' is not a CPU number or range"),
    ({'cpu_shared_set': '0-3,^0-3'}, 'no CPUs left after parsing'),
])
def test_bad_cpu_sets_stop_the_agent(config, options, message):
    config.config(group='compute', **options)
    with pytest.raises(exception.ConfigError) as error:
        test_manager._agent(vcpus=8)
    assert message in str(error.value)


def test_reserved_host_cpus_cannot_go_with_the_sets(config):
    config.config(reserved_host_cpus=1)
    config.config(cpu_dedicated_set='0-3', group='compute')
    with pytest.raises(exception.ConfigError, match='reserved_host_cpus'):
        test_manager._agent(vcpus=8)


def test_configured_traits_and_compute_node(config):
    agent = test_manager._agent(traits=['HW_CPU_X86_AVX2', 'CUSTOM_GOLD'])
    assert agent._placement_report('c1')['traits'] == [
        'COMPUTE_NODE', 'CUSTOM_GOLD', 'HW_CPU_X86_AVX2']
    with pytest.raises(exception.ConfigError,
                       match='HW_NOT_A_TRAIT, custom_lower neither'):
        test_manager._agent(traits=['HW_NOT_A_TRAIT', 'custom_lower'])


def test_a_baremetal_node_is_one_unit_of_its_class(config):
    agent = test_manager._agent(baremetal_nodes=1, vcpus=8,
                                baremetal_resource_class='baremetal-gold.1')
    inventory = agent._inventory('c1-bm-1')
    assert (inventory['vcpus'], inventory['memory_mb'],
            inventory['local_gb'], inventory['disk_available_least']) == (
        0, 0, 0, 0)
    unit = {'total': 1, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
            'step_size': 1, 'allocation_ratio': 1.0}
    assert agent._placement_report('c1-bm-1') == {
        'inventories': {'CUSTOM_BAREMETAL_GOLD_1': unit},
        'traits': ['COMPUTE_NODE']}
    # Reserved while an instance is on it, as Nova's Ironic driver does.
    agent._instances['9a8b7c6d-5e4f-4a3b-8c2d-1e0f00000000'] = 'c1-bm-1'
    assert agent._placement_report('c1-bm-1')['inventories'] == {
        'CUSTOM_BAREMETAL_GOLD_1': dict(unit, reserved=1)}


def test_cpu_sets_do_not_apply_to_baremetal_nodes(config):
    config.config(cpu_dedicated_set='0-99', group='compute')
    agent = test_manager._agent(baremetal_nodes=1, vcpus=8)
    assert agent._inventory('c1-bm-1')['vcpus'] == 8
    assert agent._placement_report('c1-bm-1')['inventories'] == {}


def test_a_provider_config_conflict_stops_the_agent(config, tmp_path):
    (tmp_path / 'a.yaml').write_text(
        "meta: {schema_version: '1.0'}\nproviders:\n"
        "  - identification: {uuid: $COMPUTE_NODE}\n"
        "    inventories: {additional: [{CUSTOM_GOLD: {total: 2}}]}\n")
    config.config(provider_config_location=str(tmp_path), group='compute')
    with pytest.raises(exception.ConfigError,
                       match='reports itself: CUSTOM_GOLD'):
        test_manager._agent(baremetal_nodes=1,
                            baremetal_resource_class='gold')
