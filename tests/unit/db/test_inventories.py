"""Inventories of every resource class and node traits, on every backend:
what a report writes, the full inventory, claims per class (all or
nothing, races), release, and ``db check``."""

import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import inventories
from scheduler.db import models
from tests.unit.db import test_claims

_INVENTORY = models.ComputeNodeInventory.__table__
_ITEM = models.AllocationItem.__table__

PCPU = {'total': 4, 'reserved': 0, 'min_unit': 1, 'max_unit': 4,
        'step_size': 1, 'allocation_ratio': 1.0}


def make_node(others=None, traits=None, **classic):
    node = test_claims.make_node(**classic)
    with db_api.writer() as session:
        inventories.report(session, node, others, traits)
    return node


def full(node):
    with db_api.reader() as session:
        return inventories.node_inventory(session, node)


def used(node, name):
    return full(node)[name]['used']


def claim(node, extra, resources=(1, 512, 1), consumer=None):
    return claims.claim_in_sql(node, consumer or str(uuid.uuid4()),
                               claims.Resources(*resources), extra=extra)


def test_full_inventory_presents_the_columns_and_the_rows(any_database):
    node = make_node({'PCPU': PCPU, 'CUSTOM_FPGA': {'total': 2}},
                     reserved_vcpus=1)

    inventory = full(node)

    assert inventory['VCPU'] == {
        'total': 4, 'reserved': 1, 'min_unit': 1, 'max_unit': 4,
        'step_size': 1, 'allocation_ratio': 1.0, 'used': 0}
    assert inventory['MEMORY_MB']['max_unit'] == 8192
    assert inventory['DISK_GB']['total'] == 100
    assert inventory['PCPU'] == dict(PCPU, used=0)
    # Placement's defaults for what the report left out.
    assert inventory['CUSTOM_FPGA'] == {
        'total': 2, 'reserved': 0, 'min_unit': 1,
        'max_unit': inventories.MAX_INT, 'step_size': 1,
        'allocation_ratio': 1.0, 'used': 0}


def test_a_classic_class_of_total_zero_is_no_inventory(database):
    # A baremetal node of Nova's Ironic driver: only its custom class.
    node = make_node({'CUSTOM_GOLD': {'total': 1, 'max_unit': 1}},
                     vcpus=0, memory_mb=0, local_gb=0)
    assert sorted(full(node)) == ['CUSTOM_GOLD']
    with db_api.reader() as session:
        assert inventories.node_inventory(session, 12345) is None


def test_a_node_without_ratio_shows_the_claims_default(database, config):
    config.config(cpu_allocation_ratio=8.0)
    node = make_node(cpu_allocation_ratio=None)
    assert full(node)['VCPU']['allocation_ratio'] == 8.0


def test_reports_replace_classes_and_traits(any_database):
    node = make_node({'PCPU': PCPU, 'CUSTOM_A': {'total': 1}},
                     traits=['COMPUTE_NODE', 'CUSTOM_X'])
    with db_api.writer() as session:
        inventories.report(session, node,
                           {'PCPU': dict(PCPU, total=6, max_unit=6)},
                           ['COMPUTE_NODE', 'HW_CPU_X86_AVX2'])
    assert sorted(full(node)) == ['DISK_GB', 'MEMORY_MB', 'PCPU', 'VCPU']
    assert full(node)['PCPU']['total'] == 6
    with db_api.reader() as session:
        assert inventories.node_traits(session, [node]) == {
            node: frozenset({'COMPUTE_NODE', 'HW_CPU_X86_AVX2'})}

    # None: not reported (an older compute): left as they are.
    with db_api.writer() as session:
        inventories.report(session, node, None, None)
    assert 'PCPU' in full(node)
    with db_api.reader() as session:
        assert inventories.node_traits(session, [node])[node] == {
            'COMPUTE_NODE', 'HW_CPU_X86_AVX2'}


def test_a_class_in_use_is_kept_when_no_longer_reported(any_database):
    node = make_node({'PCPU': PCPU})
    assert claim(node, {'PCPU': 2}) is True
    with db_api.writer() as session:
        inventories.report(session, node, {}, None)
    assert full(node)['PCPU'] == dict(PCPU, used=2)
    assert test_claims.inconsistencies() == []


def test_a_claim_takes_each_class_and_release_gives_it_back(any_database):
    node = make_node({'PCPU': PCPU, 'CUSTOM_FPGA': {'total': 2}})
    consumer = str(uuid.uuid4())

    assert claim(node, {'PCPU': 3, 'CUSTOM_FPGA': 1, 'CUSTOM_NONE': 0},
                 consumer=consumer) is True

    assert (used(node, 'PCPU'), used(node, 'CUSTOM_FPGA')) == (3, 1)
    assert used(node, 'VCPU') == 1
    with db_api.reader() as session:
        assert claims.get_allocation_items(session, consumer) == {
            node: {'PCPU': 3, 'CUSTOM_FPGA': 1}}
    assert test_claims.inconsistencies() == []

    claims.release_in_sql([(consumer, node)])

    assert (used(node, 'PCPU'), used(node, 'CUSTOM_FPGA'),
            used(node, 'VCPU')) == (0, 0, 0)
    with db_api.reader() as session:
        assert session.scalar(sa.select(sa.func.count())
                              .select_from(_ITEM)) == 0


