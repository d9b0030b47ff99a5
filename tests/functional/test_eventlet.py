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


def test_backend_choice_is_logged(booted):
    boot_scenario.assert_backend_logged(booted, 'eventlet')


def test_daemons_run_on_eventlet(booted):
    """Last test of the module: the eventlet process launcher (the
    scheduler's two workers) logs only when it stops, so it stops the
    daemons."""
    booted.stop_all()
    scheduler_log = booted.logs()['scheduler']
    assert 'oslo_service.backend._eventlet' in scheduler_log
    boot_scenario.assert_no_log_from(booted,
                                     'oslo_service.backend._threading')
