"""The ``--filters placement`` benchmark's cloud and requests (issue 50):
20 resource classes, 200 traits, requests with 2 required traits, 1
forbidden trait and 2 granular groups, and the rows written in bulk that
the scheduler then places on."""

import os
import random
import sys

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import inventories
from scheduler.db import models
from scheduler.drivers import filter_scheduler
from scheduler.resources import from_spec
from scheduler.resources import names
from scheduler.resources import request as request_mod

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..',
                                'benchmarks'))
import placement_cloud  # noqa: E402
import select_destinations  # noqa: E402


def test_the_vocabulary_is_200_traits_half_standard_half_custom():
    vocabulary = placement_cloud.vocabulary()
    assert len(vocabulary) == len(set(vocabulary)) == 200
    for trait in vocabulary:
        assert names.check_trait(trait) == trait
    standard = [trait for trait in vocabulary
                if trait in names.standard_traits()]
    assert len(standard) == 100
    assert set(vocabulary) - set(standard) == {
        'CUSTOM_T%03d' % number for number in range(1, 101)}
    # No trait the scheduler reads a meaning into (a thread policy).
    assert 'HW_CPU_HYPERTHREADING' not in vocabulary
    weights = placement_cloud.weights()
    assert abs(weights.sum() - 1.0) < 1e-9
    assert all(weights[:-1] > weights[1:])


def test_each_node_has_some_custom_classes_and_20_to_40_traits():
    node_ids = list(range(1, 301))
    inventory_rows, trait_rows = placement_cloud.extras_rows(
        random.Random(3), node_ids)
    classes, traits = {}, {}
    for row in inventory_rows:
        assert row['resource_class'] in placement_cloud.CLASSES
        assert row['total'] in placement_cloud.CLASS_TOTALS
        assert row['max_unit'] == row['total'] and row['used'] == 0
        classes.setdefault(row['compute_node_id'], []).append(
            row['resource_class'])
    for row in trait_rows:
        traits.setdefault(row['compute_node_id'], []).append(row['trait'])
    for node_id in node_ids:
        assert len(set(classes[node_id])) == len(classes[node_id])
        assert len(set(traits[node_id])) == len(traits[node_id])
        assert 20 <= len(traits[node_id]) <= 40
    # Every class is on some nodes and missing from others.
    for name in placement_cloud.CLASSES:
        having = sum(name in found for found in classes.values())
        assert 0 < having < len(node_ids)
    # The vocabulary's first traits are on more nodes than its last.
    counts = [sum(trait in found for found in traits.values())
              for trait in placement_cloud.vocabulary()]
    assert sum(counts[:20]) > 3 * sum(counts[-20:])


def test_a_rich_request_asks_the_issues_shape():
    rng = random.Random(5)
    for _ in range(50):
        spec = placement_cloud.make_spec(rng, select_destinations.FLAVORS)
        request = from_spec.resource_request(spec)
        assert request.group_policy == 'none'
        unsuffixed = request.unsuffixed
        assert len(unsuffixed.required_traits) == 2
        assert len(unsuffixed.forbidden_traits) == 1
        assert not unsuffixed.required_traits & unsuffixed.forbidden_traits
        assert unsuffixed.resources == {
            'VCPU': spec.flavor.vcpus, 'MEMORY_MB': spec.flavor.memory_mb,
            'DISK_GB': spec.flavor.root_gb}
        groups = [group for group in request.groups
                  if group.suffix != request_mod.UNSUFFIXED]
        assert [group.suffix for group in groups] == ['1', '2']
        asked = [group.resources for group in groups]
        assert all(len(resources) == 1 and list(resources.values()) == [1]
                   for resources in asked)
        first, second = (next(iter(resources)) for resources in asked)
        assert first != second
        assert {first, second} <= set(placement_cloud.CLASSES)


@pytest.fixture
def driver(database):
    driver = filter_scheduler.FilterScheduler()
    yield driver
    driver.stop()


def _used_of_custom_classes():
    table = models.ComputeNodeInventory.__table__
    with db_api.reader() as session:
        return session.execute(sa.select(sa.func.sum(table.c.used))).scalar()


def test_the_cloud_is_written_and_places_rich_and_plain_requests(
        driver):
    rng = random.Random(11)
    select_destinations.populate(60, rng, 'placement')
    with db_api.reader() as session:
        node_ids = list(session.execute(
            sa.select(models.ComputeNode.__table__.c.id)).scalars())
        found = inventories.node_inventories(session, node_ids)
        traits = inventories.node_traits(session, node_ids)
    assert len(found) == len(traits) == 60
    for node_id in node_ids:
        custom = set(found[node_id]) - set(inventories.CLASSIC_CLASSES)
        assert custom <= set(placement_cloud.CLASSES)
        assert 20 <= len(traits[node_id]) <= 40
    placed = {'placement': 0, 'plain': 0}
    for number in range(40):
        kind, spec = select_destinations.make_spec(rng, 'placement', number)
        spec.availability_zone = None
        placed[kind] += select_destinations.select(driver, spec)
    # Requests take turns; every plain one is placed, and each rich one
    # placed took one unit of each of its two custom classes.
    assert placed['plain'] == 20
    assert placed['placement'] > 0
    assert _used_of_custom_classes() == 2 * placed['placement']
