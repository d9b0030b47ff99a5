"""The host cache's nested providers against the real Placement.

Random hosts (NUMA cells with CPUs to pin, some pinned; PCI pools of PFs
and VFs on a cell or none, with traits in their tags, some devices used)
go into the host table with ``[filter_scheduler] numa_in_placement`` and
``pci_in_placement`` on, and into Placement as Nova's compute would
report them: the node with VCPU, MEMORY_MB and DISK_GB, a child per cell
holding its PCPU, a child per PF (or per pool of VFs) under its cell,
usage as real allocations. For random requests of granular PCPU and PCI
groups (isolate or none, required traits) beside the unsuffixed group,
the roots the table accepts must be the roots of Placement's allocation
candidates. The Placement side is written from the hosts here, not from
the table's code, so that a wrong tree in the table shows. More seeds:
``GANTT_NESTED_DIFFERENTIAL_SEEDS=21,22,23``.
"""

import collections
import os
import random
import uuid

import pytest

from scheduler import host_cache
from scheduler.pci import pools as pci_pools
from scheduler.resources import provider_columns
from scheduler.resources import request as request_mod
from tests.functional import placement_cloud
from tests.functional import placement_harness
from tests.functional import test_placement_differential as differential
from tests.unit.scheduler import fakes

pytestmark = differential.pytestmark

SEEDS = [int(seed) for seed in os.environ.get(
    'GANTT_NESTED_DIFFERENTIAL_SEEDS', '21').split(',')]
HOSTS = 70
REQUESTS = 120
PF, VF = 'CUSTOM_PCI_8086_154D', 'CUSTOM_PCI_8086_154C'
NAMESPACE = uuid.UUID('5a1e0000-0000-4000-8000-00000000cafe')


@pytest.fixture(scope='module')
def placement():
    with placement_harness.running() as client:
        yield client


@pytest.fixture
def nested(config):
    config.config(numa_in_placement=True, pci_in_placement=True,
                  group='filter_scheduler')


def _host(rng, index):
    cells, usage, pinned_total, pcpus = [], [], 0, 0
    for cell in range(rng.randint(1, 3)):
        first = cell * 16
        pcpuset = list(range(first + 2, first + 2 + rng.choice((0, 2, 4, 6))))
        pinned = rng.sample(pcpuset, rng.randint(0, len(pcpuset)))
        cells.append({'id': cell, 'cpuset': [first, first + 1],
                      'pcpuset': pcpuset, 'memory_mb': 4096})
        usage.append({'id': cell, 'pinned_cpus': pinned})
        pinned_total += len(pinned)
        pcpus += len(pcpuset)
    pools, pci_usage = [], {}
    for _ in range(rng.randint(0, 2)):
        kind = rng.choice(('type-PF', 'type-VF'))
        tags = {'dev_type': kind}
        if rng.random() < 0.4:
            tags['traits'] = 'fast'
        pool = {'vendor_id': '8086',
                'product_id': '154d' if kind == 'type-PF' else '154c',
                'numa_node': rng.choice([None] + [c['id'] for c in cells]),
                'count': rng.randint(1, 4), 'tags': tags}
        if any(pci_pools.pool_key(pool) == pci_pools.pool_key(other)
               for other in pools):
            continue
        pools.append(pool)
        pci_usage[pci_pools.pool_key(pool)] = rng.randint(0, pool['count'])
    inventories = {}
    if pcpus:
        inventories['PCPU'] = host_cache.ClassInventory(
            pcpus, 0, 1, pcpus, 1, 1.0, pinned_total)
    return fakes.host_state(
        'h%d' % index, vcpus=rng.randint(2, 8), cpu_ratio=1.0,
        vcpus_used=rng.randint(0, 2), memory_mb=8192, ram_ratio=1.0,
        local_gb=100, numa_topology={'cells': cells},
        numa_usage={'cells': usage}, pci_device_pools=pools,
        pci_usage=pci_usage, inventories=inventories)


def _row(name, parent, inventories, used, traits=()):
    return {'uuid': str(uuid.uuid5(NAMESPACE, name)), 'name': name,
            'parent': parent, 'inventories': inventories, 'used': used,
            'traits': frozenset(traits), 'aggregates': frozenset()}


