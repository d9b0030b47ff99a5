"""A real compute agent reports its nodes' inventories of other classes
and traits through the real conductor (ConductorAPI 1.5), in process
(fake:// transport, SQLite); a conductor capped below 1.5 takes the
report without them; the conductor refuses malformed ones."""

import pytest

from conductor import payloads
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import inventories
from scheduler import exception
from tests.unit import inprocess

PROVIDER_CONFIG = '''\
meta:
  schema_version: '1.0'
providers:
  - identification:
      uuid: $COMPUTE_NODE
    inventories:
      additional:
        - CUSTOM_FPGA: {total: 2, max_unit: 1}
    traits:
      additional: [CUSTOM_GOLD]
'''


def _reported(host):
    """``(node row, full inventory, traits)`` of the host's one node."""
    with db_api.reader() as session:
        [row] = [row for row in db_compute_nodes.get_nodes(session)
                 if row.host == host]
        return (row, inventories.node_inventory(session, row.id),
                inventories.node_traits(session, [row.id]).get(row.id))


def test_a_compute_reports_pcpu_custom_classes_and_traits(database, config,
                                                          tmp_path):
    inprocess.configure(config, exact_ratios=True)
    (tmp_path / 'fpga.yaml').write_text(PROVIDER_CONFIG)
    config.config(cpu_shared_set='0-1', cpu_dedicated_set='2-7',
                  provider_config_location=str(tmp_path), group='compute')
    with inprocess.Cluster({'h1': {'vcpus': 8, 'memory_mb': 4096,
                                   'traits': ['HW_CPU_X86_AVX2']}}):
        row, inventory, traits = _reported('h1')
    assert row.vcpus == 2
    assert sorted(inventory) == ['CUSTOM_FPGA', 'DISK_GB', 'MEMORY_MB',
                                 'PCPU', 'VCPU']
    assert inventory['PCPU'] == {
        'total': 6, 'reserved': 0, 'min_unit': 1, 'max_unit': 6,
        'step_size': 1, 'allocation_ratio': 1.0, 'used': 0}
    assert inventory['CUSTOM_FPGA'] == dict(
        inventories.DEFAULTS, total=2, max_unit=1, used=0)
    assert inventory['VCPU']['total'] == 2
    assert traits == {'COMPUTE_NODE', 'CUSTOM_GOLD', 'HW_CPU_X86_AVX2'}


def test_a_baremetal_node_reports_its_class_alone(database, config):
    inprocess.configure(config)
    with inprocess.Cluster({'bm': {'baremetal_nodes': 1,
                                   'baremetal_resource_class': 'gold',
                                   'traits': ['CUSTOM_RAID1']}}):
        row, inventory, traits = _reported('bm')
    assert (row.hypervisor_type, row.vcpus, row.memory_mb, row.local_gb) == (
        'ironic', 0, 0, 0)
    assert inventory == {'CUSTOM_GOLD': {
        'total': 1, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
        'step_size': 1, 'allocation_ratio': 1.0, 'used': 0}}
    assert traits == {'COMPUTE_NODE', 'CUSTOM_RAID1'}


def test_a_conductor_capped_at_1_4_takes_the_report_without_them(
        database, config):
    inprocess.configure(config)
    config.config(conductor='1.4', group='upgrade_levels')
    config.config(cpu_dedicated_set='4-7', group='compute')
    with inprocess.Cluster({'h1': {'vcpus': 8, 'memory_mb': 4096}}):
        row, inventory, traits = _reported('h1')
    # The classic columns came (VCPU from the CPU sets: none shared)...
    assert (row.vcpus, row.memory_mb) == (0, 4096)
    # ...the other classes and the traits did not.
    assert sorted(inventory) == ['DISK_GB', 'MEMORY_MB']
    assert traits is None


NODE = {'uuid': '2f1e7b7c-3a41-4c55-9b7e-0d2f9d5c1a10', 'nodename': 'h1',
        'inventory': {'vcpus': 4}}


@pytest.mark.parametrize('extra, message', [
    ({'inventories': {'VCPU': {'total': 4}}},
     "nodes[0].inventories['VCPU'] is reported in the inventory"),
    ({'inventories': {'custom_x': {'total': 4}}},
     "nodes[0].inventories['custom_x'] is neither a standard resource class"),
    ({'inventories': {'PCPU': {'reserved': 1}}},
     "nodes[0].inventories['PCPU'] must have a total"),
    ({'inventories': {'PCPU': {'total': 0}}},
     "nodes[0].inventories['PCPU'].total must be at least 1, not 0"),
    ({'inventories': {'PCPU': {'total': 2, 'reserved': 3}}},
     "nodes[0].inventories['PCPU'].reserved must be at most 2, not 3"),
    ({'inventories': {'PCPU': {'total': 2, 'min_unit': 2, 'max_unit': 1}}},
     "nodes[0].inventories['PCPU'].max_unit must be at least 2, not 1"),
    ({'inventories': {'PCPU': {'total': 2, 'allocation_ratio': 0.0}}},
     "nodes[0].inventories['PCPU'].allocation_ratio must be more than 0"),
    ({'inventories': {'PCPU': {'total': 2, 'colour': 1}}},
     'may have only total, reserved'),
    ({'inventories': ['PCPU']}, 'nodes[0].inventories must be a dict'),
    ({'traits': ['COMPUTE_NODE', 'HW_CPU_NOPE']},
     "nodes[0].traits[1] 'HW_CPU_NOPE' is neither a standard trait"),
    ({'traits': 'CUSTOM_A'}, 'nodes[0].traits must be a list'),
    ({'resources': {}}, 'may have inventories and traits'),
])
def test_the_conductor_refuses_malformed_classes_and_traits(extra, message):
    with pytest.raises(exception.InvalidRequest) as error:
        payloads.checked_nodes('h1', [dict(NODE, **extra)])
    assert message in str(error.value)


def test_the_conductor_takes_standard_and_custom_names():
    node = dict(NODE, inventories={'PCPU': {'total': 4},
                                   'CUSTOM_BAREMETAL_GOLD': {'total': 1}},
                traits=['COMPUTE_NODE', 'CUSTOM_X'])
    assert payloads.checked_nodes('h1', [node]) == [node]
