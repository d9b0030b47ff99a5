"""FilterScheduler with server groups: the instances of one request see
where the earlier ones went; NoValidHost names the group filter."""

import collections

import pytest

from scheduler.db import api as db_api
from scheduler.db import instances as db_instances
from scheduler.drivers import filter_scheduler
from scheduler import exception
from tests.unit.scheduler import fakes
from tests.unit.scheduler import group_fakes as gf

FILTERS = ['ComputeFilter', 'RamFilter', 'ServerGroupAntiAffinityFilter',
           'ServerGroupAffinityFilter', 'SameHostFilter',
           'DifferentHostFilter']


@pytest.fixture
def driver(cloud, make_driver, config):
    config.config(enabled_filters=FILTERS, group='filter_scheduler')
    for host in ('a', 'b', 'c'):
        cloud.add_node(host, memory_mb=8192, ram_allocation_ratio=1.0)
    return make_driver(filter_scheduler.FilterScheduler)


def _landed(selections):
    return [alternates[0].service_host for alternates in selections]


def _spec(group, count, **kwargs):
    return gf.spec(group, num_instances=count, **kwargs)


def test_anti_affinity_spreads_one_request(driver):
    uuids = fakes.uuids(3)
    group = gf.group('anti-affinity', uuids)
    spec = _spec(group, 3)
    landed = _landed(driver.select_destinations(None, spec, uuids))
    assert sorted(landed) == ['a', 'b', 'c']
    # The caller's spec is left as it was.
    assert spec.instance_group.hosts == [] and spec.instance_uuid is None


def test_the_callers_spec_and_group_are_left_as_they_were(driver):
    # The request copies the spec and its group, not what they share.
    group = gf.group('affinity')
    spec = _spec(group, 3)
    flavor, changed = spec.flavor, spec.obj_what_changed()
    uuids = fakes.uuids(3)
    assert len(set(_landed(driver.select_destinations(None, spec,
                                                      uuids)))) == 1
    assert spec.instance_group is group and spec.flavor is flavor
    assert group.members == [] and group.hosts == []
    assert spec.instance_uuid is None
    assert spec.obj_what_changed() == changed


def test_anti_affinity_beyond_the_hosts_is_no_valid_host(driver, cloud):
    uuids = fakes.uuids(4)
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(
            None, _spec(gf.group('anti-affinity', uuids), 4), uuids)
    message = str(error.value)
    assert 'Instance 4 of 4' in message
    assert ('0/3 hosts available: earlier instances of the request 3 -> 1, '
            'RamFilter 1 -> 1, ServerGroupAntiAffinityFilter 1 -> 0 (removed '
            'the last 1)') in message
    for host in ('a', 'b', 'c'):
        assert host + ',' not in message and host + ')' not in message
    assert all(cloud.allocations(uuid) == {} for uuid in uuids)


def test_max_server_per_host_allows_that_many(driver):
    uuids = fakes.uuids(6)
    group = gf.group('anti-affinity', uuids,
                     rules={'max_server_per_host': '2'})
    landed = _landed(driver.select_destinations(None, _spec(group, 6),
                                                uuids))
    assert collections.Counter(landed) == {'a': 2, 'b': 2, 'c': 2}


def test_members_already_placed_count(driver):
    old = fakes.uuids(2)
    driver.select_destinations(None, _spec(gf.group('anti-affinity', old),
                                           2), old)
    new = fakes.uuids(1)
    # The conductor sends every member, the earlier ones included.
    group = gf.group('anti-affinity', old + new)
    [landed] = _landed(driver.select_destinations(None, _spec(group, 1),
                                                  new))
    placed = {state.host for state in driver.host_manager.snapshot().states
              if set(old) & set(state.instances)}
    assert landed not in placed and len(placed) == 2


def test_affinity_gathers_one_request_on_one_host(driver):
    uuids = fakes.uuids(3)
    landed = _landed(driver.select_destinations(
        None, _spec(gf.group('affinity', uuids), 3), uuids))
    assert len(set(landed)) == 1


def test_affinity_follows_the_group_hosts(driver):
    uuids = fakes.uuids(2)
    group = gf.group('affinity', uuids, hosts=['b'])
    assert _landed(driver.select_destinations(None, _spec(group, 2),
                                              uuids)) == ['b', 'b']


def test_without_uuids_nothing_is_claimed_but_instances_still_count(
        driver, cloud):
    landed = _landed(driver.select_destinations(
        None, _spec(gf.group('anti-affinity'), 3)))
    assert sorted(landed) == ['a', 'b', 'c']
    assert all(cloud.node_row(host).memory_mb_used == 0
               for host in ('a', 'b', 'c'))


@pytest.mark.parametrize('policy, expected', [
    ('soft-affinity', 1), ('soft-anti-affinity', 3)])
def test_soft_policies_weigh_the_earlier_instances(driver, config, policy,
                                                   expected):
    # RAMWeigher would spread; the soft weighers must outweigh it.
    config.config(soft_affinity_weight_multiplier=10.0,
                  soft_anti_affinity_weight_multiplier=10.0,
                  group='filter_scheduler')
    uuids = fakes.uuids(3)
    landed = _landed(driver.select_destinations(
        None, _spec(gf.group(policy, uuids), 3), uuids))
    assert len(set(landed)) == expected


def _running(uuid, host):
    with db_api.writer() as session:
        db_instances.create(session, uuid, {'name': 'f'}, {})
        db_instances.update(session, uuid, host=host)


def test_same_and_different_host_hints(cloud, make_driver, config):
    config.config(enabled_filters=FILTERS, group='filter_scheduler')
    for host in ('a', 'b', 'c'):
        cloud.add_node(host)
    there, other = fakes.uuids(2)
    _running(there, 'b')
    _running(other, 'c')
    driver = make_driver(filter_scheduler.FilterScheduler)
    same = gf.spec(scheduler_hints={'same_host': [there]}, num_instances=2)
    assert _landed(driver.select_destinations(None, same)) == ['b', 'b']
    apart = gf.spec(scheduler_hints={'different_host': [there, other]})
    assert _landed(driver.select_destinations(None, apart)) == ['a']
