"""Allocation candidates over columns: one ``acceptable_roots`` call, timed.

A synthetic cloud of N compute nodes, each a tree of three providers:
the node (VCPU, MEMORY_MB, DISK_GB and 3 of 16 custom classes: 20 classes
in all) and two PCI PFs (SRIOV_NET_VF, one on physnet A, one on physnet
B); 200 traits spread over the providers. The table is built in bulk
(``ProviderTable.from_arrays``; the build time is printed). Requests:

* **plain**: ``resources=VCPU:2,MEMORY_MB:2048,DISK_GB:20``;
* **rich**: the same with two required traits and one forbidden trait,
  plus two granular groups (a VF on physnet A, a VF on physnet B) under
  ``group_policy=isolate``;
* **rich, 10 % of hosts**: the rich request with a ``candidate_mask``
  keeping one root in ten (what earlier cuts leave).

p50 and p90 over the rounds are printed beside the targets (rich request:
under 1.5 ms at 10,000 nodes, under 3 ms at 100,000), and the cost of
applying one claim (``with_allocation``)::

    python benchmarks/bench_candidates.py --hosts 10000 100000
"""

import argparse
import statistics
import time

import numpy as np

from scheduler.resources import candidates
from scheduler.resources import provider_columns
from scheduler.resources import request as request_mod

TARGETS_MS = {10000: 1.5, 100000: 3.0}
TRAITS = ['CUSTOM_T%03d' % number for number in range(196)] + [
    'HW_CPU_X86_AVX2', 'COMPUTE_STATUS_DISABLED', 'CUSTOM_PHYSNET_A',
    'CUSTOM_PHYSNET_B']
CUSTOM = ['CUSTOM_C%02d' % number for number in range(16)]


def cloud(hosts, seed=1):
    """The cloud as bulk arrays: the arguments of ``from_arrays``. Roots
    come first, then every physnet-A PF, then every physnet-B PF."""
    rng = np.random.default_rng(seed)
    arange = np.arange(hosts)
    uuids = (['cn-%d' % n for n in range(hosts)]
             + ['cn-%d-pf-A' % n for n in range(hosts)]
             + ['cn-%d-pf-B' % n for n in range(hosts)])
    parents = np.concatenate([np.full(hosts, -1), arange, arange])
    classes = ('VCPU', 'MEMORY_MB', 'DISK_GB', 'SRIOV_NET_VF') + tuple(CUSTOM)
    custom = np.argsort(rng.random((hosts, len(CUSTOM))), axis=1)[:, :3]
    provider = np.concatenate([arange, arange, arange, np.repeat(arange, 3),
                               arange + hosts, arange + 2 * hosts])
    class_index = np.concatenate([
        np.full(hosts, 0), np.full(hosts, 1), np.full(hosts, 2),
        4 + custom.reshape(-1), np.full(2 * hosts, 3)])
    total = np.concatenate([
        rng.choice((16, 32, 64), hosts), rng.choice((65536, 131072), hosts),
        rng.choice((500, 1000), hosts), rng.integers(1, 9, 3 * hosts),
        np.full(2 * hosts, 8)])
    reserved = np.zeros(len(provider), dtype=np.int64)
    reserved[hosts:2 * hosts] = 512
    ratio = np.ones(len(provider))
    ratio[:hosts] = 4.0
    used = np.zeros(len(provider), dtype=np.int64)
    used[:hosts] = rng.integers(0, 41, hosts)
    used[hosts:2 * hosts] = rng.integers(0, 60001, hosts)
    used[-2 * hosts:] = rng.integers(0, 9, 2 * hosts)
    inventories = provider_columns.InventoryArrays(
        classes, provider, class_index, total, reserved=reserved,
        allocation_ratio=ratio, used=used)
    # About 10 of the first 196 traits per node (drawn with repeats), the
    # two the rich request needs on 80 % of them, DISABLED on 5 %.
    names = {name: bit for bit, name in enumerate(TRAITS)}
    some = rng.integers(0, 196, (hosts, 10))
    pairs = [(np.repeat(arange, 10), some.reshape(-1))]
    for name, share in (('HW_CPU_X86_AVX2', 0.8), ('CUSTOM_T001', 0.8),
                        ('COMPUTE_STATUS_DISABLED', 0.05)):
        rows = np.flatnonzero(rng.random(hosts) < share)
        pairs.append((rows, np.full(len(rows), names[name])))
    pairs.append((arange + hosts, np.full(hosts, names['CUSTOM_PHYSNET_A'])))
    pairs.append((arange + 2 * hosts,
                  np.full(hosts, names['CUSTOM_PHYSNET_B'])))
    traits = provider_columns.Memberships(
        tuple(TRAITS), np.concatenate([rows for rows, _ in pairs]),
        np.concatenate([bits for _, bits in pairs]))
    return dict(uuids=uuids, parents=parents, inventories=inventories,
                traits=traits)


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


def timed(table, request, rounds, candidate_mask=None):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        accepted = table.acceptable_roots(request, candidate_mask)
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
        arrays = cloud(hosts)
        start = time.perf_counter()
        table = candidates.ProviderTable.from_arrays(**arrays)
        built = time.perf_counter() - start
        print('%d hosts (%d providers, %d classes, %d traits), table built '
              'in %.3f s' % (hosts, len(table.columns.uuids),
                             len(table.columns.classes),
                             len(table.columns.traits), built))
        tenth = np.zeros(hosts, dtype=bool)
        tenth[::10] = True
        for name, request, mask in (('plain', PLAIN, None),
                                    ('rich', RICH, None),
                                    ('rich, 10 % of hosts', RICH, tenth)):
            p50, p90, accepted = timed(table, request, args.rounds, mask)
            target = (' (target < %.1f ms)' % TARGETS_MS[hosts]
                      if name == 'rich' and hosts in TARGETS_MS else '')
            print('  %-20s p50 %7.3f ms  p90 %7.3f ms  %6d roots accepted%s'
                  % (name, p50, p90, accepted, target))
        claim = {'cn-0': {'VCPU': 2, 'MEMORY_MB': 2048},
                 'cn-0-pf-A': {'SRIOV_NET_VF': 1}}
        start = time.perf_counter()
        for _ in range(args.rounds):
            table.with_allocation(claim)
        print('  with_allocation (one claim) %.3f ms'
              % ((time.perf_counter() - start) * 1000 / args.rounds))


if __name__ == '__main__':
    main()
