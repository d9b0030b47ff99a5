"""target_cell(): sessions go to the targeted cell database, per thread."""

import threading

from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler.db import services
from tests.fixtures import databases


def _count_services():
    with db_api.reader() as session:
        return len(services.list_services(session))


def _add_service(host):
    with db_api.writer() as session:
        services.report_alive(session, host, 'gantt-compute', 'compute')


def test_sessions_follow_the_target_and_stay_in_their_thread(database):
    other = databases.create_database('sqlite')
    try:
        with db_api.target_cell(other):
            migration.db_sync()
            assert migration.db_version() == migration.head_version()
            _add_service('in-other')
            _add_service('in-other-2')
            seen_in_thread = []
            thread = threading.Thread(
                target=lambda: seen_in_thread.append(_count_services()))
            thread.start()
            thread.join()
            assert db_api.targeted_connection() == other
            assert _count_services() == 2
        _add_service('in-default')
        assert _count_services() == 1
        # The thread, started inside the block, read the default
        # database (empty then), not the target.
        assert seen_in_thread == [0]
        with db_api.target_cell(other):
            assert _count_services() == 2
        # [database] connection's own URL is the default cell.
        with db_api.target_cell(database):
            assert db_api.get_engine() is db_api.get_engine()
            assert _count_services() == 1
    finally:
        db_api.dispose_engine()
        databases.drop_database(other)
