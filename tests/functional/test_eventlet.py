"""The boot scenario with every daemon under eventlet.

``GANTT_USE_EVENTLET=1`` in the daemons' environment makes them monkey
patch and select oslo.service's eventlet backend before anything else is
imported; the same boot must give the same result as on native threads.
"""

import pytest

from tests.functional import boot_scenario

pytestmark = [pytest.mark.functional, pytest.mark.eventlet]


@pytest.fixture(scope='module')
def booted(tmp_path_factory):
    cluster = boot_scenario.start(tmp_path_factory.mktemp('eventlet'),
                                  'postgresql', eventlet=True)
    yield cluster
    cluster.__exit__(None, None, None)


def test_boot_fills_hosts_exactly(booted):
    boot_scenario.run(booted)


def test_daemons_run_on_eventlet(booted):
    boot_scenario.assert_backend_logged(booted, 'eventlet')
    for name, log in booted.logs().items():
        assert 'oslo_service.backend._threading' not in log, name
