"""Provider columns built in bulk, changed by claims, and cut by a mask.

``from_arrays`` is checked against the per-Provider build on random
clouds given in a scrambled order (children before their parents, roots
anywhere); the arrays are made here, by a loop written separately from
``provider_arrays.from_providers``. ``with_used`` and ``with_allocation``
are checked against a table built afresh with the new used amounts.
"""

import random

import numpy as np
import pytest

from scheduler.resources import candidates
from scheduler.resources import provider_columns
from tests.unit.scheduler.resources import test_candidates_brute as brute

Inventory = provider_columns.Inventory


def _arrays(providers, rng):
    """The from_arrays arguments of ``providers``, in a shuffled order,
    with class, trait and aggregate numbers of their own."""
    shuffled = list(providers)
    rng.shuffle(shuffled)
    position = {p.uuid: n for n, p in enumerate(shuffled)}
    classes = sorted({name for p in shuffled for name in p.inventories},
                     reverse=True)
    records = []
    for p in shuffled:
        for name, inv in p.inventories.items():
            records.append((position[p.uuid], classes.index(name), inv.total,
                            inv.reserved, inv.min_unit,
                            -1 if inv.max_unit is None else inv.max_unit,
                            inv.step_size, inv.allocation_ratio,
                            p.used.get(name, 0)))
    rng.shuffle(records)
    columns = [np.array(values) for values in zip(*records)]

    def memberships(attribute):
        names = sorted({n for p in shuffled for n in getattr(p, attribute)})
        pairs = [(position[p.uuid], names.index(n)) for p in shuffled
                 for n in getattr(p, attribute)]
        rows, index = zip(*pairs) if pairs else ((), ())
        return provider_columns.Memberships(tuple(names), list(rows),
                                            list(index))

    return dict(
        uuids=[p.uuid for p in shuffled],
        parents=[-1 if p.parent_uuid is None else position[p.parent_uuid]
                 for p in shuffled],
        inventories=provider_columns.InventoryArrays(tuple(classes),
                                                     *columns),
        traits=memberships('traits'),
        aggregates=memberships('aggregates'))


