"""Allocation candidates over columns: one ``acceptable_roots`` call, timed.

A synthetic cloud of N compute nodes, each a tree of three providers:
the node (VCPU, MEMORY_MB, DISK_GB and some of 17 custom classes: 20
classes in all) and two PCI PFs (SRIOV_NET_VF, one on physnet A, one on
physnet B); 200 traits spread over the providers. Two requests:

* **plain**: ``resources=VCPU:2,MEMORY_MB:2048,DISK_GB:20``;
* **rich**: the same with two required traits and one forbidden trait,
  plus two granular groups (a VF on physnet A, a VF on physnet B) under
  ``group_policy=isolate``.

p50 and p90 over the rounds are printed beside the target (rich request
at 10,000 nodes: under 1.5 ms)::

    python benchmarks/bench_candidates.py --hosts 10000 100000
"""

import argparse
import random
import statistics
import time

from scheduler.resources import candidates
from scheduler.resources import provider_columns
from scheduler.resources import request as request_mod

TARGET_MS = 1.5
TRAITS = ['CUSTOM_T%03d' % number for number in range(196)] + [
    'HW_CPU_X86_AVX2', 'COMPUTE_STATUS_DISABLED', 'CUSTOM_PHYSNET_A',
    'CUSTOM_PHYSNET_B']
CUSTOM = ['CUSTOM_C%02d' % number for number in range(16)]


def cloud(hosts, seed=1):
    rng = random.Random(seed)
    Inventory = provider_columns.Inventory
    providers = []
    for number in range(hosts):
        root = 'cn-%d' % number
        inventories = {
            'VCPU': Inventory(rng.choice((16, 32, 64)),
                              allocation_ratio=4.0),
            'MEMORY_MB': Inventory(rng.choice((65536, 131072)),
                                   reserved=512),
            'DISK_GB': Inventory(rng.choice((500, 1000))),
        }
        for name in rng.sample(CUSTOM, 3):
            inventories[name] = Inventory(rng.randint(1, 8))
        traits = set(rng.sample(TRAITS[:196], 10))
        for name in ('HW_CPU_X86_AVX2', 'CUSTOM_T001'):
            if rng.random() < 0.8:
                traits.add(name)
        if rng.random() < 0.05:
            traits.add('COMPUTE_STATUS_DISABLED')
        used = {'VCPU': rng.randint(0, 40), 'MEMORY_MB': rng.randint(0, 60000)}
        providers.append(provider_columns.Provider(
            root, None, inventories, used, frozenset(traits)))
        for physnet in ('A', 'B'):
            providers.append(provider_columns.Provider(
                '%s-pf-%s' % (root, physnet), root,
                {'SRIOV_NET_VF': Inventory(8)},
                {'SRIOV_NET_VF': rng.randint(0, 8)},
                frozenset({'CUSTOM_PHYSNET_' + physnet})))
    return providers


PLAIN = request_mod.ResourceRequest(groups=(request_mod.RequestGroup(
    resources={'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 20}),))
RICH = request_mod.ResourceRequest(
    groups=(
        request_mod.RequestGroup(
            resources={'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 20},
            required_traits=frozenset({'HW_CPU_X86_AVX2', 'CUSTOM_T001'}),
            forbidden_traits=frozenset({'COMPUTE_STATUS_DISABLED'})),
        request_mod.RequestGroup(
            '1', resources={'SRIOV_NET_VF': 1},
            required_traits=frozenset({'CUSTOM_PHYSNET_A'})),
        request_mod.RequestGroup(
            '2', resources={'SRIOV_NET_VF': 1},
            required_traits=frozenset({'CUSTOM_PHYSNET_B'})),
    ),
    group_policy='isolate')


def timed(table, request, rounds):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        accepted = table.acceptable_roots(request)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), statistics.quantiles(times, n=10)[-1], \
        int(accepted.sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+',
                        default=[10000, 100000])
    parser.add_argument('--rounds', type=int, default=200)
    args = parser.parse_args()
    for hosts in args.hosts:
        start = time.perf_counter()
        table = candidates.ProviderTable(cloud(hosts))
        built = time.perf_counter() - start
        print('%d hosts (%d providers, %d classes, %d traits), table built '
              'in %.1f s' % (hosts, len(table.columns.uuids),
                             len(table.columns.classes),
                             len(table.columns.traits), built))
        for name, request in (('plain', PLAIN), ('rich', RICH)):
            p50, p90, accepted = timed(table, request, args.rounds)
            target = (' (target < %.1f ms at 10k)' % TARGET_MS
                      if name == 'rich' and hosts == 10000 else '')
            print('  %-5s p50 %7.3f ms  p90 %7.3f ms  %6d roots accepted%s'
                  % (name, p50, p90, accepted, target))


if __name__ == '__main__':
    main()
