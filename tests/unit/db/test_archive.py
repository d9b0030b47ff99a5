"""Archiving deleted instances (and their migrations) to the shadow
tables, and purging them, on every backend."""

import datetime
import uuid

import sqlalchemy as sa

from conductor.tasks import delete as delete_task
from scheduler.db import api as db_api
from scheduler.db import archive
from scheduler.db import claim_checks
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler.db import moves
from tests.unit.db import test_claims as helpers

_INSTANCE = models.Instance.__table__
_MIGRATION = models.Migration.__table__
_ALLOC = models.Allocation.__table__
SHADOW_INSTANCES = models.shadow_instances
SHADOW_MIGRATIONS = models.shadow_migrations


def make_instance(node=None, resources=(1, 512, 1), migrations=0):
    """A new instance (claimed on ``node`` if given) with ``migrations``
    ended migrations; its uuid."""
    instance_uuid = str(uuid.uuid4())
    with db_api.writer() as session:
        db_instances.create(session, instance_uuid, flavor={'vcpus': 1},
                            request_spec=None)
        for _ in range(migrations):
            record = moves.create(session, instance_uuid, moves.RESIZE,
                                  source_host='h1', source_node='h1')
            moves.update(session, record.uuid, status=moves.CONFIRMED)
    if node is not None:
        assert helpers.claim(node, resources, instance_uuid)
    return instance_uuid


def delete(instance_uuid, deleted_at=None):
    """Delete as the conductor does (claims released, row soft-deleted),
    dated ``deleted_at`` if given."""
    assert delete_task._release_and_mark_deleted(instance_uuid) is not None
    if deleted_at is not None:
        with db_api.writer() as session:
            session.execute(sa.update(_INSTANCE)
                            .where(_INSTANCE.c.uuid == instance_uuid)
                            .values(deleted_at=deleted_at))


def rows(table, column='uuid'):
    with db_api.reader() as session:
        return sorted(session.execute(sa.select(table.c[column])).scalars())


def full_rows(table, where_column, values):
    with db_api.reader() as session:
        return sorted(tuple(row) for row in session.execute(
            sa.select(table).where(table.c[where_column].in_(values))))


def problems():
    with db_api.reader() as session:
        return (claim_checks.find_inconsistent_nodes(session),
                claim_checks.find_stray_allocations(session))


def archive_until_done(max_rows=1000, before=None):
    """Archive in batches until nothing moves; the batches' results."""
    batches = []
    while True:
        moved = archive.archive_deleted_rows(max_rows, before=before)
        if not moved:
            return batches
        batches.append(moved)


def test_every_soft_deleted_table_has_a_shadow_with_its_columns():
    assert [t.name for t in archive.soft_deleted_tables()] == ['instances']
    for table in archive.soft_deleted_tables() + [_MIGRATION]:
        shadow = archive.shadow_of(table)
        assert [(c.name, str(c.type), c.nullable) for c in shadow.c] == [
            (c.name, str(c.type), c.nullable) for c in table.c]
        assert [c.name for c in shadow.primary_key] == ['id']
        assert not shadow.indexes and not shadow.foreign_keys
        assert not [c for c in shadow.constraints
                    if isinstance(c, sa.UniqueConstraint)]


def test_archive_moves_deleted_instances_and_their_migrations_only(
        any_database):
    node = helpers.make_node(vcpus=16, memory_mb=16384)
    live = make_instance(node, migrations=1)
    gone = make_instance(node, migrations=2)
    plain = make_instance()
    delete(gone)
    delete(plain)
    # A deleted instance still holding a claim (one that slipped past the
    # delete) is a stray claim; it stays, with its instance.
    stray = make_instance()
    delete(stray)
    assert helpers.claim(node, (1, 512, 1), stray)
    # ...as does one whose migration holds a claim.
    stray_move = make_instance(migrations=1)
    delete(stray_move)
    with db_api.reader() as session:
        move_uuid = moves.latest(session, stray_move).uuid
    assert helpers.claim(node, (1, 512, 1), move_uuid)
    archived = sorted([gone, plain])
    instance_rows = full_rows(_INSTANCE, 'uuid', archived)
    migration_rows = full_rows(_MIGRATION, 'instance_uuid', archived)
    allocations = rows(_ALLOC, 'consumer_uuid')
    checked = problems()

    assert archive.archive_deleted_rows(1000) == {'instances': 2,
                                                  'migrations': 2}

    assert rows(_INSTANCE) == sorted([live, stray, stray_move])
    assert rows(SHADOW_INSTANCES) == archived
    assert full_rows(SHADOW_INSTANCES, 'uuid', archived) == instance_rows
    assert full_rows(SHADOW_MIGRATIONS, 'instance_uuid',
                     archived) == migration_rows
    assert sorted(set(rows(_MIGRATION, 'instance_uuid'))) == sorted(
        [live, stray_move])
    assert rows(_ALLOC, 'consumer_uuid') == allocations
    assert problems() == checked
    assert archive.archive_deleted_rows(1000) == {}


