"""Alembic environment of Gantt's schema migrations.

Alembic runs this module for every command. Gantt never needs an
``alembic.ini``: :mod:`scheduler.db.migration` builds the alembic ``Config``
in code and the database comes from ``[database] connection`` through
:func:`scheduler.db.api.get_engine`. A caller that already holds a
connection may hand it over as ``config.attributes['connection']``; it is
then used as it is (the SQLite precaution below is the caller's to take).

On SQLite, foreign key enforcement is switched off while migrations run:
``op.batch_alter_table`` rebuilds a table by copying it and dropping the
original, and with enforcement on that DROP would cascade-delete the rows
that reference it (allocations of every compute node, for one). It is
switched back on afterwards, and a migration that left a dangling reference
is reported as an error.

Offline mode (``alembic upgrade --sql``) renders the SQL for the dialect of
the configured URL instead of running it.
"""

from alembic import context

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import models

CONF = conf.CONF

_OPTIONS = {
    'target_metadata': models.Base.metadata,
    # Autogenerate writes batch operations, which work on every backend.
    'render_as_batch': True,
    'compare_type': True,
    # One transaction per migration: a failed migration leaves the
    # database at the last one that worked (where DDL is transactional).
    'transaction_per_migration': True,
}


def _run(connection):
    context.configure(connection=connection, **_OPTIONS)
    with context.begin_transaction():
        context.run_migrations()


def _check_sqlite_foreign_keys(connection):
    broken = connection.exec_driver_sql('PRAGMA foreign_key_check').all()
    if broken:
        raise RuntimeError('Migration left rows with dangling foreign keys '
                           '(table, rowid, parent, fk index): %s' % broken)


def _run_on_sqlite(connection):
    # PRAGMA foreign_keys is ignored inside a transaction: it is sent on the
    # driver's connection, before and after the transactions alembic opens.
    driver_connection = connection.connection.driver_connection
    driver_connection.execute('PRAGMA foreign_keys=OFF')
    try:
        _run(connection)
        _check_sqlite_foreign_keys(connection)
    finally:
        connection.rollback()
        driver_connection.execute('PRAGMA foreign_keys=ON')


def run_migrations_online():
    connection = context.config.attributes.get('connection')
    if connection is not None:
        _run(connection)
        return
    with db_api.get_engine().connect() as connection:
        if connection.dialect.name == 'sqlite':
            _run_on_sqlite(connection)
        else:
            _run(connection)


def run_migrations_offline():
    url = (context.config.get_main_option('sqlalchemy.url') or
           CONF.database.connection)
    context.configure(url=url, literal_binds=True, **_OPTIONS)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
