"""Fixtures of the scheduler tests: a cloud in SQL, and drivers that stop.

``cloud``
    A :class:`tests.unit.scheduler.fakes.Cloud` over the ``database``
    fixture.
``make_driver``
    ``make_driver(cls, **kwargs)`` builds a driver and stops its host
    cache thread after the test, so that no thread outlives its database.
``make_host_manager``
    The same for a bare HostManager.
"""

import pytest

from scheduler import host_cache
from tests.unit.scheduler import fakes


@pytest.fixture
def cloud(database):
    return fakes.Cloud()


@pytest.fixture
def make_driver():
    drivers = []

    def build(cls, **kwargs):
        driver = cls(**kwargs)
        drivers.append(driver)
        return driver
    yield build
    for driver in drivers:
        driver.stop()


@pytest.fixture
def make_host_manager():
    managers = []

    def build(**kwargs):
        manager = host_cache.HostManager(**kwargs)
        managers.append(manager)
        return manager
    yield build
    for manager in managers:
        manager.stop()
