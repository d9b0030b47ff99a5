"""Cloud files with traits, other resource classes, provider config
files and baremetal pools: what they describe, each refusal, what the
database receives, and where a simulation puts the flavors that ask
for them."""

import pathlib
import random
import textwrap

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import inventories as db_inventories
from scheduler.db import models
from scheduler.sim import cloud as sim_cloud
from scheduler.sim import engine
from scheduler.sim import providers
from scheduler.sim import workload

CLOUD = '''
[[hosts]]
name = "avx2"
count = 2
vcpus = 16
memory_mb = 32768
disk_gb = 500
traits = ["HW_CPU_X86_AVX2", "CUSTOM_RACK_A"]

[[hosts]]
name = "gpu"
count = 3
vcpus = 16
memory_mb = 32768
disk_gb = 500
inventories = {VGPU = {total = 4, max_unit = 2, allocation_ratio = 1.0}}
provider_config = "provider-config/gpu.yaml"

[[hosts]]
name = "gold"
count = 3
resource_class = "baremetal-gold"
traits = ["CUSTOM_GOLD"]

[[flavors]]
name = "avx2.small"
vcpus = 2
memory_mb = 4096
disk_gb = 20
extra_specs = {"trait:HW_CPU_X86_AVX2" = "required"}

[[flavors]]
name = "gpu.small"
vcpus = 2
memory_mb = 4096
disk_gb = 20
extra_specs = {"resources:CUSTOM_GPU" = "1"}

[[flavors]]
name = "bm.gold"
vcpus = 8
memory_mb = 16384
disk_gb = 100

[flavors.extra_specs]
"resources:CUSTOM_BAREMETAL_GOLD" = "1"
"resources:VCPU" = "0"
"resources:MEMORY_MB" = "0"
"resources:DISK_GB" = "0"
'''

# Two GPUs on every gpu host, and a licence on the second.
PROVIDER_CONFIG = textwrap.dedent('''\
    meta:
      schema_version: '1.0'
    providers:
      - identification:
          uuid: $COMPUTE_NODE
        inventories:
          additional:
            - CUSTOM_GPU:
                total: 2
        traits:
          additional: [CUSTOM_GPU_A100]
      - identification:
          name: gpu-000002
        inventories:
          additional:
            - CUSTOM_GPU:
                total: 2
            - CUSTOM_LICENCE:
                total: 1
    ''')


def _write(tmp_path, text=CLOUD, provider_config=PROVIDER_CONFIG):
    (tmp_path / 'provider-config').mkdir(exist_ok=True)
    (tmp_path / 'provider-config' / 'gpu.yaml').write_text(provider_config)
    path = tmp_path / 'cloud.toml'
    path.write_text(text)
    return str(path)


def _load(tmp_path, text=CLOUD, provider_config=PROVIDER_CONFIG):
    return sim_cloud.load_cloud(_write(tmp_path, text, provider_config))


def test_shapes_with_traits_classes_provider_configs_and_baremetal(
        tmp_path):
    cloud = _load(tmp_path)
    avx2, gpu, gold = cloud.groups
    assert avx2.traits == ('CUSTOM_RACK_A', 'HW_CPU_X86_AVX2')
    assert gpu.inventories == {'VGPU': {'total': 4, 'max_unit': 2,
                                        'allocation_ratio': 1.0}}
    assert sorted(gpu.provider_configs) == ['$COMPUTE_NODE', 'gpu-000002']
    # Nova's Ironic driver: the class normalized, one unit, no sizes.
    assert gold.resource_class == 'CUSTOM_BAREMETAL_GOLD'
    assert (gold.vcpus, gold.memory_mb, gold.disk_gb) == (0, 0, 0)
    assert gold.inventories['CUSTOM_BAREMETAL_GOLD']['total'] == 1
    assert cloud.flavor('bm.gold').extra_specs['resources:VCPU'] == '0'


def test_each_host_s_report(tmp_path):
    cloud = _load(tmp_path)
    nodes, _services = sim_cloud.node_rows(cloud, random.Random(1), None)
    reports = providers.node_reports(cloud.groups, nodes)
    by_name = {row['host']: reports[row['uuid']] for row in nodes}
    assert by_name['avx2-000001'] == {
        'inventories': {},
        'traits': ['COMPUTE_NODE', 'CUSTOM_RACK_A', 'HW_CPU_X86_AVX2']}
    # $COMPUTE_NODE: every gpu host that no entry names...
    assert by_name['gpu-000001']['inventories'] == {
        'VGPU': {'total': 4, 'max_unit': 2, 'allocation_ratio': 1.0},
        'CUSTOM_GPU': {'total': 2}}
    assert by_name['gpu-000001']['traits'] == ['COMPUTE_NODE',
                                               'CUSTOM_GPU_A100']
    # ... and the named one has its own entry only, as in Nova.
    assert sorted(by_name['gpu-000002']['inventories']) == [
        'CUSTOM_GPU', 'CUSTOM_LICENCE', 'VGPU']
    assert by_name['gpu-000002']['traits'] == ['COMPUTE_NODE']
    assert by_name['gold-000003']['inventories'][
        'CUSTOM_BAREMETAL_GOLD']['total'] == 1
    # The configs reach only their shape's hosts.
    assert 'CUSTOM_GPU' not in by_name['avx2-000002']['inventories']


