"""The API database's migrations build exactly its models' schema, on
every backend, beside (never inside) a cell database's."""

from alembic import autogenerate
from alembic import command
from alembic import migration as alembic_migration
from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.db import aggregates
from scheduler.db import api as db_api
from scheduler.db import api_models
from scheduler.db import mappings
from scheduler.db import migration
from scheduler.db import models
from scheduler import exception
from tests.fixtures import databases

API_VERSION_TABLE = migration.VERSION_TABLES['api']


def _schema_differences(metadata):
    with db_api.api_engine().connect() as connection:
        context = alembic_migration.MigrationContext.configure(
            connection, opts={'compare_type': True,
                              'compare_server_default': True,
                              'version_table': API_VERSION_TABLE})
        return autogenerate.compare_metadata(context, metadata)


def _api_tables():
    return set(sa.inspect(db_api.api_engine()).get_table_names())


def test_api_sync_reaches_head_with_its_own_tables(any_api_database,
                                                   database):
    assert migration.db_version('api') == migration.head_version('api')
    assert _api_tables() == (set(api_models.ApiBase.metadata.tables)
                             | {API_VERSION_TABLE})
    # The cell database is untouched, and keeps its own revision.
    assert migration.db_version() == migration.head_version()
    assert 'cell_mappings' not in set(
        sa.inspect(db_api.get_engine()).get_table_names())


def test_migrated_api_schema_matches_models(any_api_database):
    assert _schema_differences(api_models.ApiBase.metadata) == []


def test_api_schema_comparison_notices_model_drift(any_api_database):
    drifted = sa.MetaData(naming_convention=models.NAMING_CONVENTION)
    for table in api_models.ApiBase.metadata.sorted_tables:
        table.to_metadata(drifted)
    drifted.tables['host_mappings'].append_column(
        sa.Column('az', sa.String(255), nullable=True))

    assert [diff[0] for diff in _schema_differences(drifted)] == [
        'add_column']


def test_api_sync_is_idempotent_and_keeps_rows(any_api_database):
    with db_api.api_writer() as session:
        mappings.create_cell(session, 'c' * 36, 'cell1', 'rabbit://h/',
                             'sqlite://')

    migration.db_sync(database='api')

    with db_api.api_reader() as session:
        assert [row.name for row in mappings.list_cells(session)] == [
            'cell1']


def test_host_and_instance_mappings_need_a_real_cell(any_api_database):
    with pytest.raises(db_exc.DBReferenceError):
        with db_api.api_writer() as session:
            mappings.create_host_mapping(session, 'h1', 12345)
    with db_api.api_writer() as session:
        cell_id = mappings.create_cell(session, 'c' * 36, 'cell1', None,
                                       None)
        mappings.create_host_mapping(session, 'h1', cell_id)
    with pytest.raises(db_exc.DBDuplicateEntry):
        with db_api.api_writer() as session:
            mappings.create_host_mapping(session, 'h1', cell_id)


def test_both_trees_can_share_one_database(database, config):
    # An operator who points [api_database] at the cell database gets
    # both schemas side by side, each with its own revision.
    config.config(connection=database, group='api_database')
    db_api.dispose_engine()
    migration.db_sync(database='api')
    assert migration.db_version('api') == migration.head_version('api')
    assert migration.db_version() == migration.head_version()
    migration.check_schema()
    migration.check_schema(database='api')
    # The aggregate and server-group tables are the cell schema's own.
    assert _shared_differences() == []
    with db_api.api_writer() as session:
        aggregates.create(session, 'rack1')
    with db_api.reader() as session:
        assert [agg.name for agg in aggregates.get_all(session)] == ['rack1']


GROUP_AND_AGGREGATE_TABLES = {
    'aggregates', 'aggregate_hosts', 'aggregate_metadata',
    'instance_groups', 'instance_group_members'}


def _table_shapes(engine, tables):
    """``{table: sorted (column, type name, nullable)}``."""
    inspector = sa.inspect(engine)
    return {table: sorted((column['name'], type(column['type']).__name__,
                           column['nullable'])
                          for column in inspector.get_columns(table))
            for table in tables}


