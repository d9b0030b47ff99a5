"""Schema migrations: bring ``[database] connection`` to the code's schema.

The schema lives in alembic migrations under ``scheduler/db/migrations``
(shipped inside the package; no ``alembic.ini`` is needed). Operators run
them with ``gantt-manage db sync`` and read the revision with ``gantt-manage
db version``; services refuse to start on a database that is unreachable or
not at the newest revision::

    from scheduler.db import migration

    migration.db_sync()             # upgrade to 'head' (idempotent)
    migration.db_version()          # e.g. 'a4c31360552f', None when empty
    migration.head_version()        # the revision this code expects
    migration.check_schema()        # raises DatabaseUnavailable or
                                    # DatabaseNotSynced, naming the URL
                                    # with its password masked

A new migration starts from ``script.py.mako``; with ``[database]
connection`` pointing at a database at head, alembic can draft it from the
models::

    from alembic import command
    from scheduler.db import migration
    command.revision(migration.get_alembic_config(), 'add foo',
                     autogenerate=True)

Every migration after the first alters tables inside
``op.batch_alter_table``, so that it also runs on SQLite. The tests compare
the migrated schema with ``models.Base.metadata`` on every backend.

The API database (``[api_database] connection``, the cell mappings) has a
tree of its own, ``scheduler/db/api_migrations``, with its revision in
``alembic_version_api``; every function takes ``database='api'`` for it,
as Nova's do (``gantt-manage api_db sync``)::

    migration.db_sync(database='api')
    migration.check_schema(database='api')
    migration.check_api_schema()    # whichever holds aggregates and groups
"""

import os
import threading

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
from oslo_log import log as logging

from scheduler import conf
from scheduler import config
from scheduler import exception
from scheduler.db import api as db_api

CONF = conf.CONF
LOG = logging.getLogger(__name__)

_HERE = os.path.dirname(os.path.abspath(__file__))
MIGRATIONS_DIR = os.path.join(_HERE, 'migrations')
API_MIGRATIONS_DIR = os.path.join(_HERE, 'api_migrations')
# The table each tree records its revision in (see the env.py files).
VERSION_TABLES = {'main': 'alembic_version', 'api': 'alembic_version_api'}
DATABASES = tuple(VERSION_TABLES)


def _check_database(database):
    if database not in VERSION_TABLES:
        raise ValueError('unknown database %r, expected one of %s'
                         % (database, ', '.join(DATABASES)))


def _engine(database):
    return db_api.api_engine() if database == 'api' else \
        db_api.get_engine()


def _url(database):
    return db_api.api_connection() if database == 'api' else \
        db_api.targeted_connection()

# Alembic keeps the running migration context in module globals: two
# threads of one process must not migrate at the same time.
_sync_lock = threading.Lock()


def get_alembic_config(database='main'):
    """An alembic ``Config`` for Gantt's migrations, built without a file.

    ``env.py`` takes the database from ``[database] connection`` (the
    targeted cell; ``[api_database] connection`` for ``database='api'``),
    unless ``config.attributes['connection']`` holds a connection to use
    instead.
    """
    _check_database(database)
    directory = API_MIGRATIONS_DIR if database == 'api' else MIGRATIONS_DIR
    alembic_cfg = alembic_config.Config()
    # The value goes through ConfigParser interpolation: escape '%'.
    alembic_cfg.set_main_option('script_location',
                                directory.replace('%', '%%'))
    # How to split 'version_locations' if a caller adds some (os.pathsep).
    alembic_cfg.set_main_option('path_separator', 'os')
    return alembic_cfg


def head_version(database='main'):
    """The newest revision: the schema this code expects."""
    scripts = alembic_script.ScriptDirectory.from_config(
        get_alembic_config(database))
    return scripts.get_current_head()


def db_version(database='main'):
    """The revision the database is at, or None if it has no schema yet."""
    _check_database(database)
    with _engine(database).connect() as connection:
        context = alembic_migration.MigrationContext.configure(
            connection, opts={'version_table': VERSION_TABLES[database]})
        return context.get_current_revision()


def db_sync(revision='head', database='main'):
    """Upgrade the database to ``revision`` (default: the newest).

    Running it on a database already there changes nothing. Going back to
    an older revision is not supported: restore a backup instead.
    """
    alembic_cfg = get_alembic_config(database)
    url = config.redact_database_url(_url(database))
    with _sync_lock:
        LOG.info('Upgrading the database at %s to %s', url, revision)
        command.upgrade(alembic_cfg, revision)
    LOG.info('The database at %s is at revision %s', url,
             db_version(database))


def check_api_schema():
    """:func:`check_schema` of the database that holds the API's records
    (mappings, aggregates, server groups): ``[api_database]``'s, or
    ``[database]``'s in one cell."""
    if db_api.api_database_configured():
        check_schema(database='api')
    else:
        check_schema()


def check_schema(database='main'):
    """Raise unless the database is reachable and at the newest revision.

    :raises exception.DatabaseUnavailable: cannot connect or query.
    :raises exception.DatabaseNotSynced: no schema or an older one.
    """
    _check_database(database)
    if database == 'api':
        db_api.check_api_connection()
    else:
        db_api.check_connection()
    current = db_version(database)
    expected = head_version(database)
    if current != expected:
        url = config.redact_database_url(
            db_api.api_connection() if database == 'api'
            else CONF.database.connection)
        if database == 'api':
            raise exception.ApiDatabaseNotSynced(
                url=url, current=current, expected=expected)
        raise exception.DatabaseNotSynced(
            url=url, current=current, expected=expected)
