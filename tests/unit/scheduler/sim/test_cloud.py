"""Cloud files: what they describe, and the key an error names."""

import json

import pytest

from scheduler.sim import cloud as sim_cloud

CLOUD = '''
[[hosts]]
name = "big"
count = 3
vcpus = 64
memory_mb = 262144
disk_gb = 4000
zone = "az1"
aggregates = ["ssd"]

[[hosts]]
name = "small"
count = 1
vcpus = 8
memory_mb = 16384
disk_gb = 100

[aggregates.ssd]
ssd = "true"
'''


def _load(tmp_path, text):
    path = tmp_path / 'cloud.toml'
    path.write_text(text)
    return sim_cloud.load_cloud(str(path))


def test_a_cloud_file_and_its_scaling(tmp_path):
    cloud = _load(tmp_path, CLOUD)
    assert cloud.host_count == 4
    assert cloud.host_names() == ['big-000001', 'big-000002', 'big-000003',
                                  'small-000001']
    assert cloud.aggregates == {'ssd': {'ssd': 'true'}}
    # No [[flavors]]: the default ones; the most common is m1.small.
    assert cloud.most_common_flavor().name == 'm1.small'
    scaled = cloud.scaled(40)
    assert [g.count for g in scaled.groups] == [30, 10]


@pytest.mark.parametrize('change, message', [
    (('count = 3', 'count = 0'), 'hosts[0].count: must be an integer >= 1'),
    (('vcpus = 8', 'vcpus = "8"'), "hosts[1].vcpus: must be an integer"),
    (('aggregates = ["ssd"]', 'aggregates = ["nvme"]'),
     "hosts[0].aggregates: 'nvme' is not in [aggregates]"),
    (('zone = "az1"', 'zone = "az1"\ncolour = "red"'),
     'hosts[0].colour: unknown key'),
    (('ssd = "true"', 'ssd = true'), 'aggregates.ssd.ssd: metadata values'),
    (('name = "small"', 'name = "big"'), 'hosts: two [[hosts]] tables'),
])
def test_each_error_names_the_key(tmp_path, change, message):
    with pytest.raises(sim_cloud.CloudError) as caught:
        _load(tmp_path, CLOUD.replace(*change))
    assert message in str(caught.value), str(caught.value)
    assert str(caught.value).startswith(str(tmp_path / 'cloud.toml'))


def test_a_file_that_is_not_toml(tmp_path):
    with pytest.raises(sim_cloud.CloudError, match='cloud.toml: '):
        _load(tmp_path, '[[hosts]\n')


NUMA_CLOUD = '''
[[hosts]]
name = "numa"
count = 2
disk_gb = 100

[[hosts.numa_topology.cells]]
id = 0
cpuset = [0, 1]
pcpuset = [2, 3]
memory_mb = 4096

[[hosts.numa_topology.cells]]
id = 1
cpuset = [4, 5]
pcpuset = [6, 7]
memory_mb = 4096

[[hosts]]
name = "qat"
count = 1
vcpus = 4
memory_mb = 8192
disk_gb = 100
numa_topology = """{"cells": [{"id": 0, "cpuset": [0, 1], \\
    "pcpuset": [2, 3], "memory_mb": 8192}]}"""
pci_device_pools = [{vendor_id = "8086", product_id = "0443", count = 2}]

[pci]
alias = [{name = "qat", vendor_id = "8086", product_id = "0443"}]

[[flavors]]
name = "pinned"
vcpus = 2
memory_mb = 1024
disk_gb = 10

[flavors.extra_specs]
"hw:cpu_policy" = "dedicated"
"pci_passthrough:alias" = "qat:1"
'''


