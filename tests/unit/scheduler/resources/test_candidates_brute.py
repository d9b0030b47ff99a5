"""The column passes against a brute force, and bad input.

The brute force tries every way of giving each group (each class, for the
unsuffixed group) a provider of the tree and applies Placement's rules to
each, written plainly and separately from the module under test. Random
small trees are drawn so that capacity binds, groups share providers and
traits must be gathered from several providers: the cases the column
passes hand to the exact search.
"""

import itertools
import random

import pytest

from scheduler.resources import candidates
from scheduler.resources import provider_columns
from scheduler.resources import request as request_mod

CLASSES = ('VCPU', 'MEMORY_MB', 'SRIOV_NET_VF')
TRAITS = ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C')
AGGREGATES = ('agg1', 'agg2')


def _cloud(rng, trees=30):
    providers = []
    for tree in range(trees):
        root = 'cn%d' % tree
        rows = [(root, None)]
        for child in range(rng.randint(0, 3)):
            parent = rng.choice(rows)[0]
            rows.append(('%s-%d' % (root, child), parent))
        for uuid, parent in rows:
            inventories = {}
            for name in CLASSES:
                if rng.random() < 0.5:
                    inventories[name] = provider_columns.Inventory(
                        rng.randint(1, 6), reserved=rng.choice((0, 1)),
                        max_unit=rng.choice((None, 3)),
                        step_size=rng.choice((1, 1, 2)))
            used = {name: rng.randint(0, 2) for name in inventories
                    if rng.random() < 0.3}
            providers.append(provider_columns.Provider(
                uuid, parent, inventories, used,
                frozenset(t for t in TRAITS if rng.random() < 0.35),
                frozenset(a for a in AGGREGATES if rng.random() < 0.4)))
    return providers


def _request(rng):
    groups = []
    for suffix in ('', '1', '2', '3')[:rng.randint(1, 4)]:
        if suffix == '' and rng.random() < 0.2:
            continue
        names = rng.sample(CLASSES, rng.randint(1, 2))
        groups.append(request_mod.RequestGroup(
            suffix, {name: rng.randint(1, 3) for name in names},
            frozenset(t for t in TRAITS if rng.random() < 0.2),
            frozenset(t for t in TRAITS if rng.random() < 0.1),
            tuple(frozenset(rng.sample(AGGREGATES, 1))
                  for _ in range(rng.random() < 0.2)),
            frozenset(a for a in AGGREGATES if rng.random() < 0.1)))
    return request_mod.ResourceRequest(
        tuple(groups), rng.choice(('none', 'isolate')),
        frozenset(t for t in TRAITS if rng.random() < 0.1))


class _Brute:
    def __init__(self, providers):
        self.by_uuid = {p.uuid: p for p in providers}
        self.root = {}
        for p in providers:
            top = p
            while top.parent_uuid:
                top = self.by_uuid[top.parent_uuid]
            self.root[p.uuid] = top.uuid

    def _fits(self, p, name, amount):
        inventory = p.inventories.get(name)
        if inventory is None:
            return False
        max_unit = inventory.max_unit or inventory.total
        return (inventory.min_unit <= amount <= max_unit
                and amount % inventory.step_size == 0
                and p.used.get(name, 0) + amount <= inventory.capacity())

    def _aggregates_ok(self, p, group, spans):
        aggregates = set(p.aggregates)
        root_aggregates = set(self.by_uuid[self.root[p.uuid]].aggregates)

        def member(aggs):
            return all(aggs & s for s in group.member_of)
        ok = member(aggregates) or (spans and member(root_aggregates))
        bad = aggregates | (root_aggregates if spans else set())
        return ok and not bad & group.forbidden_aggregates

    def accepts(self, request, root):
        tree = [p for p in self.by_uuid.values() if self.root[p.uuid] == root]
        top = self.by_uuid[root]
        if not request.root_required <= top.traits:
            return False
        slots = []   # (group, classes, spans)
        for group in request.groups:
            if group.suffix:
                slots.append((group, tuple(group.resources), False))
            else:
                slots.extend((group, (name,), True)
                             for name in group.resources)
        for choice in itertools.product(tree, repeat=len(slots)):
            if self._valid(request, slots, choice):
                return True
        return False

    def _valid(self, request, slots, choice):
        total = {}
        isolated = []
        gathered = set()
        for (group, names, spans), p in zip(slots, choice):
            if group.forbidden_traits & p.traits:
                return False
            if not self._aggregates_ok(p, group, spans):
                return False
            if spans:
                gathered |= p.traits
            elif not group.required_traits <= p.traits:
                return False
            else:
                isolated.append(p.uuid)
            for name in names:
                amount = group.resources[name]
                if not self._fits(p, name, amount):
                    return False
                key = (p.uuid, name)
                total[key] = total.get(key, 0) + amount
        unsuffixed = request.group('')
        if unsuffixed and not unsuffixed.required_traits <= gathered:
            return False
        if request.group_policy == 'isolate' and (
                len(set(isolated)) < len(isolated)):
            return False
        for (uuid, name), amount in total.items():
            p = self.by_uuid[uuid]
            if not self._fits_sum(p, name, amount):
                return False
        return True

    def _fits_sum(self, p, name, amount):
        inventory = p.inventories[name]
        max_unit = inventory.max_unit or inventory.total
        return (amount <= max_unit
                and p.used.get(name, 0) + amount <= inventory.capacity())


