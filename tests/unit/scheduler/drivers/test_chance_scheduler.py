import collections

import pytest

from scheduler.drivers import chance_scheduler
from scheduler import exception
from tests.unit.scheduler import fakes


@pytest.fixture
def driver(cloud, make_driver):
    return make_driver(chance_scheduler.ChanceScheduler)


def test_random_among_mapped_hosts_that_are_up(cloud, driver):
    for name in ('a', 'b', 'c'):
        cloud.add_node(name)
    cloud.add_node('unmapped', mapped=False)
    cloud.add_node('down')
    cloud.set_last_seen('down', 3600)
    picked = collections.Counter(
        driver.select_destinations(None, fakes.spec(), None)[0][0]
        .service_host for _ in range(60))
    assert set(picked) == {'a', 'b', 'c'}


def test_claims_and_alternates(cloud, driver, config):
    config.config(max_attempts=3, group='scheduler')
    for name in ('a', 'b', 'c', 'd'):
        cloud.add_node(name)
    uuids = fakes.uuids(2)
    selections = driver.select_destinations(
        None, fakes.spec(memory_mb=256, num_instances=2), uuids, True)
    chosen = [sel[0].service_host for sel in selections]
    assert len(set(chosen)) == 2   # distinct while there are enough hosts
    for uuid, sel in zip(uuids, selections):
        assert sel[0].claimed and not any(alt.claimed for alt in sel[1:])
        assert len(sel) == 3
        assert sel[0].service_host not in [alt.service_host
                                           for alt in sel[1:]]
        assert cloud.allocations(uuid) == {sel[0].service_host: (1, 256, 0)}


def test_no_service_up(cloud, driver):
    cloud.add_node('a', up=False)
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, fakes.spec(), fakes.uuids(1))
    assert 'Is the appropriate service running?' in str(error.value)


def test_ignore_hosts(cloud, driver):
    cloud.add_node('a')
    cloud.add_node('b')
    spec = fakes.spec(ignore_hosts=['a'])
    for _ in range(10):
        assert driver.select_destinations(
            None, spec, fakes.uuids(1))[0][0].service_host == 'b'
    spec = fakes.spec(ignore_hosts=['a', 'b'])
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, spec, fakes.uuids(1))
    assert 'Could not find another compute' in str(error.value)


def test_lost_claim_tries_another_random_host(cloud, driver, config):
    config.config(host_state_refresh_interval=3600, group='scheduler')
    cloud.add_node('a', memory_mb=1024, ram_allocation_ratio=1.0)
    cloud.add_node('b', memory_mb=1024, ram_allocation_ratio=1.0)
    driver.start()
    cloud.take('a', (1, 1024, 0))
    for _ in range(50):
        [uuid] = fakes.uuids(1)
        driver.select_destinations(None, fakes.spec(memory_mb=10), [uuid])
        assert cloud.allocations(uuid) == {'b': (1, 10, 0)}
        if driver.stats['claim_retries']:
            break
    # Random order tried 'a' once, lost, and then knew it was full.
    assert driver.stats['claim_retries'] == 1
    for _ in range(10):
        driver.select_destinations(None, fakes.spec(memory_mb=10),
                                   fakes.uuids(1))
    assert driver.stats['claim_retries'] == 1


def test_full_cloud_releases_and_refuses(cloud, driver):
    cloud.add_node('a', memory_mb=1024, ram_allocation_ratio=1.0)
    uuids = fakes.uuids(2)
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(
            None, fakes.spec(memory_mb=1000, num_instances=2), uuids)
    assert 'None of the 1 compute host(s)' in str(error.value)
    assert cloud.allocations(uuids[0]) == {}
    assert cloud.node_row('a').memory_mb_used == 0


def test_hosts_up_reads_the_services(cloud, driver):
    cloud.add_node('b')
    cloud.add_node('a')
    cloud.add_node('gone')
    cloud.set_last_seen('gone', 3600)
    assert driver.hosts_up(None) == ['a', 'b']
