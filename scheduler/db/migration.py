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

MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              'migrations')

# Alembic keeps the running migration context in module globals: two
# threads of one process must not migrate at the same time.
_sync_lock = threading.Lock()


def get_alembic_config():
    """An alembic ``Config`` for Gantt's migrations, built without a file.

    ``env.py`` takes the database from ``[database] connection``, unless
    ``config.attributes['connection']`` holds a connection to use instead.
    """
    alembic_cfg = alembic_config.Config()
    # The value goes through ConfigParser interpolation: escape '%'.
    alembic_cfg.set_main_option('script_location',
                                MIGRATIONS_DIR.replace('%', '%%'))
    # How to split 'version_locations' if a caller adds some (os.pathsep).
    alembic_cfg.set_main_option('path_separator', 'os')
    return alembic_cfg


def head_version():
    """The newest revision: the schema this code expects."""
    scripts = alembic_script.ScriptDirectory.from_config(get_alembic_config())
    return scripts.get_current_head()


def db_version():
    """The revision the database is at, or None if it has no schema yet."""
    with db_api.get_engine().connect() as connection:
        context = alembic_migration.MigrationContext.configure(connection)
        return context.get_current_revision()


def db_sync(revision='head'):
    """Upgrade the database to ``revision`` (default: the newest).

    Running it on a database already there changes nothing. Going back to
    an older revision is not supported: restore a backup instead.
    """
    url = config.redact_database_url(db_api.targeted_connection())
    with _sync_lock:
        LOG.info('Upgrading the database at %s to %s', url, revision)
        command.upgrade(get_alembic_config(), revision)
    LOG.info('The database at %s is at revision %s', url, db_version())


def check_schema():
    """Raise unless the database is reachable and at the newest revision.

    :raises exception.DatabaseUnavailable: cannot connect or query.
    :raises exception.DatabaseNotSynced: no schema or an older one.
    """
    db_api.check_connection()
    current = db_version()
    expected = head_version()
    if current != expected:
        raise exception.DatabaseNotSynced(
            url=config.redact_database_url(CONF.database.connection),
            current=current, expected=expected)
