"""The migrations build exactly the models' schema, on every backend."""

import datetime
import fnmatch
import os
import textwrap
import tomllib
import uuid

from alembic import autogenerate
from alembic import command
from alembic import migration as alembic_migration
from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler import exception
from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler.db import models
from tests.fixtures import databases

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _schema_differences(metadata):
    with db_api.get_engine().connect() as connection:
        context = alembic_migration.MigrationContext.configure(
            connection, opts={'compare_type': True,
                              'compare_server_default': True})
        return autogenerate.compare_metadata(context, metadata)


def _table_names():
    return set(sa.inspect(db_api.get_engine()).get_table_names())


def test_sync_from_empty_reaches_head(any_empty_database):
    assert migration.db_version() is None
    assert _table_names() == set()

    migration.db_sync()

    assert migration.db_version() == migration.head_version()
    assert _table_names() == (set(models.Base.metadata.tables) |
                              {'alembic_version'})


def test_sync_is_idempotent_and_keeps_rows(any_empty_database):
    migration.db_sync()
    with db_api.writer() as session:
        session.add(models.Service(host='h1', binary='gantt-compute',
                                   topic='compute'))

    migration.db_sync()

    assert migration.db_version() == migration.head_version()
    with db_api.reader() as session:
        assert session.scalars(sa.select(models.Service.host)).all() == [
            'h1']


def test_migrated_schema_matches_models(any_database):
    assert _schema_differences(models.Base.metadata) == []


def test_schema_comparison_notices_model_drift(any_database):
    # The comparison above is only worth something if it can fail: a model
    # that gained a column and lost an index without a migration.
    drifted = sa.MetaData(naming_convention=models.NAMING_CONVENTION)
    for table in models.Base.metadata.sorted_tables:
        table.to_metadata(drifted)
    nodes = drifted.tables['compute_nodes']
    nodes.append_column(sa.Column('pci_stats', sa.Text(), nullable=True))
    nodes.indexes.remove(next(index for index in nodes.indexes
                              if index.name == 'ix_compute_nodes_host'))

    kinds = sorted(diff[0] for diff in _schema_differences(drifted))

    assert kinds == ['add_column', 'remove_index']


def test_timestamps_keep_microseconds(any_database):
    stamp = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901)
    with db_api.writer() as session:
        session.add(models.Service(host='h1', binary='gantt-compute',
                                   topic='compute', created_at=stamp,
                                   last_seen_up=stamp))
    with db_api.reader() as session:
        row = session.execute(sa.select(models.Service.created_at,
                                        models.Service.last_seen_up)).one()
    assert tuple(row) == (stamp, stamp)

    # Every timestamp column, not only the one written above; alembic's
    # comparison does not look at the precision of MariaDB's DATETIME.
    if databases.backend_of(any_database) == 'mariadb':
        inspector = sa.inspect(db_api.get_engine())
        for table in models.Base.metadata.sorted_tables:
            reflected = {column['name']: column['type']
                         for column in inspector.get_columns(table.name)}
            for column in table.columns:
                if isinstance(column.type, sa.DateTime):
                    assert reflected[column.name].fsp == 6, (
                        '%s.%s' % (table.name, column.name))


def test_deleting_a_parent_cascades(any_database):
    with db_api.writer() as session:
        aggregate = models.Aggregate(uuid=str(uuid.uuid4()), name='agg')
        node = models.ComputeNode(uuid=str(uuid.uuid4()), host='h1',
                                  hypervisor_hostname='n1')
        group = models.InstanceGroup(uuid=str(uuid.uuid4()),
                                     policy='affinity')
        session.add_all([aggregate, node, group])
        session.flush()
        session.add_all([
            models.AggregateHost(aggregate_id=aggregate.id, host='h1'),
            models.AggregateMetadata(aggregate_id=aggregate.id,
                                     key='k', value='v'),
            models.Allocation(consumer_uuid=str(uuid.uuid4()),
                              compute_node_id=node.id),
            models.InstanceGroupMember(group_id=group.id,
                                       instance_uuid=str(uuid.uuid4())),
        ])

    with db_api.writer() as session:
        for parent in (models.Aggregate, models.ComputeNode,
                       models.InstanceGroup):
            session.execute(sa.delete(parent))

    with db_api.reader() as session:
        for child in (models.AggregateHost, models.AggregateMetadata,
                      models.Allocation, models.InstanceGroupMember):
            assert session.scalar(
                sa.select(sa.func.count()).select_from(child)) == 0