@pytest.mark.parametrize('extra', [
    {'PCPU': 5},                   # more than (total - reserved) * ratio
    {'PCPU': 2, 'CUSTOM_FPGA': 3},  # one class fits, the other does not
    {'CUSTOM_GPU': 1},             # a class the node does not have
    {'CUSTOM_STEP': 3},            # not a multiple of step_size
    {'CUSTOM_STEP': 8},            # above max_unit
    {'CUSTOM_MIN': 1},             # below min_unit
])
def test_a_claim_that_does_not_fit_writes_nothing(any_database, extra):
    node = make_node({
        'PCPU': dict(PCPU, reserved=1, allocation_ratio=1.5),  # room 4.5
        'CUSTOM_FPGA': {'total': 2},
        'CUSTOM_STEP': {'total': 16, 'step_size': 2, 'max_unit': 6},
        'CUSTOM_MIN': {'total': 16, 'min_unit': 2}})
    before = full(node)

    assert claim(node, extra) is False

    assert full(node) == before
    with db_api.reader() as session:
        assert session.scalar(sa.select(sa.func.count())
                              .select_from(models.Allocation)) == 0


def test_the_capacity_of_a_class_uses_reserved_and_ratio(database):
    node = make_node({'PCPU': dict(PCPU, reserved=1, allocation_ratio=1.5)})
    assert claim(node, {'PCPU': 4}) is True     # (4 - 1) * 1.5 = 4.5
    assert claim(node, {'PCPU': 1}) is False


def test_a_direct_claim_that_does_not_fit_leaves_its_session_clean(
        any_database):
    # claim_resources in the caller's transaction: the classes that fit
    # before the one that did not are rolled back with the savepoint.
    node = make_node({'PCPU': PCPU, 'CUSTOM_FPGA': {'total': 1}})
    with db_api.writer() as session:
        assert claims.claim_resources(
            session, node, str(uuid.uuid4()), claims.Resources(1, 1, 1),
            extra={'CUSTOM_FPGA': 2, 'PCPU': 1}) is False
        assert claims.claim_resources(
            session, node, str(uuid.uuid4()), claims.Resources(1, 1, 1),
            extra={'PCPU': 2}) is True
    assert (used(node, 'PCPU'), used(node, 'CUSTOM_FPGA'),
            used(node, 'VCPU')) == (2, 0, 1)
    assert test_claims.inconsistencies() == []


@pytest.mark.parametrize('extra, message', [
    ({'VCPU': 1}, 'through the claim'),
    ({'PCPU': -1}, 'negative amount'),
    ({'PCPU': 1.5}, 'must be an integer'),
])
def test_claims_refuse_what_cannot_be_claimed(database, extra, message):
    node = make_node({'PCPU': PCPU})
    with pytest.raises(ValueError, match=message):
        claim(node, extra)
    assert used(node, 'PCPU') == 0


def test_two_claims_for_the_last_unit_one_wins(any_database):
    node = make_node({'PCPU': PCPU})
    assert claim(node, {'PCPU': 3}) is True

    results = test_claims.race(2, lambda index: claim(node, {'PCPU': 1}))

    assert sorted(results) == [False, True]
    assert used(node, 'PCPU') == 4
    assert test_claims.inconsistencies() == []


def test_many_claims_never_overfill_a_class(any_database):
    node = make_node({'CUSTOM_GOLD': {'total': 3, 'max_unit': 1}})
    results = test_claims.race(8, lambda index: claim(
        node, {'CUSTOM_GOLD': 1}, resources=(0, 0, 0)))
    assert results.count(True) == 3
    assert used(node, 'CUSTOM_GOLD') == 3
    assert test_claims.inconsistencies() == []


def test_db_check_finds_used_that_is_not_the_sum_of_items(any_database):
    good = make_node({'PCPU': PCPU})
    drifted = make_node({'PCPU': PCPU}, host='host2')
    orphan = make_node(host='host3')
    for node in (good, drifted):
        assert claim(node, {'PCPU': 2}) is True
    consumer = str(uuid.uuid4())
    assert claim(orphan, None, consumer=consumer) is True
    with db_api.writer() as session:
        session.execute(sa.update(_INVENTORY)
                        .where(_INVENTORY.c.compute_node_id == drifted)
                        .values(used=1))
        # An item of a class the node has no inventory of.
        allocation = session.scalar(
            sa.select(models.Allocation.id)
            .where(models.Allocation.consumer_uuid == consumer))
        session.execute(sa.insert(_ITEM).values(
            allocation_id=allocation, resource_class='CUSTOM_X', amount=1))

    assert test_claims.inconsistencies() == [
        ('host2', ['PCPU used 1 but allocations sum to 2']),
        ('host3', ['CUSTOM_X allocations sum to 1 but the node has no '
                   'inventory of it']),
    ]


def test_the_usual_claim_still_takes_its_fast_path(database, monkeypatch):
    # No class beyond the classic three: the fresh claim's statement, not
    # claim_resources.
    node = make_node({'PCPU': PCPU})

    def refused(*args, **kwargs):
        raise AssertionError('the full path ran')

    monkeypatch.setattr(claims, 'claim_resources', refused)
    assert claim(node, None) is True
    assert claim(node, {}) is True
