"""Fixtures every test may use: clean config, and real databases.

``config``
    oslo.config fixture; overrides are undone after the test.
``database``
    URL of a fresh SQLite file whose schema was built by running the
    migrations; ``[database] connection`` points at it.
``any_database``
    The same on each backend in turn: parametrized with the ids
    ``sqlite``, ``postgresql`` and ``mariadb``, each a fresh, migrated,
    uniquely named database that is dropped after the test.
``any_empty_database``
    Like ``any_database`` but without a schema (for migration tests).
``api_database``
    URL of a fresh SQLite API database (its migrations run);
    ``[api_database] connection`` points at it: cells v2 mode.
``any_api_database``
    The same on each backend in turn.

PostgreSQL and MariaDB are never skipped: when a server is down, the test
errors with the address and the command that starts it. Functional tests can
make databases outside fixtures with ``tests.fixtures.databases``.
"""

import contextlib

from futurist import _thread as futurist_thread
import pytest
from oslo_config import fixture as config_fixture

from scheduler import conf
from scheduler import objects
from tests.fixtures import databases

objects.register_all()

# oslo.messaging's RPC server stops its futurist thread pool with
# shutdown(wait=True), whose idle workers notice only when their queue
# wait of MAX_IDLE_FOR (1 s) ends: every in-process service took about a
# second to stop, two seconds per test of the in-process clusters. The
# tests' servers (in this process only; daemons are not affected) poll
# their queue more often instead.
futurist_thread.ThreadWorker.MAX_IDLE_FOR = 0.05


@pytest.fixture
def config():
    """oslo.config fixture: ``config.config(name=value, group=...)``;
    every override is undone after the test."""
    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    yield fixture
    fixture.cleanUp()


def _open(stack, database_context):
    """Enter ``database_context``; a server that is down fails the test."""
    try:
        return stack.enter_context(database_context)
    except databases.ServerDown as error:
        message = str(error)
    pytest.fail(message, pytrace=False)


@pytest.fixture
def database(config):
    """A fresh SQLite database with Gantt's schema; yields its URL."""
    with contextlib.ExitStack() as stack:
        yield _open(stack, databases.migrated_database('sqlite', config))


@pytest.fixture(params=databases.BACKENDS)
def any_database(request, config):
    """A fresh migrated database on each backend in turn; yields its URL."""
    with contextlib.ExitStack() as stack:
        yield _open(stack, databases.migrated_database(request.param,
                                                       config))


@pytest.fixture(params=databases.BACKENDS)
def any_empty_database(request, config):
    """A fresh database without schema on each backend; yields its URL."""
    with contextlib.ExitStack() as stack:
        yield _open(stack, databases.empty_database(request.param, config))


@pytest.fixture
def postgresql_database(config):
    """A fresh migrated PostgreSQL database; yields its URL."""
    with contextlib.ExitStack() as stack:
        yield _open(stack, databases.migrated_database('postgresql', config))


@pytest.fixture
def mariadb_database(config):
    """A fresh migrated MariaDB database; yields its URL."""
    with contextlib.ExitStack() as stack:
        yield _open(stack, databases.migrated_database('mariadb', config))


@pytest.fixture(params=('postgresql', 'mariadb'))
def server_database(request, config):
    """A fresh migrated database on each database server in turn
    (PostgreSQL, MariaDB: the drivers whose claims take one round trip
    on a kept connection); yields its URL."""
    with contextlib.ExitStack() as stack:
        yield _open(stack, databases.migrated_database(request.param,
                                                       config))


@pytest.fixture
def api_database(config):
    """A fresh SQLite API database with its schema; yields its URL."""
    with contextlib.ExitStack() as stack:
        yield _open(stack, databases.migrated_api_database('sqlite', config))


@pytest.fixture(params=databases.BACKENDS)
def any_api_database(request, config):
    """A fresh migrated API database on each backend in turn."""
    with contextlib.ExitStack() as stack:
        yield _open(stack, databases.migrated_api_database(request.param,
                                                           config))