def _check_allocation(providers, request, root, allocation):
    by_uuid = {p.uuid: p for p in providers}
    asked = request.all_resources()
    given = {}
    for uuid, amounts in allocation.items():
        p = by_uuid[uuid]
        for name, amount in amounts.items():
            given[name] = given.get(name, 0) + amount
            inventory = p.inventories[name]
            assert p.used.get(name, 0) + amount <= inventory.capacity()
    assert given == asked


@pytest.mark.parametrize('seed', range(12))
def test_column_passes_match_a_brute_force(seed):
    rng = random.Random(seed)
    providers = _cloud(rng)
    table = candidates.ProviderTable(providers)
    brute = _Brute(providers)
    for _ in range(25):
        request = _request(rng)
        got = table.acceptable_roots(request)
        for root, ok in zip(table.root_uuids, got):
            assert ok == brute.accepts(request, root), (request, root)
            allocation = table.allocation_for(request, root)
            assert (allocation is not None) == ok
            if ok:
                _check_allocation(providers, request, root, allocation)


def test_a_grandchild_takes_the_root_s_aggregates_not_its_parent_s():
    providers = [
        provider_columns.Provider('cn1', aggregates=frozenset({'a'})),
        provider_columns.Provider('numa', 'cn1',
                                  aggregates=frozenset({'b'})),
        provider_columns.Provider('cache', 'numa', {
            'CUSTOM_LLC': provider_columns.Inventory(4)})]
    table = candidates.ProviderTable(providers)

    def member(agg):
        return request_mod.ResourceRequest((request_mod.RequestGroup(
            resources={'CUSTOM_LLC': 1}, member_of=(frozenset({agg}),)),))
    assert table.accepted_root_uuids(member('a')) == ['cn1']
    assert table.accepted_root_uuids(member('b')) == []


@pytest.mark.parametrize('providers, message', [
    ([provider_columns.Provider('a'), provider_columns.Provider('a')],
     'listed twice'),
    ([provider_columns.Provider('a', 'ghost')], 'not among the providers'),
    ([provider_columns.Provider('a', 'b'),
      provider_columns.Provider('b', 'a')], 'cycle'),
    ([provider_columns.Provider('a', inventories={
        'VCPU': provider_columns.Inventory(4, step_size=0)})], 'step_size'),
])
def test_bad_providers_are_refused_by_name(providers, message):
    with pytest.raises(ValueError, match=message):
        candidates.ProviderTable(providers)


@pytest.mark.parametrize('request_, message', [
    (request_mod.ResourceRequest((), group_policy='spread'), 'group_policy'),
    (request_mod.ResourceRequest((request_mod.RequestGroup('1'),
                                  request_mod.RequestGroup('1'))),
     'repeat a suffix'),
    (request_mod.ResourceRequest((request_mod.RequestGroup(
        resources={'VCPU': -1}),)), 'VCPU'),
])
def test_bad_requests_are_refused_by_name(request_, message):
    table = candidates.ProviderTable([provider_columns.Provider('cn1')])
    with pytest.raises(ValueError, match=message):
        table.acceptable_roots(request_)


def test_allocation_for_refuses_a_provider_that_is_not_a_root():
    table = candidates.ProviderTable([
        provider_columns.Provider('cn1'),
        provider_columns.Provider('numa', 'cn1')])
    with pytest.raises(ValueError, match='numa is not a root'):
        table.allocation_for(request_mod.ResourceRequest(), 'numa')