def test_max_rows_counts_an_instance_with_all_its_migrations(any_database):
    deleted = [make_instance(migrations=1) for _ in range(3)]
    for instance_uuid in deleted:
        delete(instance_uuid)

    # 2 rows, then 4 >= 3: the second instance moves whole.
    assert archive.archive_deleted_rows(3) == {'instances': 2,
                                               'migrations': 2}
    assert rows(SHADOW_INSTANCES) == sorted(deleted[:2])
    assert archive.archive_deleted_rows(1) == {'instances': 1,
                                               'migrations': 1}
    assert archive.archive_deleted_rows(1) == {}


def test_max_rows_of_instances_alone(any_database):
    deleted = [make_instance() for _ in range(5)]
    for instance_uuid in deleted:
        delete(instance_uuid)

    assert archive_until_done(max_rows=2) == [
        {'instances': 2}, {'instances': 2}, {'instances': 1}]
    assert rows(SHADOW_INSTANCES) == sorted(deleted)
    assert rows(_INSTANCE) == []


def test_before_keeps_the_instances_deleted_since(any_database):
    now = models.utcnow()
    old = make_instance(migrations=1)
    recent = make_instance(migrations=1)
    delete(old, deleted_at=now - datetime.timedelta(days=10))
    delete(recent, deleted_at=now - datetime.timedelta(hours=1))

    assert archive.archive_deleted_rows(
        1000, before=now - datetime.timedelta(days=1)) == {
            'instances': 1, 'migrations': 1}
    assert rows(SHADOW_INSTANCES) == [old]
    assert rows(_INSTANCE) == [recent]
    assert rows(_MIGRATION, 'instance_uuid') == [recent]


def test_an_archived_id_is_never_given_again(any_database):
    # SQLite would give the highest deleted rowid again without
    # AUTOINCREMENT; the next archive would then clash in the shadow.
    for _ in range(2):
        instance_uuid = make_instance(migrations=1)
        delete(instance_uuid)
        assert archive.archive_deleted_rows(10) == {'instances': 1,
                                                    'migrations': 1}
    assert len(set(rows(SHADOW_INSTANCES, 'id'))) == 2
    assert len(set(rows(SHADOW_MIGRATIONS, 'id'))) == 2


def test_purge_all_and_before(any_database):
    now = models.utcnow()
    old = make_instance(migrations=1)
    recent = make_instance()
    delete(old, deleted_at=now - datetime.timedelta(days=10))
    delete(recent, deleted_at=now - datetime.timedelta(hours=1))
    with db_api.writer() as session:
        session.execute(sa.update(_MIGRATION).values(
            updated_at=now - datetime.timedelta(days=20)))
    archive_until_done()

    assert archive.purge_shadow_tables(now - datetime.timedelta(days=1)) \
        == [('shadow_instances', 1, 'deleted_at'),
            ('shadow_migrations', 1, 'updated_at')]
    assert rows(SHADOW_INSTANCES) == [recent]
    assert archive.purge_shadow_tables(now - datetime.timedelta(days=1)) \
        == []
    assert archive.purge_shadow_tables() == [('shadow_instances', 1, None)]
    assert rows(SHADOW_INSTANCES) == [] and rows(SHADOW_MIGRATIONS) == []
    assert archive.purge_shadow_tables() == []


def test_a_deleted_instance_moves_once_its_stray_claim_is_released(
        any_database):
    node = helpers.make_node()
    stray = make_instance(node)
    # Marked deleted with its claim still held (as a reaper would find it).
    with db_api.writer() as session:
        db_instances.soft_delete(session, stray)
    live = make_instance(node)

    assert archive.archive_deleted_rows(1000) == {}
    assert rows(_INSTANCE) == sorted([stray, live])
    with db_api.writer() as session:
        claims.release_resources(session, stray)
    assert archive.archive_deleted_rows(1000) == {'instances': 1}
    assert rows(_INSTANCE) == [live]
    assert rows(_ALLOC, 'consumer_uuid') == [live]