@pytest.mark.parametrize('change, message', [
    (('traits = ["HW_CPU_X86_AVX2", "CUSTOM_RACK_A"]',
      'traits = ["hw_cpu_x86_avx2"]'),
     "hosts[0].traits: unknown trait 'hw_cpu_x86_avx2'"),
    (('traits = ["HW_CPU_X86_AVX2", "CUSTOM_RACK_A"]',
      'traits = ["CUSTOM_rack"]'),
     "hosts[0].traits: unknown trait 'CUSTOM_rack': a custom trait name "
     "must be CUSTOM_"),
    (('traits = ["HW_CPU_X86_AVX2", "CUSTOM_RACK_A"]',
      'traits = "HW_CPU_X86_AVX2"'), 'hosts[0].traits: must be a list'),
    (('VGPU = {total = 4', 'VCPU = {total = 4'),
     'hosts[1].inventories.VCPU: give vcpus, memory_mb and disk_gb'),
    (('VGPU = {total = 4', 'GPU = {total = 4'),
     "hosts[1].inventories: unknown resource class 'GPU'"),
    (('{total = 4, max_unit = 2,', '{max_unit = 2,'),
     'hosts[1].inventories.VGPU.total: required'),
    (('{total = 4, max_unit = 2,', '{total = 0, max_unit = 2,'),
     'hosts[1].inventories.VGPU.total: must be an integer from 1 to'),
    (('{total = 4, max_unit = 2,', '{total = 4, reserved = -1,'),
     'hosts[1].inventories.VGPU.reserved: must be an integer from 0'),
    (('allocation_ratio = 1.0}', 'allocation_ratio = 0}'),
     'hosts[1].inventories.VGPU.allocation_ratio: must be a number > 0'),
    (('max_unit = 2,', 'max_unit = 2, used = 1,'),
     'hosts[1].inventories.VGPU.used: unknown field'),
    (('inventories = {VGPU = {total = 4, max_unit = 2, '
      'allocation_ratio = 1.0}}', 'inventories = {VGPU = 4}'),
     'hosts[1].inventories.VGPU: must be a table'),
    (('"provider-config/gpu.yaml"', '"provider-config/none.yaml"'),
     'hosts[1].provider_config: provider config file '),
    (('"provider-config/gpu.yaml"', '3'),
     'hosts[1].provider_config: must be a file name'),
    (('inventories = {VGPU', 'inventories = {CUSTOM_GPU = {total = 1}, '
      'VGPU'), 'hosts[1].provider_config: %s defines CUSTOM_GPU, which '
     'the shape reports itself'),
    (('resource_class = "baremetal-gold"',
      'resource_class = "baremetal-gold"\nvcpus = 8'),
     'hosts[2].vcpus: a baremetal shape (resource_class) reports no'),
    (('resource_class = "baremetal-gold"', 'resource_class = 7'),
     'hosts[2].resource_class: must be a non-empty string'),
    (('resource_class = "baremetal-gold"', 'resource_class = "%s"'
      % ('x' * 300)), 'hosts[2].resource_class: '),
    (('"trait:HW_CPU_X86_AVX2" = "required"',
      '"trait:HW_CPU_X86_AVX9" = "required"'),
     "flavors[0].extra_specs: unknown trait 'HW_CPU_X86_AVX9'"),
    (('"trait:HW_CPU_X86_AVX2" = "required"',
      '"trait:HW_CPU_X86_AVX2" = "wanted"'),
     "flavors[0].extra_specs: flavor extra spec "
     "trait:HW_CPU_X86_AVX2='wanted': must be 'required' or 'forbidden'"),
    (('"resources:CUSTOM_GPU" = "1"', '"resources:CUSTOM_GPU" = "-1"'),
     'flavors[1].extra_specs: flavor extra spec resources:CUSTOM_GPU='),
    (('"trait:HW_CPU_X86_AVX2" = "required"',
      '"trait1:HW_CPU_X86_AVX2" = "required"'),
     'flavors[0].extra_specs: Placement would refuse every request'),
])
def test_each_error_names_the_key(tmp_path, change, message):
    assert change[0] in CLOUD
    path = _write(tmp_path, CLOUD.replace(*change, 1))
    if '%s' in message:
        message %= tmp_path / 'provider-config' / 'gpu.yaml'
    with pytest.raises(sim_cloud.CloudError) as caught:
        sim_cloud.load_cloud(path)
    assert message in str(caught.value), str(caught.value)
    assert str(caught.value).startswith(path)
    assert '\n' not in str(caught.value)


