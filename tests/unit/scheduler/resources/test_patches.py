"""Tables derived claim after claim: the patches over shared arrays.

``with_used`` keeps changed rows in a small patch per class and folds it
into fresh arrays past ``PATCH_ROWS`` rows; whatever the chain, a derived
table must answer as a table built afresh with the final used amounts,
and an older table must keep its own answers.
"""

import dataclasses
import random

import numpy as np
import pytest

from scheduler.resources import candidates
from scheduler.resources import provider_columns
from tests.unit.scheduler.resources import test_candidates_brute as brute


def _change(rng, providers, used):
    """Random new used amounts for one or two providers, recorded in
    ``used`` ({uuid: {class: used}})."""
    changes = {}
    for provider in rng.sample(providers, rng.randint(1, 2)):
        if not provider.inventories:
            continue
        names = rng.sample(sorted(provider.inventories),
                           rng.randint(1, len(provider.inventories)))
        amounts = {name: rng.randint(0, 6) for name in names}
        changes[provider.uuid] = amounts
        used.setdefault(provider.uuid, {}).update(amounts)
    return changes


def _rebuilt(providers, used):
    return candidates.ProviderTable([
        dataclasses.replace(provider, used={**provider.used,
                                            **used.get(provider.uuid, {})})
        for provider in providers])


def _answers(rng, table, requests):
    """Every answer of ``table`` to ``requests``: whole, through a small
    candidate mask (the gathered view) and per root (allocation_for)."""
    trees = len(table.root_uuids)
    mask = np.zeros(trees, dtype=bool)
    mask[rng.sample(range(trees), trees // 5)] = True
    answers = []
    for request in requests:
        answers.append(table.acceptable_roots(request).tolist())
        answers.append(table.acceptable_roots(request, mask).tolist())
        answers.append([table.allocation_for(request, root)
                        for root in table.root_uuids])
    return answers


def _chain(seed, steps):
    rng = random.Random(seed)
    providers = brute._cloud(rng, trees=90)
    table = candidates.ProviderTable(providers)
    used = {}
    tables = [table]
    for _ in range(steps):
        table = table.with_used(_change(rng, providers, used))
        tables.append(table)
    return rng, providers, used, tables


@pytest.mark.parametrize('seed', range(6))
def test_a_long_chain_answers_as_a_table_rebuilt(seed):
    rng, providers, used, tables = _chain(seed, 300)
    derived = tables[-1]
    rebuilt = _rebuilt(providers, used)
    columns = derived.columns
    # The chain went past the bound (a fold) and left patches to apply.
    assert any(base is not first for base, first in
               zip(columns.base_limit, tables[0].columns.base_limit))
    assert columns.patches
    assert all(len(patch.rows) <= provider_columns.PATCH_ROWS
               for patch in columns.patches.values())
    requests = [brute._request(rng) for _ in range(25)]
    assert (_answers(random.Random(seed), derived, requests)
            == _answers(random.Random(seed), rebuilt, requests))
    for column in range(len(columns.base_limit)):
        np.testing.assert_array_equal(columns.limit[column],
                                      rebuilt.columns.limit[column])
    for provider in providers:
        for name in provider.inventories:
            assert (columns.used_of(provider.uuid, name)
                    == rebuilt.columns.used_of(provider.uuid, name))


@pytest.mark.parametrize('seed', range(3))
def test_an_older_table_keeps_its_answers(seed):
    rng, providers, _, tables = _chain(seed, 40)
    requests = [brute._request(rng) for _ in range(15)]
    older = tables[20]
    before = _answers(random.Random(seed), older, requests)
    table = tables[-1]
    for _ in range(200):
        table = table.with_used(_change(rng, providers, {}))
        table = table.with_allocation({providers[0].uuid: {}})
    assert _answers(random.Random(seed), older, requests) == before


def test_many_rows_changed_at_once_are_folded_at_once():
    rng = random.Random(7)
    providers = brute._cloud(rng, trees=90)
    table = candidates.ProviderTable(providers)
    with_vcpu = [p for p in providers if 'VCPU' in p.inventories]
    assert len(with_vcpu) > provider_columns.PATCH_ROWS
    changes = {p.uuid: {'VCPU': 1} for p in with_vcpu}
    derived = table.with_used(changes)
    column = table.columns.classes['VCPU']
    assert column not in derived.columns.patches
    assert derived.columns.base_limit[column] is not (
        table.columns.base_limit[column])
    rebuilt = _rebuilt(providers, changes)
    np.testing.assert_array_equal(derived.columns.limit[column],
                                  rebuilt.columns.limit[column])
    # The older table still reads its own amounts.
    assert table.columns.used_of(with_vcpu[0].uuid, 'VCPU') == (
        with_vcpu[0].used.get('VCPU', 0))


def test_a_derivation_copies_no_array():
    rng = random.Random(3)
    providers = brute._cloud(rng, trees=20)
    table = candidates.ProviderTable(providers)
    uuid = next(p.uuid for p in providers if 'VCPU' in p.inventories)
    derived = table.with_used({uuid: {'VCPU': 2}})
    assert all(new is old for new, old in zip(
        derived.columns.base_limit, table.columns.base_limit))
    assert derived.columns.used_of(uuid, 'VCPU') == 2
    row = derived.columns.row_of[uuid]
    column = derived.columns.classes['VCPU']
    assert derived.columns.limit_at(column, row) == int(
        derived.columns.limit[column][row])