def test_numa_and_pci_hosts_and_flavors_with_extra_specs(tmp_path,
                                                         config):
    cloud = _load(tmp_path, NUMA_CLOUD)
    numa, qat = cloud.groups
    # Sizes left out: the cells' sums.
    assert (numa.vcpus, numa.memory_mb) == (8, 8192)
    assert [cell['pcpuset'] for cell in numa.numa_topology['cells']] == [
        [2, 3], [6, 7]]
    # JSON text, as a [fake_virt] option holds it, is read the same way.
    assert qat.numa_topology['cells'][0]['memory_mb'] == 8192
    assert qat.pci_device_pools[0]['count'] == 2
    assert cloud.flavor('pinned').extra_specs == {
        'hw:cpu_policy': 'dedicated', 'pci_passthrough:alias': 'qat:1'}
    assert json.loads(cloud.pci_aliases[0])['name'] == 'qat'
    config.config(alias=list(cloud.pci_aliases), group='pci')
    sim_cloud.check_extra_specs(cloud)


@pytest.mark.parametrize('change, message', [
    (('pcpuset = [2, 3]\nmemory_mb = 4096', 'pcpuset = [1, 3]\n'
      'memory_mb = 4096'), 'hosts[0].numa_topology.cells[0]'),
    (('disk_gb = 100\n\n[[hosts.numa', 'disk_gb = 100\nvcpus = 16\n\n'
      '[[hosts.numa'), 'hosts[0].vcpus: 16, but the numa_topology cells '
     'hold 8'),
    (('"""{"cells": [{', '"""{"cells": [{{'), 'hosts[1].numa_topology: '
     'not valid JSON'),
    (('count = 2}]', 'count = -2}]'), 'hosts[1].pci_device_pools[0].count'),
    (('alias = [{name = "qat", ', 'alias = [{'), 'pci.alias: '),
    (('"qat:1"\n', '"qat:1"\ncolour = 3\n'), 'flavors[0].extra_specs: '
     'must be a table of strings'),
])
def test_each_hardware_error_names_the_key(tmp_path, change, message):
    assert change[0] in NUMA_CLOUD
    with pytest.raises(sim_cloud.CloudError) as caught:
        _load(tmp_path, NUMA_CLOUD.replace(*change, 1))
    assert message in str(caught.value), str(caught.value)
    assert str(caught.value).startswith(str(tmp_path / 'cloud.toml'))
    assert '\n' not in str(caught.value)


@pytest.mark.parametrize('specs, message', [
    ('"hw:cpu_policy" = "pinned"', 'hw:cpu_policy'),
    ('"pci_passthrough:alias" = "gpu:1"', 'gpu'),
])
def test_extra_specs_a_request_would_refuse(tmp_path, config, specs,
                                            message):
    text = NUMA_CLOUD.replace(
        '"hw:cpu_policy" = "dedicated"\n"pci_passthrough:alias" = '
        '"qat:1"\n', specs + '\n')
    assert text != NUMA_CLOUD
    cloud = _load(tmp_path, text)
    config.config(alias=list(cloud.pci_aliases), group='pci')
    with pytest.raises(sim_cloud.CloudError) as caught:
        sim_cloud.check_extra_specs(cloud)
    assert str(caught.value).startswith('flavors[0].extra_specs: ')
    assert message in str(caught.value), str(caught.value)


def test_the_module_docstring_example_is_a_cloud_file(tmp_path):
    example = sim_cloud.__doc__.split('::\n', 1)[1].split('\n:func:')[0]
    cloud = _load(tmp_path, '\n'.join(line[4:]
                                      for line in example.splitlines()))
    assert [(g.name, g.vcpus, g.memory_mb) for g in cloud.groups] == [
        ('general', 32, 131072), ('pinned', 4, 65536),
        ('avx2', 32, 131072), ('gold', 0, 0)]
    assert cloud.groups[1].pci_device_pools[0]['count'] == 2
    assert cloud.groups[2].traits == ('HW_CPU_X86_AVX2',)
    assert cloud.groups[3].inventories['CUSTOM_BAREMETAL_GOLD']['total'] \
        == 1
    assert cloud.flavor('bm.gold').extra_specs['resources:VCPU'] == '0'
