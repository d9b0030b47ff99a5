"""The filter scheduler in Nova mode: claims in the real Placement (in
process), never in SQL.

The host cache reads Gantt's schema, here standing for the Nova-mode
mirror: its nodes' uuids are Placement root providers with the same
inventory. A claim must land in Placement, leave the SQL usage and
allocations untouched, and keep its reservation in the cache until the
mirror catches up; a lost claim moves on, a request that cannot be
placed entirely releases its claims in Placement, and a Placement that
is away is named and leaves no reservation behind.
"""

import datetime
import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.drivers import chance_scheduler
from scheduler.drivers import claimers
from scheduler.drivers import filter_scheduler
from scheduler import exception
from scheduler.nova import placement_client
from tests.functional import test_placement_claims as claims_tests
from tests.unit.scheduler import fakes

pytestmark = claims_tests.pytestmark

PROJECT, USER = 'p-1', 'u-1'
running_placement = claims_tests.running_placement
placement = claims_tests.placement


@pytest.fixture
def cloud(database):
    return fakes.Cloud()


@pytest.fixture
def nova_mode(config):
    config.config(backend='nova', group='scheduler')
    config.config(enabled_filters=['ComputeFilter'],
                  weight_classes=['scheduler.weights.ram.RAMWeigher'],
                  group='filter_scheduler')


@pytest.fixture
def drivers():
    built = []
    yield built
    for driver in built:
        driver.stop()


def add_host(cloud, placement, name, vcpus=4, memory_mb=4096,
             local_gb=100):
    """A node in the host cache's database and its root provider in
    Placement (same uuid, same inventory, the mirror's generation)."""
    node_id = cloud.add_node(name, vcpus=vcpus, memory_mb=memory_mb,
                             local_gb=local_gb, cpu_allocation_ratio=1.0,
                             ram_allocation_ratio=1.0,
                             disk_allocation_ratio=1.0)
    rp_uuid = cloud.node_row(name).uuid
    placement.post('/resource_providers', {'uuid': rp_uuid, 'name': name})
    placement.put('/resource_providers/%s/inventories' % rp_uuid, {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': vcpus},
                        'MEMORY_MB': {'total': memory_mb},
                        'DISK_GB': {'total': local_gb}}})
    as_mirrored(node_id, placement.get(
        '/resource_providers/%s' % rp_uuid)['generation'])
    return rp_uuid


def as_mirrored(node_id, generation):
    """The mirror's row: Placement's generation, written a while ago."""
    table = models.ComputeNode.__table__
    with db_api.writer() as session:
        session.execute(sa.update(table).where(table.c.id == node_id).values(
            generation=generation,
            updated_at=fakes.now() - datetime.timedelta(seconds=60)))


def nova_driver(drivers, placement, client=None,
                cls=filter_scheduler.FilterScheduler):
    driver = cls()
    drivers.append(driver)
    assert isinstance(driver.claimer, claimers.PlacementClaimer)
    driver.claimer = claimers.PlacementClaimer(
        driver.host_manager,
        client or placement_client.PlacementClient(placement.adapter),
        backoff=claims_tests.no_pause)
    driver.start()
    return driver


def spec(num_instances=1, vcpus=1, memory_mb=512, root_gb=10):
    return fakes.spec(vcpus=vcpus, memory_mb=memory_mb, root_gb=root_gb,
                      num_instances=num_instances, project_id=PROJECT,
                      user_id=USER)


def state(driver, name):
    """The cached HostState of node ``name``."""
    table = driver.host_manager.snapshot()
    return next(s for s in table.states if s.nodename == name)


def sql_usage(cloud, name):
    row = cloud.node_row(name)
    return row.vcpus_used, row.memory_mb_used, row.local_gb_used


def test_backend_chooses_the_claimer(config, database, drivers):
    driver = filter_scheduler.FilterScheduler()
    drivers.append(driver)
    assert isinstance(driver.claimer, claimers.SqlClaimer)
    config.config(backend='nova', group='scheduler')
    driver = filter_scheduler.FilterScheduler()
    drivers.append(driver)
    assert isinstance(driver.claimer, claimers.PlacementClaimer)
    # The Placement client is built on the first claim, not before.
    assert driver.claimer._client is None


def test_claims_land_in_placement_never_in_sql(cloud, placement, nova_mode,
                                               drivers):
    providers = {name: add_host(cloud, placement, name)
                 for name in ('big', 'small')}
    driver = nova_driver(drivers, placement)
    uuids = fakes.uuids(2)

    selections = driver.select_destinations(None, spec(2), uuids, False)

    for consumer, [chosen] in zip(uuids, selections):
        body = placement.get('/allocations/%s' % consumer)
        assert body['allocations'] == {providers[chosen.nodename]: {
            'generation': body['allocations'][providers[
                chosen.nodename]]['generation'],
            'resources': {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}}}
        assert (body['project_id'], body['user_id']) == (PROJECT, USER)
        assert cloud.allocations(consumer) == {}
    for name in providers:
        assert sql_usage(cloud, name) == (0, 0, 0)
    assert driver.stats['claims'] == 2
    # The cache's reservations stand for the claims.
    used = sum(state(driver, name).vcpus_used for name in providers)
    assert used == 2