def _as_nova_reports(state):
    """The providers Nova's compute would report for ``state``."""
    root = _row(state.uuid, None, {
        'VCPU': provider_columns.Inventory(state.vcpus_total),
        'MEMORY_MB': provider_columns.Inventory(state.total_usable_ram_mb),
        'DISK_GB': provider_columns.Inventory(state.total_usable_disk_gb)},
        {'VCPU': state.vcpus_used})
    root['uuid'] = state.uuid
    rows, cells = [root], {}
    pinned = {cell['id']: len(cell['pinned_cpus'])
              for cell in state.numa_usage['cells']}
    for cell in state.numa_topology['cells']:
        if cell['pcpuset']:
            rows.append(_row('%s/cell%d' % (state.uuid, cell['id']),
                             state.uuid, {'PCPU': provider_columns.Inventory(
                                 len(cell['pcpuset']))},
                             {'PCPU': pinned[cell['id']]}))
            cells[cell['id']] = rows[-1]['uuid']
    for number, pool in enumerate(state.pci_device_pools):
        name = PF if pool['tags']['dev_type'] == 'type-PF' else VF
        traits = {'COMPUTE_MANAGED_PCI_DEVICE'}
        if 'traits' in pool['tags']:
            traits.add('CUSTOM_FAST')
        parent = cells.get(pool['numa_node'], state.uuid)
        used = state.pci_usage[pci_pools.pool_key(pool)]
        devices = pool['count'] if name == PF else 1
        for device in range(devices):
            total = 1 if name == PF else pool['count']
            taken = int(device < used) if name == PF else used
            rows.append(_row('%s/pci%d.%d' % (state.uuid, number, device),
                             parent, {name: provider_columns.Inventory(
                                 total)}, {name: taken}, traits))
    return rows


def _request(rng):
    groups = [request_mod.RequestGroup(resources={
        'VCPU': rng.randint(1, 3), 'MEMORY_MB': 1024})]
    asked = []
    for _ in range(rng.randint(0, 3)):
        asked.append(({'PCPU': rng.randint(1, 4)}, ()))
    for _ in range(rng.randint(0, 3)):
        name = rng.choice((PF, VF))
        traits = ('CUSTOM_FAST',) if rng.random() < 0.3 else ()
        asked.append(({name: 1}, traits))
    if not asked and rng.random() < 0.5:
        groups = [request_mod.RequestGroup(resources={
            'VCPU': 1, 'PCPU': rng.randint(1, 4)})]
    for number, (resources, traits) in enumerate(asked, 1):
        groups.append(request_mod.RequestGroup(
            suffix=str(number), resources=resources,
            required_traits=frozenset(traits)))
    policy = rng.choice(('none', 'isolate')) if len(asked) > 1 else None
    return request_mod.ResourceRequest(groups=tuple(groups),
                                       group_policy=policy)


def _features(request):
    names = {name for group in request.suffixed for name in group.resources}
    found = ['all', 'policy %s' % request.group_policy]
    found += ['asks %s' % name for name in sorted(names)]
    if any(group.required_traits for group in request.suffixed):
        found.append('required traits on PCI')
    if 'PCPU' in request.unsuffixed.resources:
        found.append('unsuffixed PCPU')
    return found


@pytest.mark.parametrize('seed', SEEDS)
def test_host_table_children_agree_with_placement(placement, nested, seed):
    rng = random.Random(seed)
    states = [_host(rng, index) for index in range(HOSTS)]
    table = fakes.table(states).placement
    rows = [row for state in states for row in _as_nova_reports(state)]
    placement_harness.wipe()
    cloud = placement_cloud.Cloud(seed, rows=rows)
    cloud.load(placement)
    tally = collections.defaultdict(lambda: [0, 0])
    wrong, sizes = [], []
    for _ in range(REQUESTS):
        request = _request(rng)
        expected, _allocations, _nested = differential._placement_answer(
            placement, request, cloud)
        if differential._hits_summing_bug(request):
            expected, _allocations, _nested = (
                differential._fixed_placement_answer(placement, request,
                                                     cloud))
        got = set(table.accepted_root_uuids(request))
        agree = got == expected
        if not agree:
            wrong.append((request, sorted(expected - got),
                          sorted(got - expected)))
        sizes.append(len(expected))
        for feature in _features(request):
            tally[feature][0] += 1
            tally[feature][1] += agree
    print('\nseed %d: %d hosts, %d providers, %d requests'
          % (seed, HOSTS, len(rows), REQUESTS))
    for feature, (count, agreed) in sorted(tally.items()):
        print('  %-28s %4d requests, %4d agree' % (feature, count, agreed))
    assert not wrong, '\n'.join('%s\n  only Placement %s, only Gantt %s'
                                % item for item in wrong[:5])
    assert len(rows) >= 200
    partial = sum(1 for size in sizes if 0 < size < HOSTS)
    assert partial > len(sizes) // 2, sizes
