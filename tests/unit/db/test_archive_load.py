"""Archiving while instances are created, claimed and deleted, on
PostgreSQL: two archivers at once beside the traffic move every deleted
instance once, and nothing live."""

import collections
import threading
import time
import uuid

import sqlalchemy as sa

from conductor.tasks import delete as delete_task
from scheduler.db import api as db_api
from scheduler.db import archive
from scheduler.db import claim_checks
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import moves
from tests.unit.db import test_archive as helpers
from tests.unit.db import test_claims

INSTANCES = 150
# Every LIVE_EVERY-th instance stays; every MOVED_EVERY-th has a
# migration record.
LIVE_EVERY = 4
MOVED_EVERY = 3


class Traffic:
    """Creates, claims and deletes instances through the conductor's and
    schedulers' own database functions; records what it did."""

    def __init__(self, node):
        self.node = node
        self.live, self.deleted = [], []
        self.migrations = collections.Counter()

    def one(self, index):
        instance_uuid = str(uuid.uuid4())
        with db_api.writer() as session:
            db_instances.create(session, instance_uuid, flavor={'vcpus': 1},
                                request_spec=None)
        assert claims.claim_in_sql(self.node, instance_uuid,
                                   claims.Resources(1, 256, 1))
        if index % MOVED_EVERY == 0:
            with db_api.writer() as session:
                record = moves.create(session, instance_uuid, moves.RESIZE,
                                      source_host='h1', source_node='h1')
                moves.update(session, record.uuid, status=moves.CONFIRMED)
            self.migrations[instance_uuid] += 1
        if index % LIVE_EVERY == 0:
            self.live.append(instance_uuid)
            return
        assert delete_task._release_and_mark_deleted(instance_uuid) \
            is not None
        self.deleted.append(instance_uuid)


def _run_in_threads(traffic):
    """The traffic in one thread, two archivers in two more until it
    ends (then once more each); what each archiver moved, and errors."""
    done = threading.Event()
    errors = []
    moved = [collections.Counter(), collections.Counter()]
    during = collections.Counter()

    def churn():
        try:
            for index in range(INSTANCES):
                traffic.one(index)
        except Exception as error:  # reported by the test
            errors.append(error)
        finally:
            done.set()

    def archiver(counter):
        try:
            while not done.is_set():
                batch = archive.archive_deleted_rows(3)
                counter.update(batch)
                if done.is_set():
                    break
                during.update(batch)
                if not batch:
                    time.sleep(0.005)
            while True:
                batch = archive.archive_deleted_rows(3)
                if not batch:
                    return
                counter.update(batch)
        except Exception as error:  # reported by the test
            errors.append(error)

    threads = [threading.Thread(target=churn)] + [
        threading.Thread(target=archiver, args=(counter,))
        for counter in moved]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads)
    # The archivers did run beside the traffic, not only after it.
    assert during['instances'] > 0
    return moved, errors


def _column(table, name):
    with db_api.reader() as session:
        return list(session.execute(sa.select(table.c[name])).scalars())


def test_archive_under_load_moves_each_deleted_instance_once(
        postgresql_database):
    node = test_claims.make_node(vcpus=1000, memory_mb=10 ** 6,
                                 local_gb=10 ** 5)
    traffic = Traffic(node)

    moved, errors = _run_in_threads(traffic)

    assert errors == []
    deleted_migrations = sum(traffic.migrations[uuid_]
                             for uuid_ in traffic.deleted)
    total = sum(moved, collections.Counter())
    assert total == {'instances': len(traffic.deleted),
                     'migrations': deleted_migrations}
    # Every deleted instance archived exactly once, nothing live.
    shadow = _column(helpers.SHADOW_INSTANCES, 'uuid')
    assert sorted(shadow) == sorted(traffic.deleted)
    assert sorted(_column(helpers._INSTANCE, 'uuid')) == sorted(traffic.live)
    assert sorted(_column(helpers.SHADOW_MIGRATIONS, 'instance_uuid')) == \
        sorted(uuid_ for uuid_ in traffic.deleted
               for _ in range(traffic.migrations[uuid_]))
    assert sorted(_column(helpers._MIGRATION, 'instance_uuid')) == sorted(
        uuid_ for uuid_ in traffic.live
        for _ in range(traffic.migrations[uuid_]))
    # Every live instance still holds its claim, and only they hold any.
    assert sorted(_column(helpers._ALLOC, 'consumer_uuid')) == sorted(
        traffic.live)
    with db_api.reader() as session:
        assert claim_checks.find_inconsistent_nodes(session) == []
        assert claim_checks.find_stray_allocations(session) == []