def test_foreign_keys_are_enforced(any_database):
    with pytest.raises(db_exc.DBReferenceError):
        with db_api.writer() as session:
            session.add(models.Allocation(consumer_uuid=str(uuid.uuid4()),
                                          compute_node_id=12345))


def _consumer_lookup_plan(connection, consumer):
    """The server's plan (as text) for reading a consumer's allocations,
    with its scan of the whole table ruled out where it can be."""
    query = 'SELECT id FROM allocations WHERE consumer_uuid = :consumer'
    name = connection.dialect.name
    if name == 'postgresql':
        connection.execute(sa.text('SET LOCAL enable_seqscan = off'))
        explain = 'EXPLAIN '
    elif name == 'sqlite':
        explain = 'EXPLAIN QUERY PLAN '
    else:
        explain = 'EXPLAIN '
    rows = connection.execute(sa.text(explain + query),
                              {'consumer': consumer}).all()
    return ' '.join(str(value) for row in rows for value in row)


def test_allocations_are_read_by_consumer_through_the_unique_index(
        any_database):
    # One index leads with consumer_uuid: the unique constraint's. A second
    # on consumer_uuid alone would cost every claim one more index write.
    inspector = sa.inspect(db_api.get_engine())
    leading = [index['name'] for index in inspector.get_indexes('allocations')
               if index['column_names'][:1] == ['consumer_uuid']]
    uniques = [constraint['column_names'] for constraint
               in inspector.get_unique_constraints('allocations')]
    assert ['consumer_uuid', 'compute_node_id'] in uniques
    # MariaDB and SQLite list a unique constraint's index among the
    # indexes too; PostgreSQL does not.
    assert all(name is None or name.startswith(('uq_', 'sqlite_autoindex'))
               for name in leading), leading
    consumers = [str(uuid.uuid4()) for _ in range(20)]
    with db_api.writer() as session:
        node = models.ComputeNode(uuid=str(uuid.uuid4()), host='h1',
                                  hypervisor_hostname='n1')
        session.add(node)
        session.flush()
        session.add_all([models.Allocation(consumer_uuid=consumer,
                                           compute_node_id=node.id)
                         for consumer in consumers])

    with db_api.get_engine().begin() as connection:
        plan = _consumer_lookup_plan(connection, consumers[3])

    if connection.dialect.name == 'sqlite':
        assert 'sqlite_autoindex_allocations' in plan, plan
    else:
        assert 'uq_allocations_consumer_uuid_compute_node_id' in plan, plan


def test_downgrade_to_base_and_up_again(any_database):
    command.downgrade(migration.get_alembic_config(), 'base')
    assert migration.db_version() is None
    assert _table_names() <= {'alembic_version'}

    migration.db_sync()

    assert migration.db_version() == migration.head_version()
    assert _schema_differences(models.Base.metadata) == []


_BATCH_MIGRATION = textwrap.dedent('''\
    from alembic import op
    import sqlalchemy as sa

    revision = 'b0000000test'
    down_revision = %(head)r
    branch_labels = None
    depends_on = None


    def upgrade():
        # Changing a column's type makes SQLite rebuild the table.
        with op.batch_alter_table('compute_nodes') as batch:
            batch.alter_column('host_ip', existing_type=sa.String(39),
                               type_=sa.String(45))
    ''')