def test_aggregates_and_groups_have_the_cell_schemas_columns(
        any_api_database):
    assert GROUP_AND_AGGREGATE_TABLES <= _api_tables()
    backend = databases.backend_of(any_api_database)
    with databases.cell_database(backend) as cell_url, \
            db_api.target_cell(cell_url):
        cell_shapes = _table_shapes(db_api.get_engine(),
                                    GROUP_AND_AGGREGATE_TABLES)
    assert _table_shapes(db_api.api_engine(),
                         GROUP_AND_AGGREGATE_TABLES) == cell_shapes


def _shared_differences():
    """The differences between a database holding both schemas and
    both trees' models (the cell tree's version table aside)."""
    return [diff for diff in _schema_differences(_both_schemas())
            if not (diff[0] == 'remove_table'
                    and diff[1].name == migration.VERSION_TABLES['main'])]


def _both_schemas():
    """One MetaData with the cell schema's tables and the API's own."""
    both = sa.MetaData(naming_convention=models.NAMING_CONVENTION)
    for table in models.Base.metadata.sorted_tables:
        table.to_metadata(both)
    for table in api_models.ApiBase.metadata.sorted_tables:
        if table.name not in both.tables:
            table.to_metadata(both)
    return both


def test_the_aggregate_revision_goes_back_and_up_again(any_api_database):
    command.downgrade(migration.get_alembic_config('api'), 'c3e5a7b9d1f2')
    assert not GROUP_AND_AGGREGATE_TABLES & _api_tables()
    assert 'build_requests' in _api_tables()
    migration.db_sync(database='api')
    assert _schema_differences(api_models.ApiBase.metadata) == []


def test_both_trees_can_share_one_database_api_first(config, tmp_path):
    """The documented order of a cells install (``api_db sync``, then
    ``db sync``) on one database: the cell schema keeps the aggregate and
    server-group tables the API schema made, and both are at head."""
    url = 'sqlite:///%s' % (tmp_path / 'both.sqlite')
    config.config(connection=url, group='database')
    config.config(connection=url, group='api_database')
    db_api.dispose_engine()
    try:
        migration.db_sync(database='api')
        migration.db_sync()
        migration.check_schema()
        migration.check_schema(database='api')
        assert _shared_differences() == []
        # Going back on the API tree leaves the cell schema's tables.
        command.downgrade(migration.get_alembic_config('api'), 'base')
        assert GROUP_AND_AGGREGATE_TABLES <= set(
            sa.inspect(db_api.get_engine()).get_table_names())
        migration.check_schema()
    finally:
        db_api.dispose_engine()


def test_check_schema_names_the_api_database(config, tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'api.sqlite')
    config.config(connection=url, group='api_database')
    db_api.dispose_engine()
    with pytest.raises(exception.ApiDatabaseNotSynced) as raised:
        migration.check_schema(database='api')
    assert 'api_db sync' in str(raised.value)
    assert str(tmp_path) in str(raised.value)


def test_api_downgrade_to_base_and_up_again(api_database):
    command.downgrade(migration.get_alembic_config('api'), 'base')
    assert migration.db_version('api') is None
    assert _api_tables() <= {API_VERSION_TABLE}
    migration.db_sync(database='api')
    assert _schema_differences(api_models.ApiBase.metadata) == []


def test_unknown_database_name_is_refused():
    with pytest.raises(ValueError, match='unknown database'):
        migration.head_version('cell9')


def test_a_daemon_refuses_an_api_database_without_schema(database, config,
                                                         tmp_path):
    from scheduler.cmd import common

    common.check_database()       # one cell: [database] only
    config.config(connection='sqlite:///%s' % (tmp_path / 'api.sqlite'),
                  group='api_database')
    db_api.dispose_engine()
    with pytest.raises(exception.ApiDatabaseNotSynced):
        common.check_database()
    migration.db_sync(database='api')
    common.check_database()