def _described(columns):
    """Each provider as plain values, keyed by UUID (order-free)."""
    def names(index, bits, row):
        return {name for name, bit in index.items()
                if int(bits[bit // 64, row]) >> (bit % 64) & 1}
    result = {}
    for row, uuid in enumerate(columns.uuids):
        limits = {}
        for name, column in columns.classes.items():
            unit = columns.min_unit[column]
            step = columns.step_size[column]
            limits[name] = (int(columns.limit[column][row]),
                            1 if unit is None else int(unit[row]),
                            1 if step is None else int(step[row]))
        result[uuid] = (columns.uuids[columns.root_of[row]], limits,
                        names(columns.traits, columns.trait_bits, row),
                        names(columns.aggregates, columns.aggregate_bits,
                              row))
    return result


@pytest.mark.parametrize('seed', range(6))
def test_from_arrays_equals_the_per_provider_build(seed):
    rng = random.Random(seed)
    providers = brute._cloud(rng)
    by_provider = candidates.ProviderTable(providers)
    arrays = _arrays(providers, rng)
    by_arrays = candidates.ProviderTable.from_arrays(**arrays)
    assert _described(by_arrays.columns) == _described(by_provider.columns)
    # Trees come in the order of their roots in the input.
    assert by_arrays.root_uuids == [
        uuid for uuid, parent in zip(arrays['uuids'], arrays['parents'])
        if parent == -1]
    assert [arrays['uuids'][n] for n in by_arrays.columns.order] == list(
        by_arrays.columns.uuids)
    for _ in range(20):
        request = brute._request(rng)
        expected = dict(zip(by_provider.root_uuids,
                            by_provider.acceptable_roots(request)))
        got = dict(zip(by_arrays.root_uuids,
                       by_arrays.acceptable_roots(request)))
        assert got == expected, request


@pytest.mark.parametrize('seed', range(4))
def test_a_candidate_mask_answers_as_the_whole_table_cut(seed):
    rng = random.Random(seed)
    table = candidates.ProviderTable(brute._cloud(rng, trees=40))
    trees = len(table.root_uuids)
    for share in (0.1, 0.5, 1.0):
        mask = np.array([rng.random() < share for _ in range(trees)])
        for _ in range(10):
            request = brute._request(rng)
            whole = table.acceptable_roots(request)
            assert (table.acceptable_roots(request, mask)
                    == (whole & mask)).all(), request


def test_a_candidate_mask_of_the_wrong_shape_is_refused():
    table = candidates.ProviderTable([provider_columns.Provider('cn1')])
    with pytest.raises(ValueError, match='candidate_mask'):
        table.acceptable_roots(brute.request_mod.ResourceRequest(),
                               np.ones(2, dtype=bool))


def _cloud():
    return [
        provider_columns.Provider('cn1', inventories={
            'VCPU': Inventory(8), 'MEMORY_MB': Inventory(4096)},
            used={'VCPU': 2}),
        provider_columns.Provider('cn1-pf', 'cn1', inventories={
            'SRIOV_NET_VF': Inventory(4)}),
        provider_columns.Provider('cn2', inventories={
            'VCPU': Inventory(8, max_unit=4)}),
    ]


def test_with_used_equals_a_table_built_with_those_amounts():
    table = candidates.ProviderTable(_cloud())
    changed = table.with_used({'cn1': {'VCPU': 7}, 'cn1-pf': {
        'SRIOV_NET_VF': 4}, 'cn2': {'VCPU': 1}})
    rebuilt = [provider_columns.Provider(
        p.uuid, p.parent_uuid, p.inventories, used, p.traits, p.aggregates)
        for p, used in zip(_cloud(), ({'VCPU': 7}, {'SRIOV_NET_VF': 4},
                                      {'VCPU': 1}))]
    assert _described(changed.columns) == _described(
        candidates.ProviderTable(rebuilt).columns)
    # The original is untouched; what did not change is shared.
    assert table.columns.used_of('cn1', 'VCPU') == 2
    assert changed.columns.used_of('cn1', 'VCPU') == 7
    memory = table.columns.classes['MEMORY_MB']
    assert changed.columns.limit[memory] is table.columns.limit[memory]
    assert changed.columns.trait_bits is table.columns.trait_bits


def test_a_claim_and_its_release_come_back_to_the_start():
    table = candidates.ProviderTable(_cloud())
    request = brute.request_mod.ResourceRequest((
        brute.request_mod.RequestGroup(resources={'VCPU': 3}),))
    allocation = table.allocation_for(request, 'cn1')
    claimed = table.with_allocation(allocation)
    assert claimed.columns.used_of('cn1', 'VCPU') == 5
    assert claimed.accepted_root_uuids(request) == ['cn1', 'cn2']
    twice = claimed.with_allocation(allocation)
    assert twice.accepted_root_uuids(request) == ['cn2']
    released = twice.with_allocation(allocation, sign=-1).with_allocation(
        allocation, sign=-1)
    assert _described(released.columns) == _described(table.columns)


@pytest.mark.parametrize('changes, message', [
    ({'ghost': {'VCPU': 1}}, 'ghost is not in the table'),
    ({'cn2': {'MEMORY_MB': 1}}, 'cn2 has no inventory of MEMORY_MB'),
    ({'cn1': {'CUSTOM_X': 1}}, 'cn1 has no inventory of CUSTOM_X'),
])
def test_with_used_refuses_what_it_cannot_change(changes, message):
    table = candidates.ProviderTable(_cloud())
    with pytest.raises(ValueError, match=message):
        table.with_used(changes)


def _inventory(**fields):
    values = dict(class_names=('VCPU',), provider=[0], class_index=[0],
                  total=[4])
    values.update(fields)
    return provider_columns.InventoryArrays(**values)


@pytest.mark.parametrize('arguments, message', [
    (dict(uuids=['a', 'b'], parents=[-1]), '1 parents given for 2'),
    (dict(uuids=['a', 'b'], parents=[-1, 5]), 'b has parent 5'),
    (dict(uuids=['a', 'b', 'c'], parents=[-1, 2, 1]), 'b, c form a cycle'),
    (dict(uuids=['a', 'a'], parents=[-1, -1]), 'a is listed twice'),
    (dict(uuids=['a'], parents=[-1], inventories=_inventory(
        provider=[0, 0], class_index=[0, 0], total=[4, 4])),
     'a has two VCPU inventories'),
    (dict(uuids=['a'], parents=[-1], inventories=_inventory(
        class_index=[1])), 'class_index 1 is out of range'),
    (dict(uuids=['a'], parents=[-1], inventories=_inventory(
        provider=[3])), 'provider 3 is out of range'),
    (dict(uuids=['a'], parents=[-1], inventories=_inventory(
        step_size=[0])), 'a: VCPU inventory needs'),
    (dict(uuids=['a'], parents=[-1], inventories=_inventory(
        total=[4, 5])), 'differ in length'),
    (dict(uuids=['a'], parents=[-1], traits=provider_columns.Memberships(
        ('T',), [0], [1])), 'traits index 1 is out of range'),
])
def test_from_arrays_refuses_bad_input_by_name(arguments, message):
    with pytest.raises(ValueError, match=message):
        provider_columns.Columns.from_arrays(**arguments)
