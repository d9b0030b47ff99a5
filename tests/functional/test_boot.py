"""Boot servers end to end on PostgreSQL and MariaDB.

A real conductor, three real computes of unlike sizes and a scheduler with
two workers, driven by ``gantt-manage``; see ``boot_scenario`` for the
hosts and the steps. Native threads (the default concurrency mode).
"""

import pytest

from tests.functional import boot_scenario

pytestmark = pytest.mark.functional


# PostgreSQL and MariaDB: the daemons run on SQLite in test_notifications
# and the demo's tests, and the claims race on all three in tests/unit/db.
@pytest.fixture(scope='module', params=('postgresql', 'mariadb'))
def booted(request, tmp_path_factory):
    cluster = boot_scenario.start(
        tmp_path_factory.mktemp('boot-%s' % request.param), request.param)
    yield cluster
    cluster.__exit__(None, None, None)


def test_boot_fills_hosts_exactly(booted):
    boot_scenario.run(booted)


def test_daemons_run_on_threads(booted):
    # The threading launcher logs its start method when it starts.
    for name, log in booted.logs().items():
        assert 'oslo_service.backend._threading' in log, name
    boot_scenario.assert_no_log_from(booted, 'oslo_service.backend._eventlet')


def test_backend_choice_is_logged(booted):
    boot_scenario.assert_backend_logged(booted, 'threading')


def test_scheduler_workers_take_few_rpc_threads_others_keep_64(booted):
    # gantt-scheduler's own default of executor_thread_pool_size; the
    # conductor keeps oslo.messaging's.
    logs = booted.logs()
    scheduler = [log for name, log in logs.items() if 'scheduler' in name]
    conductor = [log for name, log in logs.items() if 'conductor' in name]
    assert scheduler and conductor
    assert all('serving topic scheduler with 2 worker(s), 4 RPC thread(s) '
               'each' in log for log in scheduler)
    assert all('64 RPC thread(s) each' in log for log in conductor)
