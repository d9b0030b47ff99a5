"""Gantt's allocation candidates against the real Placement.

For random clouds (seeded: nested providers, standard and custom classes,
traits, aggregates, usage written as real allocations) and random requests
(resources, required and forbidden traits, granular groups, group_policy,
member_of, root traits), the set of roots in Placement's ``GET
/allocation_candidates`` must be the set
:meth:`~scheduler.resources.candidates.ProviderTable.acceptable_roots`
accepts, and the allocation Gantt would claim on an accepted root must be
one of Placement's candidates for it. Agreement is printed per feature,
and how many answers were empty, some roots or every root: most requests
are drawn from what one tree offers, so that most answers are some roots,
and the test fails if they are not.

Placement runs in this process (``PlacementDirect`` over wsgi-intercept)
on in-memory SQLite, its options on a ConfigOpts of its own. More seeds:
``GANTT_DIFFERENTIAL_SEEDS=1,2,3,4``.
"""

import collections
import copy
import os
import random

import pytest

from scheduler.resources import candidates
from tests.functional import placement_cloud
from tests.functional import placement_harness

pytestmark = [
    pytest.mark.functional,
    # Placement's request parsing imports webob, whose compat module
    # imports the standard library's cgi, deprecated since Python 3.11.
    # Placement and webob are imported inside the fixture, so this filter
    # covers that import only.
    pytest.mark.filterwarnings(
        "ignore:'cgi' is deprecated:DeprecationWarning"),
]

SEEDS = [int(seed) for seed in os.environ.get(
    'GANTT_DIFFERENTIAL_SEEDS', '11,12').split(',')]
REQUESTS = 130
ALLOCATIONS_CHECKED = 2


@pytest.fixture(scope='module')
def placement():
    with placement_harness.running() as client:
        yield client


def _features(request, cloud, answer_roots, nested_used):
    unsuffixed = request.unsuffixed
    names = collections.Counter(
        name for group in request.groups for name in group.resources)
    found = {
        'all': True,
        'unsuffixed required traits': bool(unsuffixed.required_traits),
        'forbidden traits': any(g.forbidden_traits for g in request.groups),
        'granular groups': bool(request.suffixed),
        'granular traits': any(g.required_traits for g in request.suffixed),
        'group_policy isolate': request.group_policy == 'isolate',
        'member_of': any(g.member_of for g in request.groups),
        'forbidden aggregates': any(g.forbidden_aggregates
                                    for g in request.groups),
        'root traits': bool(request.root_required or request.root_forbidden),
        'class in several groups': any(n > 1 for n in names.values()),
        'nested providers in answer': nested_used,
        'no candidate': not answer_roots,
    }
    return [name for name, present in found.items() if present]


def _placement_answer(placement, request, cloud):
    body = placement.get(placement_cloud.query(request))
    roots = set()
    allocations = collections.defaultdict(set)
    nested_used = False
    for candidate in body['allocation_requests']:
        providers = candidate['allocations']
        root = {cloud.root_of[uuid] for uuid in providers}
        assert len(root) == 1, candidate
        root = root.pop()
        roots.add(root)
        nested_used |= bool(set(providers) & cloud.nested)
        allocations[root].add(_frozen({
            uuid: held['resources'] for uuid, held in providers.items()}))
    return roots, allocations, nested_used


def _hits_summing_bug(request):
    """Placement 16 sums two groups' amounts of one provider and class into
    the first group's AllocationRequestResource *in place* unless
    group_policy is 'none' (RequestWideSearchContext.copy_arr_if_needed
    copies only then). The inflated amount stays in that object for every
    later candidate of the tree: Placement then reports amounts larger than
    asked, and drops trees whose later combinations would fit."""
    names = collections.Counter(
        name for group in request.groups for name in group.resources)
    return request.group_policy != 'none' and any(
        count > 1 for count in names.values())


def _fixed_placement_answer(placement, request, cloud):
    """Placement's answer with the in-place summing fixed (a copy always)."""
    from placement.objects import research_context

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(research_context.RequestWideSearchContext,
                      'copy_arr_if_needed',
                      lambda self, arr: copy.copy(arr))
        return _placement_answer(placement, request, cloud)


def _disagreement(table, request, expected, allocations):
    got = set(table.accepted_root_uuids(request))
    if got != expected:
        return 'only Placement: %s; only Gantt: %s' % (
            sorted(expected - got), sorted(got - expected))
    for root in sorted(got)[:ALLOCATIONS_CHECKED]:
        mine = table.allocation_for(request, root)
        if _frozen(mine) not in allocations[root]:
            return 'allocation %s not among %s' % (mine, allocations[root])
    return None


def _frozen(allocation):
    return frozenset((uuid, frozenset(amounts.items()))
                     for uuid, amounts in allocation.items())


def _run_seed(placement, seed):
    placement_harness.wipe()
    cloud = placement_cloud.Cloud(seed)
    cloud.load(placement)
    table = candidates.ProviderTable(cloud.providers())
    draw = placement_cloud.Draw(cloud, random.Random(seed * 7919))
    tally = collections.defaultdict(lambda: [0, 0])
    sizes = []
    wrong = []
    for _ in range(REQUESTS):
        request = draw.request()
        expected, allocations, nested_used = _placement_answer(
            placement, request, cloud)
        problem = _disagreement(table, request, expected, allocations)
        agree = problem is None
        if problem and _hits_summing_bug(request):
            expected, allocations, nested_used = _fixed_placement_answer(
                placement, request, cloud)
            problem = _disagreement(table, request, expected, allocations)
            if problem is None:
                tally['agree once summing fixed'][0] += 1
        if problem:
            wrong.append((request, problem))
        sizes.append(len(expected))
        for feature in _features(request, cloud, expected, nested_used):
            tally[feature][0] += 1
            tally[feature][1] += agree
    return cloud, tally, sizes, wrong


def _answer_shapes(cloud, sizes):
    """How many answers were empty, some roots, every root; mean size."""
    every = len(cloud.trees)
    empty = sum(1 for size in sizes if not size)
    whole = sum(1 for size in sizes if size == every)
    return empty, len(sizes) - empty - whole, whole, (
        sum(sizes) / len(sizes))


@pytest.mark.parametrize('seed', SEEDS)
def test_roots_agree_with_placement(placement, seed):
    cloud, tally, sizes, wrong = _run_seed(placement, seed)
    print('\nseed %d: %d providers (%d nested, %d roots), %d requests'
          % (seed, len(cloud.rows), len(cloud.nested), len(cloud.trees),
             REQUESTS))
    empty, partial, whole, mean = _answer_shapes(cloud, sizes)
    print('  answers: %d empty, %d some roots, %d every root; '
          'mean %.1f roots' % (empty, partial, whole, mean))
    fixed = tally.pop('agree once summing fixed', [0])[0]
    for feature, (count, agreed) in sorted(tally.items()):
        print('  %-28s %4d requests, %4d agree' % (feature, count, agreed))
    print('  %-28s %4d requests (Placement sums in place)'
          % ('agree once summing fixed', fixed))
    assert not wrong, '\n'.join('%s\n  -> %s' % item for item in wrong[:5])
    assert len(cloud.rows) >= 200
    # The comparison means something only if most answers are neither
    # empty nor every root.
    assert partial > len(sizes) // 2, (empty, partial, whole)


def test_placement_options_stay_out_of_gantt_conf(placement):
    from scheduler import conf as gantt_conf

    assert 'placement_database' not in gantt_conf.CONF
    assert 'workarounds' not in gantt_conf.CONF or not hasattr(
        gantt_conf.CONF.workarounds, 'optimize_for_wide_provider_trees')
