"""The API database's migrations build exactly its models' schema, on
every backend, beside (never inside) a cell database's."""

from alembic import autogenerate
from alembic import command
from alembic import migration as alembic_migration
from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import api_models
from scheduler.db import mappings
from scheduler.db import migration
from scheduler.db import models
from scheduler import exception

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
