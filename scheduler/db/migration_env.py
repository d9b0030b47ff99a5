"""What both alembic environments (``migrations/env.py``, the cell
databases', and ``api_migrations/env.py``, the API database's) run.

Gantt never needs an ``alembic.ini``: :mod:`scheduler.db.migration`
builds the alembic ``Config`` in code, and the database comes from the
engine the environment names (:func:`scheduler.db.api.get_engine` for the
targeted cell, :func:`scheduler.db.api.api_engine` for the API database).
A caller that already holds a connection may hand it over as
``config.attributes['connection']``; it is then used as it is (the SQLite
precaution below is the caller's to take).

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


def _options(metadata, version_table):
    return {
        'target_metadata': metadata,
        'version_table': version_table,
        # Autogenerate writes batch operations, which work on every
        # backend.
        'render_as_batch': True,
        'compare_type': True,
        # One transaction per migration: a failed migration leaves the
        # database at the last one that worked (where DDL is
        # transactional).
        'transaction_per_migration': True,
    }


def _run(connection, options):
    context.configure(connection=connection, **options)
    with context.begin_transaction():
        context.run_migrations()


def _check_sqlite_foreign_keys(connection):
    broken = connection.exec_driver_sql('PRAGMA foreign_key_check').all()
    if broken:
        raise RuntimeError('Migration left rows with dangling foreign keys '
                           '(table, rowid, parent, fk index): %s' % broken)


def _run_on_sqlite(connection, options):
    # PRAGMA foreign_keys is ignored inside a transaction: it is sent on the
    # driver's connection, before and after the transactions alembic opens.
    driver_connection = connection.connection.driver_connection
    driver_connection.execute('PRAGMA foreign_keys=OFF')
    try:
        _run(connection, options)
        _check_sqlite_foreign_keys(connection)
    finally:
        connection.rollback()
        driver_connection.execute('PRAGMA foreign_keys=ON')


def run(metadata, engine, url, version_table='alembic_version'):
    """Run the migrations alembic asked for: on ``engine()``, or
    rendered for ``url()`` offline, recording the revision in
    ``version_table``."""
    options = _options(metadata, version_table)
    if context.is_offline_mode():
        offline_url = (context.config.get_main_option('sqlalchemy.url') or
                       url())
        context.configure(url=offline_url, literal_binds=True, **options)
        with context.begin_transaction():
            context.run_migrations()
        return
    connection = context.config.attributes.get('connection')
    if connection is not None:
        _run(connection, options)
        return
    with engine().connect() as connection:
        if connection.dialect.name == 'sqlite':
            _run_on_sqlite(connection, options)
        else:
            _run(connection, options)