@pytest.mark.parametrize('change, message', [
    # Only custom classes and traits, as Nova refuses.
    (('CUSTOM_GPU_A100', 'HW_GPU_API_CUDA_V9_0'),
     'only custom traits are allowed: HW_GPU_API_CUDA_V9_0'),
    (("schema_version: '1.0'", "schema_version: '2.0'"),
     'unsupported schema major version 2'),
    (('total: 1', 'total: one'), 'CUSTOM_LICENCE.total must be an '
     'integer'),
])
def test_provider_config_files_nova_would_refuse(tmp_path, change,
                                                 message):
    assert change[0] in PROVIDER_CONFIG
    with pytest.raises(sim_cloud.CloudError) as caught:
        _load(tmp_path, provider_config=PROVIDER_CONFIG.replace(*change))
    assert 'hosts[1].provider_config: provider config file ' in str(
        caught.value)
    assert message in str(caught.value), str(caught.value)


def test_the_module_docstring_example_is_a_cloud_file(tmp_path):
    example = providers.__doc__.split('::\n', 1)[1].split(
        '\nEvery host')[0]
    text = '\n'.join(line[4:] for line in example.splitlines())
    cloud = _load(tmp_path, text)
    gpu, gold = cloud.groups
    assert gpu.inventories['VGPU']['total'] == 4
    assert gold.resource_class == 'CUSTOM_BAREMETAL_GOLD'


def test_the_database_receives_the_inventories_and_traits(
        database, tmp_path):
    cloud = _load(tmp_path)
    sim_cloud.populate(cloud, random.Random(1))
    with db_api.reader() as session:
        ids = dict(session.execute(sa.select(models.ComputeNode.host,
                                             models.ComputeNode.id)).all())
        found = db_inventories.node_inventories(session, ids.values())
        traits = db_inventories.node_traits(session, ids.values())
        gold = session.execute(sa.select(models.ComputeNode).where(
            models.ComputeNode.host == 'gold-000001')).scalar_one()
    assert set(found[ids['avx2-000001']]) == {'VCPU', 'MEMORY_MB',
                                              'DISK_GB'}
    assert traits[ids['avx2-000001']] == {
        'COMPUTE_NODE', 'CUSTOM_RACK_A', 'HW_CPU_X86_AVX2'}
    gpu = found[ids['gpu-000001']]
    assert gpu['CUSTOM_GPU'] == {
        'total': 2, 'reserved': 0, 'min_unit': 1,
        'max_unit': db_inventories.MAX_INT, 'step_size': 1,
        'allocation_ratio': 1.0, 'used': 0}
    assert (gpu['VGPU']['total'], gpu['VGPU']['max_unit']) == (4, 2)
    assert found[ids['gpu-000002']]['CUSTOM_LICENCE']['total'] == 1
    # A baremetal node: its unit, and none of the classic classes.
    assert found[ids['gold-000001']] == {'CUSTOM_BAREMETAL_GOLD': {
        'total': 1, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
        'step_size': 1, 'allocation_ratio': 1.0, 'used': 0}}
    assert traits[ids['gold-000001']] == {'COMPUTE_NODE', 'CUSTOM_GOLD'}
    assert (gold.hypervisor_type, gold.cpu_allocation_ratio) == (
        'ironic', 1.0)


# Four AVX2 requests, four GPU requests (six GPUs on the three gpu
# hosts, two a host), four baremetal requests (three nodes: the fourth
# is refused), the first of them deleted, a fifth that takes its node,
# then four plain requests.
TRACE = ('id,tenant,flavor,vcpus,memory_mb,disk_gb,start,end\n'
         + ''.join('a%d,t,avx2.small,,,,%d,\n' % (n, n) for n in range(4))
         + ''.join('g%d,t,gpu.small,,,,%d,\n' % (n, 10 + n)
                   for n in range(4))
         + 'b0,t,bm.gold,,,,20,25\n'
         + ''.join('b%d,t,bm.gold,,,,%d,\n' % (n, 20 + n)
                   for n in range(1, 4))
         + 'b4,t,bm.gold,,,,26,\n'
         + ''.join('p%d,t,,2,4096,20,%d,\n' % (n, 30 + n) for n in range(4)))


