"""Nova mode's candidates against the real Placement's.

A random cloud of compute nodes (root providers: the mirror keeps roots
only) with standard and custom classes, traits, aggregates and usage
written as real allocations goes into Placement, and its nodes into
Nova's databases. The mirror syncs them, and the host table a real
HostManager reads from it must accept, for random requests (resources,
required and forbidden traits, granular groups, group_policy, member_of,
root traits), exactly the roots of Placement's ``GET
/allocation_candidates``: what Nova's scheduler would start from. More
seeds: ``GANTT_NOVA_DIFFERENTIAL_SEEDS=1,2,3``.
"""

import collections
import dataclasses
import logging
import os
import random

import pytest

from scheduler import host_cache
from tests.functional import placement_cloud

pytestmark = pytest.mark.filterwarnings(
    "ignore:'cgi' is deprecated:DeprecationWarning")

SEEDS = [int(seed) for seed in os.environ.get(
    'GANTT_NOVA_DIFFERENTIAL_SEEDS', '31').split(',')]
REQUESTS = 100
ROOTS = 60
CLASSIC = ('VCPU', 'MEMORY_MB', 'DISK_GB')


def _flat_cloud(seed):
    """A :class:`placement_cloud.Cloud` of ``ROOTS`` root providers, each
    with some of its inventories partly used."""
    rng = random.Random(seed)
    drawn = placement_cloud.Cloud(seed, roots=ROOTS * 2)
    rows = []
    for row in drawn.rows:
        if row['parent'] is not None or len(rows) == ROOTS:
            continue
        # VCPU, MEMORY_MB and DISK_GB with the units Nova's virt drivers
        # report (see test_odd_classic_units_are_warned_about).
        row = dict(row, inventories={
            name: dataclasses.replace(inventory, min_unit=1, max_unit=None,
                                      step_size=1)
            if name in CLASSIC else inventory
            for name, inventory in row['inventories'].items()})
        used = {}
        for name, inventory in row['inventories'].items():
            if rng.random() < 0.4:
                amount = placement_cloud._usable(rng, inventory)
                if amount:
                    used[name] = amount
        rows.append(dict(row, used=used))
    return placement_cloud.Cloud(seed, rows=rows)


def _placement_roots(placement, request):
    body = placement.get(placement_cloud.query(request))
    return {next(iter(candidate['allocations']))
            for candidate in body['allocation_requests']}


@pytest.mark.parametrize('seed', SEEDS)
def test_mirrored_hosts_accept_what_placement_offers(synced, cloud,
                                                     placement, seed):
    flat = _flat_cloud(seed)
    flat.load(placement)
    for index, row in enumerate(flat.rows):
        cloud.add_compute('cmp%03d' % index, node_uuid=row['uuid'],
                          provider=False)
    synced.sync()
    table = host_cache.HostManager(auto_refresh=False).refresh(full=True)
    assert {state.uuid for state in table.states} == {
        row['uuid'] for row in flat.rows}
    providers = table.placement
    draw = placement_cloud.Draw(flat, random.Random(seed * 104729))
    wrong = []
    shapes = collections.Counter()
    for _ in range(REQUESTS):
        request = draw.request()
        expected = _placement_roots(placement, request)
        got = set(providers.accepted_root_uuids(request))
        shapes['empty' if not expected else 'every root'
               if len(expected) == len(flat.rows) else 'some roots'] += 1
        if got != expected:
            wrong.append((request, sorted(expected - got),
                          sorted(got - expected)))
    print('\nseed %d: %d roots, %d requests: %s' % (
        seed, len(flat.rows), REQUESTS, dict(shapes)))
    assert not wrong, '\n'.join(
        '%s\n  -> only Placement: %s; only the mirror: %s' % item
        for item in wrong[:5])
    # Most answers must be neither empty nor every root.
    assert shapes['some roots'] > REQUESTS // 2, shapes


def test_odd_classic_units_are_warned_about(synced, cloud, caplog):
    caplog.set_level(logging.WARNING, logger='scheduler.nova.mirror_rows')
    plain = cloud.add_compute('plain', vcpus=8)
    odd = cloud.add_compute('odd', vcpus=8, VCPU={'total': 8,
                                                  'max_unit': 4})
    # Placement's default max_unit, 2**31 - 1, is not the total either.
    unbounded = cloud.add_compute('unbounded', DISK_GB={'total': 100})
    synced.sync()
    synced.sync()
    warned = [record.getMessage() for record in caplog.records]
    assert len(warned) == 2, warned
    assert not any(plain in line for line in warned)
    (odd_line,) = [line for line in warned if odd in line]
    assert 'VCPU (min_unit 1, max_unit 4, step_size 1)' in odd_line
    (unbounded_line,) = [line for line in warned if unbounded in line]
    assert 'DISK_GB (min_unit 1, max_unit 2147483647' in unbounded_line