def test_batch_migration_keeps_referencing_rows(any_database, tmp_path):
    # A later migration that rebuilds compute_nodes (as batch operations do
    # on SQLite) must not cascade-delete the allocations pointing at it.
    (tmp_path / 'b0000000test_widen_host_ip.py').write_text(
        _BATCH_MIGRATION % {'head': migration.head_version()})
    alembic_cfg = migration.get_alembic_config()
    alembic_cfg.set_main_option(
        'version_locations',
        os.pathsep.join([os.path.join(migration.MIGRATIONS_DIR, 'versions'),
                         str(tmp_path)]))
    with db_api.writer() as session:
        node = models.ComputeNode(uuid=str(uuid.uuid4()), host='h1',
                                  hypervisor_hostname='n1')
        session.add(node)
        session.flush()
        session.add(models.Allocation(consumer_uuid=str(uuid.uuid4()),
                                      compute_node_id=node.id, vcpus=1))

    command.upgrade(alembic_cfg, 'head')

    assert migration.db_version() == 'b0000000test'
    with db_api.reader() as session:
        assert session.scalar(sa.select(models.Allocation.vcpus)) == 1
    # ...and foreign keys are enforced again afterwards.
    test_foreign_keys_are_enforced(any_database)


def test_check_schema_refuses_empty_database(any_empty_database):
    with pytest.raises(exception.DatabaseNotSynced) as raised:
        migration.check_schema()

    assert raised.value.kwargs['current'] is None
    assert raised.value.kwargs['expected'] == migration.head_version()
    assert 'gantt-manage db sync' in str(raised.value)
    migration.db_sync()
    migration.check_schema()


def test_check_schema_refuses_unknown_revision(any_database):
    migration.check_schema()
    with db_api.writer() as session:
        session.execute(sa.text("UPDATE alembic_version "
                                "SET version_num = '0123456789ab'"))

    with pytest.raises(exception.DatabaseNotSynced) as raised:
        migration.check_schema()

    assert raised.value.kwargs['current'] == '0123456789ab'


def test_not_synced_message_hides_password(config):
    # PostgreSQL here trusts local connections, so any password works.
    url = databases.create_database('postgresql')
    try:
        with_password = sa.engine.make_url(url).set(password='s3cret')
        config.config(connection=with_password.render_as_string(False),
                      group='database')
        db_api.dispose_engine()
        with pytest.raises(exception.DatabaseNotSynced) as raised:
            migration.check_schema()
    finally:
        db_api.dispose_engine()
        databases.drop_database(url)

    assert 's3cret' not in str(raised.value)
    assert ':***@127.0.0.1' in str(raised.value)


@pytest.mark.parametrize('url', [
    'postgresql+psycopg2://gantt:s3cret@127.0.0.1:1/gantt',
    'mysql+pymysql://gantt:s3cret@127.0.0.1:1/gantt',
])
def test_check_schema_on_unreachable_database(config, url):
    config.config(connection=url, max_retries=1, group='database')
    db_api.dispose_engine()
    try:
        with pytest.raises(exception.DatabaseUnavailable) as raised:
            migration.check_schema()
    finally:
        db_api.dispose_engine()

    assert 's3cret' not in str(raised.value)
    assert 'gantt:***@127.0.0.1:1/gantt' in str(raised.value)


def test_migration_files_are_package_data():
    with open(os.path.join(REPO, 'pyproject.toml'), 'rb') as project:
        package_data = tomllib.load(project)['tool']['setuptools'][
            'package-data']
    patterns = package_data['scheduler.db']
    db_dir = os.path.dirname(migration.MIGRATIONS_DIR)
    files = []
    for directory, subdirs, names in os.walk(migration.MIGRATIONS_DIR):
        subdirs[:] = [d for d in subdirs if d != '__pycache__']
        files.extend(os.path.relpath(os.path.join(directory, name), db_dir)
                     for name in names if not name.endswith('.pyc'))

    assert 'migrations/env.py' in files
    assert [name for name in files
            if not any(fnmatch.fnmatch(name, p) for p in patterns)] == []