def test_flavors_land_only_on_hosts_that_have_what_they_ask(
        database, config, tmp_path):
    # CUSTOM_LICENCE of gpu-000002 is not asked: GPU requests go to all
    # three gpu hosts, two per host at most.
    config.config(ram_allocation_ratio=1.0)
    cloud = _load(tmp_path)
    (tmp_path / 'trace.csv').write_text(TRACE)
    requests = workload.read_csv(str(tmp_path / 'trace.csv'), cloud)
    sim_cloud.populate(cloud, random.Random(1))
    result = engine.Simulation(cloud, requests, seed=1).run()
    placed = result.placements

    def hosts(prefix):
        return [host for name, where in sorted(placed.items())
                if name.startswith(prefix) for host in where]

    assert all(host.startswith('avx2-') for host in hosts('a'))
    assert len(hosts('a')) == 4
    gpu = hosts('g')
    assert len(gpu) == 4 and all(host.startswith('gpu-') for host in gpu)
    assert max(gpu.count(host) for host in set(gpu)) <= 2
    # The baremetal flavor fills exactly the pool: one instance a node,
    # and a node again once its instance is gone.
    assert sorted(hosts('b')) == sorted([
        'gold-000001', 'gold-000002', 'gold-000003', placed['b0'][0]])
    assert placed['b3'] == [] and placed['b4'] == placed['b0']
    # Plain requests never take a baremetal node.
    assert all(not host.startswith('gold-') for host in hosts('p'))
    assert len(hosts('p')) == 4
    assert sum(result.no_valid_host.values()) == 1
    # What the claims took: every gold unit, nothing of the baremetal
    # nodes' (absent) RAM; the utilisation counts the RAM of the AVX2,
    # GPU and plain instances only (4 GB each) over the 5 x 32 GB of
    # the hosts; the last sample is taken before the request at the
    # horizon, so 11 of them at most.
    with db_api.reader() as session:
        used = session.execute(sa.select(
            models.ComputeNodeInventory.resource_class,
            sa.func.sum(models.ComputeNodeInventory.used)).group_by(
                models.ComputeNodeInventory.resource_class)).all()
    assert dict(used)['CUSTOM_BAREMETAL_GOLD'] == 3
    assert dict(used)['CUSTOM_GPU'] == 4
    assert result.utilisation[:, 1].max() == pytest.approx(
        11 * 4096 / (5 * 32768))
    # The gold nodes in use count as hosts in use; the RAM fill is of the
    # hosts that have RAM.
    assert result.hosts_in_use == 3 + len(set(
        hosts('a') + hosts('g') + hosts('p')))
    assert result.final_fill[0] == pytest.approx(12 * 4096 / (5 * 32768))


def test_the_example_cloud_and_its_provider_config(tmp_path):
    root = pathlib.Path(__file__).resolve().parents[4]
    cloud = sim_cloud.load_cloud(str(root / 'etc' / 'gantt-sim'
                                     / 'traits-cloud.toml'))
    nodes, _services = sim_cloud.node_rows(cloud, random.Random(1), None)
    reports = providers.node_reports(cloud.groups, nodes)
    gpus = {row['host']: reports[row['uuid']]['inventories']['CUSTOM_GPU']
            ['total'] for row in nodes if row['host'].startswith('gpu-')}
    assert gpus['gpu-000001'] == 8
    assert set(gpus.values()) == {4, 8} and len(gpus) == 20
    gold = [group for group in cloud.groups if group.resource_class]
    assert [(g.name, g.resource_class) for g in gold] == [
        ('gold', 'CUSTOM_BAREMETAL_GOLD')]


@pytest.mark.parametrize('extra_specs, taken', [
    ({}, (8, 16384, 100)),
    ({'resources:CUSTOM_BAREMETAL_GOLD': '1', 'resources:VCPU': '0',
      'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'}, (0, 0, 0)),
    # Dedicated CPUs are CPUs of the host too; one more for the
    # emulator threads.
    ({'hw:cpu_policy': 'dedicated'}, (8, 16384, 100)),
    ({'hw:cpu_policy': 'dedicated',
      'hw:emulator_threads_policy': 'isolate'}, (9, 16384, 100)),
    ({'resources:DISK_GB': '10'}, (8, 16384, 10)),
])
def test_what_an_instance_takes_of_its_host(extra_specs, taken):
    assert providers.classic_amounts(8, 16384, 100, extra_specs) == taken
