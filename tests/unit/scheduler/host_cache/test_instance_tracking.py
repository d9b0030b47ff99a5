"""Instances per host in the host cache: SQL load, casts, sync, claims."""

import random

import pytest

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.host_cache import host_instances
from scheduler.host_cache import instance_tracking
from scheduler.objects import request_spec
from tests.unit.scheduler import fakes

INFO = host_instances.InstanceInfo('m1.small', {})


def _instance(uuid, host, flavor_name='m1.small', image_props=None):
    spec = fakes.spec(image=request_spec.ImageMeta(
        properties=image_props or {}))
    with db_api.writer() as session:
        db_instances.create(session, uuid, {'name': flavor_name,
                                            'vcpus': 1},
                            spec.obj_to_primitive())
        if host:
            db_instances.update(session, uuid, host=host)


def _instances(table, host):
    """The instances of every node of ``host``, which must agree."""
    found = [table.states[row].instances for row in table.rows_by_host[host]]
    assert all(instances is found[0] for instances in found)
    return found[0]


@pytest.fixture
def manager(cloud, make_host_manager):
    cloud.add_node('a', nodename='a-1')
    cloud.add_node('a', nodename='a-2')
    cloud.add_node('b')
    return make_host_manager(auto_refresh=False)


def test_first_load_reads_instances_from_sql(cloud, make_host_manager):
    uuids = fakes.uuids(3)
    cloud.add_node('a')
    cloud.add_node('b')
    _instance(uuids[0], 'a', image_props={'hw_architecture': 'x86_64'})
    _instance(uuids[1], 'a', flavor_name='m1.large')
    _instance(uuids[2], None)     # not placed: on no host
    table = make_host_manager(auto_refresh=False).snapshot()
    assert _instances(table, 'a') == {
        uuids[0]: host_instances.InstanceInfo(
            'm1.small', {'hw_architecture': 'x86_64'}),
        uuids[1]: host_instances.InstanceInfo('m1.large', {})}
    assert _instances(table, 'b') == {}
    assert list(table.instance_counts(uuids)) == [2, 0]


def test_update_and_delete_reach_every_node_of_the_host(manager):
    # (The manager's table changes in place; a detached copy does not.)
    before = manager.snapshot().detached()
    uuids = fakes.uuids(2)
    manager.update_instance_info('a', {uuid: INFO for uuid in uuids})
    table = manager.snapshot()
    assert set(_instances(table, 'a')) == set(uuids)
    assert list(table.instance_counts(uuids + fakes.uuids(1))) == [2, 2, 0]
    assert _instances(before, 'a') == {}
    manager.delete_instance_info('a', uuids[0])
    table = manager.snapshot()
    assert set(_instances(table, 'a')) == {uuids[1]}
    assert list(table.instance_counts(uuids)) == [1, 1, 0]
    assert manager.stats['instance_updates'] == 2


def test_sync_that_matches_reads_nothing(manager):
    manager.snapshot()
    [uuid] = fakes.uuids(1)
    manager.update_instance_info('b', {uuid: INFO})
    assert manager.sync_instance_info('b', [uuid])
    assert manager.sync_instance_info('a', [])
    assert manager.stats['instance_resyncs'] == 0


def test_sync_that_differs_rebuilds_the_host_from_sql(manager):
    manager.snapshot()
    in_sql, only_cached, only_compute = fakes.uuids(3)
    _instance(in_sql, 'b')
    manager.update_instance_info('b', {only_cached: INFO})
    assert not manager.sync_instance_info('b', [in_sql, only_compute])
    # SQL is the truth, not the compute's list.
    assert set(_instances(manager.snapshot(), 'b')) == {in_sql}
    assert manager.stats['instance_resyncs'] == 1


def test_a_cast_during_a_resync_is_not_lost(manager, monkeypatch):
    manager.snapshot()
    old, new = fakes.uuids(2)
    _instance(old, 'b')
    read = instance_tracking.read_instances

    def read_then_cast_arrives(session, hosts=None):
        found = read(session, hosts)
        manager.update_instance_info('b', {new: INFO})
        return found

    monkeypatch.setattr(instance_tracking, 'read_instances',
                        read_then_cast_arrives)
    manager.reload_host_instances(['b'])
    assert new in _instances(manager.snapshot(), 'b')