def test_reservation_kept_until_the_mirror_catches_up(cloud, placement,
                                                      nova_mode, drivers):
    add_host(cloud, placement, 'only')
    driver = nova_driver(drivers, placement)

    driver.select_destinations(None, spec(vcpus=3), fakes.uuids(1), False)

    assert driver.host_manager.stats['claims_taken_as_read'] == 1
    # The mirror has not caught up (its row still says nothing is used);
    # a refresh keeps the reservation.
    driver.host_manager.refresh()
    assert state(driver, 'only').vcpus_used == 3
    # So the next request sees the room taken: 1 CPU is left.
    with pytest.raises(exception.NoValidHost):
        driver.select_destinations(None, spec(vcpus=2), fakes.uuids(1),
                                   False)
    assert driver.stats['claims'] == 1


def test_lost_claim_moves_to_the_next_host(cloud, placement, nova_mode,
                                           drivers):
    best = add_host(cloud, placement, 'best', memory_mb=8192)
    other = add_host(cloud, placement, 'other', memory_mb=4096)
    driver = nova_driver(drivers, placement)
    # Another scheduler took the best host's CPUs in Placement; the
    # mirror does not show it yet.
    placement.put('/allocations/%s' % uuid.uuid4(), {
        'allocations': {best: {'resources': {'VCPU': 4}}},
        'consumer_generation': None, 'project_id': PROJECT,
        'user_id': USER, 'consumer_type': 'INSTANCE'})
    [consumer] = fakes.uuids(1)

    [[chosen]] = driver.select_destinations(None, spec(), [consumer], False)

    assert chosen.nodename == 'other'
    assert driver.stats['claim_retries'] == 1
    assert set(placement.get('/allocations/%s' % consumer)[
        'allocations']) == {other}
    assert claims_tests.usage(placement, best)['VCPU'] == 4


def test_request_not_placed_entirely_releases_in_placement(
        cloud, placement, nova_mode, drivers):
    rp = add_host(cloud, placement, 'only')
    driver = nova_driver(drivers, placement)
    # Room in the cache for two, in Placement for one.
    placement.put('/allocations/%s' % uuid.uuid4(), {
        'allocations': {rp: {'resources': {'VCPU': 1}}},
        'consumer_generation': None, 'project_id': PROJECT,
        'user_id': USER, 'consumer_type': 'INSTANCE'})
    uuids = fakes.uuids(2)

    with pytest.raises(exception.NoValidHost):
        driver.select_destinations(None, spec(2, vcpus=2), uuids, False)

    for consumer in uuids:
        assert placement.get('/allocations/%s' % consumer)[
            'allocations'] == {}
    assert claims_tests.usage(placement, rp)['VCPU'] == 1
    assert driver.stats['claims_released'] == 1
    assert sql_usage(cloud, 'only') == (0, 0, 0)


def test_release_of_a_move_gives_back_the_destination_only(
        cloud, placement, nova_mode, drivers):
    source = add_host(cloud, placement, 'source')
    dest = add_host(cloud, placement, 'dest')
    driver = nova_driver(drivers, placement)
    consumer = str(uuid.uuid4())
    placement.put('/allocations/%s' % consumer, {
        'allocations': {source: {'resources': {'VCPU': 1}}},
        'consumer_generation': None, 'project_id': PROJECT,
        'user_id': USER, 'consumer_type': 'INSTANCE'})
    target = state(driver, 'dest')

    assert driver.claim(target, consumer, fakes.spec().resources(),
                        owner=(PROJECT, USER)) is True
    assert set(placement.get('/allocations/%s' % consumer)[
        'allocations']) == {source, dest}

    driver.release([(consumer, target.id)])
    assert set(placement.get('/allocations/%s' % consumer)[
        'allocations']) == {source}


def test_unreachable_placement_rolls_back_the_reservation(
        cloud, placement, nova_mode, drivers):
    add_host(cloud, placement, 'only')
    driver = nova_driver(drivers, placement,
                         client=claims_tests.unreachable_client())
    [consumer] = fakes.uuids(1)

    with pytest.raises(placement_client.PlacementUnreachable,
                       match='Placement is unreachable'):
        driver.select_destinations(None, spec(vcpus=2), [consumer], False)

    only = state(driver, 'only')
    assert only.vcpus_used == 0
    assert consumer not in only.instances
    assert driver.stats['claims'] == 0
    assert placement.get('/allocations/%s' % consumer)['allocations'] == {}


def test_claim_without_owner_is_named(cloud, placement, nova_mode, drivers):
    add_host(cloud, placement, 'only')
    driver = nova_driver(drivers, placement)
    with pytest.raises(ValueError, match='needs a project_id'):
        driver.select_destinations(None, fakes.spec(), fakes.uuids(1), False)
    assert state(driver, 'only').vcpus_used == 0



def test_chance_scheduler_claims_in_placement(cloud, placement, nova_mode,
                                              drivers):
    rp = add_host(cloud, placement, 'only')
    driver = nova_driver(drivers, placement,
                         cls=chance_scheduler.ChanceScheduler)
    [consumer] = fakes.uuids(1)

    [[chosen]] = driver.select_destinations(None, spec(vcpus=2), [consumer],
                                            False)

    assert chosen.nodename == 'only'
    body = placement.get('/allocations/%s' % consumer)
    assert body['allocations'][rp]['resources']['VCPU'] == 2
    assert (body['project_id'], body['user_id']) == (PROJECT, USER)
    assert sql_usage(cloud, 'only') == (0, 0, 0)
