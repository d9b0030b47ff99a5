import pytest

from scheduler.drivers import caching_scheduler
from tests.unit.scheduler import fakes


@pytest.fixture
def driver(cloud, make_driver, config):
    config.config(host_state_refresh_interval=0.05, group='scheduler')
    return make_driver(caching_scheduler.CachingScheduler)


def _host(driver, spec=None):
    return driver.select_destinations(None, spec or fakes.spec(),
                                      fakes.uuids(1))[0][0].service_host


def test_cache_only_changes_on_periodic_tasks(cloud, driver):
    cloud.add_node('old', memory_mb=4096)
    driver.start()
    cloud.add_node('new', memory_mb=65536)
    assert _host(driver) == 'old'
    assert driver.host_manager._thread is None
    driver.run_periodic_tasks(None)
    assert _host(driver) == 'new'


def test_first_request_loads_the_cache(cloud, driver):
    cloud.add_node('a')
    assert _host(driver) == 'a'


def test_claims_still_go_to_sql_and_into_the_cache(cloud, driver):
    cloud.add_node('a', memory_mb=2048, ram_allocation_ratio=1.0)
    cloud.add_node('b', memory_mb=1024, ram_allocation_ratio=1.0)
    [uuid] = fakes.uuids(1)
    driver.select_destinations(None, fakes.spec(memory_mb=1536), [uuid])
    assert cloud.allocations(uuid) == {'a': (1, 1536, 0)}
    # Without a periodic refresh the cache knows 'a' has 512 MB left.
    assert _host(driver, fakes.spec(memory_mb=768)) == 'b'