def test_casts_before_the_first_load(cloud, make_host_manager):
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    in_sql, told = fakes.uuids(2)
    _instance(in_sql, 'a')
    manager.update_instance_info('a', {told: INFO})
    # The compute spoke after SQL was written: its word stands.
    assert set(_instances(manager.snapshot(), 'a')) == {told}


def test_delete_from_an_unknown_host_reads_sql(cloud, make_host_manager):
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    [uuid] = fakes.uuids(1)
    _instance(uuid, 'a')
    manager.delete_instance_info('a', fakes.uuids(1)[0])
    assert manager.stats['instance_resyncs'] == 1
    assert set(_instances(manager.snapshot(), 'a')) == {uuid}


def test_claims_record_the_instance_and_release_forgets_it(manager):
    table = manager.snapshot()
    node = table.states[0]
    [uuid] = fakes.uuids(1)
    manager.consume(node.id, claims.Resources(1, 512, 0), uuid, INFO)
    assert _instances(manager.snapshot(), 'a') == {uuid: INFO}
    # A refresh that re-reads the claimed node keeps the instance.
    assert _instances(manager.refresh(), 'a') == {uuid: INFO}
    manager.forget_instances([(uuid, node.id)])
    assert _instances(manager.snapshot(), 'a') == {}


def test_without_tracking_each_request_reads_sql(manager, config):
    config.config(track_instance_changes=False, group='filter_scheduler')
    manager.snapshot()
    [uuid] = fakes.uuids(1)
    _instance(uuid, 'b')
    assert set(_instances(manager.request_snapshot(), 'b')) == {uuid}
    with db_api.writer() as session:
        db_instances.update(session, uuid, host='a')
    table = manager.request_snapshot()
    assert set(_instances(table, 'a')) == {uuid}
    assert _instances(table, 'b') == {}
    # With tracking on, SQL is not read per request.
    config.config(track_instance_changes=True, group='filter_scheduler')
    with db_api.writer() as session:
        db_instances.update(session, uuid, host='b')
    assert set(_instances(manager.request_snapshot(), 'a')) == {uuid}


def _check_index(table, pool=()):
    index = host_instances.InstanceIndex.build(table.states)
    carried = table._instance_index
    for state in table.states:
        for uuid in state.instances:
            assert carried.get(uuid) == index.get(uuid) == state.host
    # Those that left every host are forgotten.
    placed = {uuid for state in table.states for uuid in state.instances}
    for uuid in set(pool) - placed:
        assert carried.get(uuid) is index.get(uuid) is None


def test_index_carried_through_replacements_matches_a_fresh_one(
        monkeypatch):
    monkeypatch.setattr(host_instances, '_DELTA_LIMIT', 8)
    monkeypatch.setattr(host_instances, '_RECENT_LIMIT', 3)
    rng = random.Random(7)
    states = [fakes.host_state('h%d' % (i // 2), nodename='n%d' % i)
              for i in range(10)]
    table = fakes.table(states)
    pool = fakes.uuids(40)
    table.instance_counts(pool)        # builds the index
    for _ in range(200):
        host = 'h%d' % rng.randrange(5)
        instances = {uuid: INFO for uuid in rng.sample(pool,
                                                       rng.randrange(6))}
        # An instance lives on one host: take these away from the others,
        # after or before the host has them (a move seen in either order).
        first = rng.random() < 0.5
        if first:
            table = host_instances.set_host_instances(table, host, instances)
        for other in sorted({state.host for state in table.states} - {host}):
            rows = table.rows_by_host[other]
            kept = {uuid: info for uuid, info
                    in table.states[rows[0]].instances.items()
                    if uuid not in instances}
            table = host_instances.set_host_instances(table, other, kept)
        if not first:
            table = host_instances.set_host_instances(table, host, instances)
        _check_index(table, pool)
        members = rng.sample(pool, 10)
        expected = [len(set(members) & set(state.instances))
                    for state in table.states]
        assert list(table.instance_counts(members)) == expected
