"""Claims on every backend: capacity checks, release, and real races."""

import threading
import time
import uuid

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claim_checks
from scheduler.db import claims
from scheduler.db import compute_nodes
from scheduler.db import models
from scheduler import exception
from tests.fixtures import databases
from tests.fixtures import statements

_NODE = models.ComputeNode.__table__
_ALLOC = models.Allocation.__table__

# 4 vCPUs, 8 GiB and 100 GB at ratio 1.0 with nothing reserved, unless the
# test says otherwise.
INVENTORY = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100,
             'cpu_allocation_ratio': 1.0, 'ram_allocation_ratio': 1.0,
             'disk_allocation_ratio': 1.0}


def make_node(host='host1', **inventory):
    with db_api.writer() as session:
        return compute_nodes.report_inventory(
            session, str(uuid.uuid4()), host, host + '-node',
            dict(INVENTORY, **inventory))


def node_state(node_id):
    with db_api.reader() as session:
        return session.execute(
            sa.select(_NODE.c.vcpus_used, _NODE.c.memory_mb_used,
                      _NODE.c.local_gb_used, _NODE.c.generation)
            .where(_NODE.c.id == node_id)).one()._asdict()


def claim(node_id, resources, consumer=None):
    consumer = consumer or str(uuid.uuid4())
    with db_api.writer() as session:
        return claims.claim_resources(session, node_id, consumer,
                                      claims.Resources(*resources))


def allocations(consumer):
    with db_api.reader() as session:
        return claims.get_allocations(session, consumer)


def inconsistencies():
    with db_api.reader() as session:
        return [(row.host, problems) for row, problems
                in claim_checks.find_inconsistent_nodes(session)]


def test_claim_that_fits_writes_usage_and_allocation(any_database):
    node = make_node()
    before = node_state(node)
    consumer = str(uuid.uuid4())

    assert claim(node, (2, 4096, 40), consumer) is True

    after = node_state(node)
    assert (after['vcpus_used'], after['memory_mb_used'],
            after['local_gb_used']) == (2, 4096, 40)
    assert after['generation'] == before['generation'] + 1
    assert allocations(consumer) == [(node, claims.Resources(2, 4096, 40))]
    assert inconsistencies() == []


@pytest.mark.parametrize('resources', [
    (5, 1, 1), (1, 8193, 1), (1, 1, 101)], ids=['vcpus', 'memory', 'disk'])
def test_claim_that_does_not_fit_changes_nothing(any_database, resources):
    node = make_node()
    before = node_state(node)
    consumer = str(uuid.uuid4())

    assert claim(node, resources, consumer) is False

    assert node_state(node) == before
    assert allocations(consumer) == []


def test_claim_fills_a_node_exactly(any_database):
    node = make_node()
    assert claim(node, (4, 8192, 100)) is True
    assert claim(node, (1, 0, 0)) is False
    assert inconsistencies() == []


def test_capacity_uses_ratio_and_reserved(any_database, config):
    config.config(cpu_allocation_ratio=3.0)
    # Node ratio 2.0: 4 * 2.0 - 1 reserved = 7 vCPUs.
    node = make_node(cpu_allocation_ratio=2.0, reserved_vcpus=1)
    # No node ratio: the option's 3.0 applies, 4 * 3.0 = 12 vCPUs.
    default_ratio_node = make_node(host='host2', cpu_allocation_ratio=None)

    assert claim(node, (8, 0, 0)) is False
    assert claim(node, (7, 0, 0)) is True
    assert claim(default_ratio_node, (13, 0, 0)) is False
    assert claim(default_ratio_node, (12, 0, 0)) is True


def test_zero_amounts_are_not_checked(any_database):
    node = make_node()
    assert claim(node, (1, 8192, 10)) is True
    # The operator now reserves memory: the node is over capacity for it.
    with db_api.writer() as session:
        compute_nodes.report_inventory(
            session, get_uuid(node), 'host1', 'host1-node',
            dict(INVENTORY, reserved_memory_mb=1024))

    assert claim(node, (1, 0, 10)) is True
    assert claim(node, (1, 1, 10)) is False
    assert node_state(node)['vcpus_used'] == 2


def test_negative_amounts_are_refused(any_database):
    node = make_node()
    before = node_state(node)
    with pytest.raises(ValueError):
        claim(node, (-1, 0, 0))
    assert node_state(node) == before


def test_second_claim_of_a_consumer_on_a_node_is_refused(any_database):
    node = make_node()
    consumer = str(uuid.uuid4())
    assert claim(node, (1, 1024, 10), consumer) is True
    before = node_state(node)

    with pytest.raises(db_exc.DBDuplicateEntry):
        claim(node, (1, 1024, 10), consumer)

    assert node_state(node) == before
    assert allocations(consumer) == [(node, claims.Resources(1, 1024, 10))]


def get_uuid(node_id):
    with db_api.reader() as session:
        return session.scalar(sa.select(_NODE.c.uuid)
                              .where(_NODE.c.id == node_id))


def test_release_restores_usage(any_database):
    node = make_node()
    other = make_node(host='host2')
    consumer = str(uuid.uuid4())
    assert claim(node, (1, 1024, 10)) is True
    assert claim(node, (2, 2048, 20), consumer) is True
    assert claim(other, (3, 3072, 30), consumer) is True
    generation = node_state(node)['generation']

    with db_api.writer() as session:
        released = claims.release_resources(session, consumer,
                                            compute_node_id=node)

    assert released == [(node, claims.Resources(2, 2048, 20))]
    after = node_state(node)
    assert (after['vcpus_used'], after['memory_mb_used'],
            after['local_gb_used']) == (1, 1024, 10)
    assert after['generation'] == generation + 1
    assert allocations(consumer) == [(other, claims.Resources(3, 3072, 30))]

    with db_api.writer() as session:
        assert claims.release_resources(session, consumer) == [
            (other, claims.Resources(3, 3072, 30))]
        assert claims.release_resources(session, consumer) == []
    assert node_state(other)['vcpus_used'] == 0
    assert inconsistencies() == []


def test_find_inconsistent_nodes(any_database):
    consistent = make_node(host='host1')
    drifted = make_node(host='host2')
    overfull = make_node(host='host3')
    for node in (consistent, drifted, overfull):
        assert claim(node, (2, 2048, 20)) is True
    with db_api.writer() as session:
        # Usage written behind the claims' back...
        session.execute(sa.update(_NODE).where(_NODE.c.id == drifted)
                        .values(vcpus_used=3))
        # ...and a node whose capacity shrank below what it holds.
        compute_nodes.report_inventory(
            session, get_uuid(overfull), 'host3', 'host3-node',
            dict(INVENTORY, local_gb=10))

    assert inconsistencies() == [
        ('host2', ['vcpus used 3 but allocations sum to 2']),
        ('host3', ['disk_gb used 20 exceeds capacity 10.0']),
    ]


def race(workers, action):
    """Run ``action(index)`` in ``workers`` threads released at once."""
    barrier = threading.Barrier(workers)
    results = [None] * workers
    errors = []

    def run(index):
        try:
            barrier.wait(timeout=30)
            results[index] = action(index)
        except Exception as error:  # reported by the test below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,))
               for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    return results


@pytest.mark.parametrize('workers, room, fast', [(8, 3, False),
                                                 (12, 5, False),
                                                 (12, 5, True)])
def test_concurrent_claims_never_overfill(any_database, workers, room,
                                          fast):
    # fast: claim_in_sql, whose usual claim is the prepared statement(s).
    node = make_node(vcpus=room, memory_mb=room * 1024, local_gb=room * 10)
    make_node(host='bystander')
    take = sql_claim if fast else claim

    results = race(workers, lambda i: take(node, (1, 1024, 10)))

    assert results.count(True) == room
    assert results.count(False) == workers - room
    state = node_state(node)
    assert (state['vcpus_used'], state['memory_mb_used'],
            state['local_gb_used']) == (room, room * 1024, room * 10)
    with db_api.reader() as session:
        assert session.scalar(
            sa.select(sa.func.count()).select_from(_ALLOC)
            .where(_ALLOC.c.compute_node_id == node)) == room
    assert inconsistencies() == []


def test_concurrent_releases_release_once(any_database):
    node = make_node()
    consumer = str(uuid.uuid4())
    assert claim(node, (2, 2048, 20), consumer) is True
    assert claim(node, (1, 1024, 10)) is True

    def release(index):
        with db_api.writer() as session:
            return claims.release_resources(session, consumer)

    results = race(8, release)

    assert sorted(len(released) for released in results) == [0] * 7 + [1]
    state = node_state(node)
    assert (state['vcpus_used'], state['memory_mb_used'],
            state['local_gb_used']) == (1, 1024, 10)
    assert inconsistencies() == []


# -- claim_in_sql's fast path (prepared UPDATE + INSERT) ---------------------

def sql_claim(node_id, resources, consumer=None, refuse_settled=True):
    return claims.claim_in_sql(node_id, consumer or str(uuid.uuid4()),
                               claims.Resources(*resources),
                               refuse_settled=refuse_settled)


def test_fresh_claim_locks_the_instance_then_claims(any_database):
    node = make_node()
    sql_claim(node, (1, 1, 1))            # statements prepared
    with statements.recorded() as sent:
        assert sql_claim(node, (1, 1024, 10)) is True
    engine = db_api.get_engine()
    # The instance's row lock, then on PostgreSQL one statement (the
    # UPDATE in a CTE that feeds the INSERT); with psycopg2 both are
    # prepared on the connection (by the first claim) and executed in one
    # query string, which the server runs as one transaction.
    if engine.dialect.driver == 'psycopg2':
        assert len(sent) == 1
        lock, claim = sent[0].split(';\n')
        assert lock.startswith('EXECUTE gantt_')
        assert claim.startswith('EXECUTE gantt_')
        with engine.connect() as connection:
            prepared = dict(connection.exec_driver_sql(
                'SELECT name, statement FROM pg_prepared_statements').all())
        assert prepared[lock.split()[1].split('(')[0]].endswith('FOR UPDATE')
        assert 'WITH claimed AS' in prepared[claim.split()[1].split('(')[0]]
    elif engine.dialect.driver == 'pymysql':
        # The lock, the UPDATE, the INSERT if the UPDATE changed the node,
        # the generation if the INSERT was made, COMMIT: one query string.
        assert len(sent) == 1
        parts = sent[0].split(';\n')
        assert [part.split()[0] for part in parts] == [
            'SELECT', 'UPDATE', 'INSERT', 'SELECT', 'COMMIT']
        assert parts[0].endswith('FOR UPDATE')
        assert parts[2].endswith('WHERE row_count() = 1')
        assert parts[3].endswith('AND row_count() = 1')
    else:
        expected = (['SELECT', 'WITH'] if engine.dialect.name == 'postgresql'
                    else ['SELECT', 'UPDATE', 'INSERT'])
        assert [s.split()[0].upper() for s in sent
                if s.split()[0].upper() in (
                    'SELECT', 'UPDATE', 'INSERT', 'WITH')] == expected
    assert node_state(node)['vcpus_used'] == 2
    assert inconsistencies() == []


def test_the_usual_claim_reports_the_generation_it_left(any_database):
    """On psycopg2 and PyMySQL the claim says the node's generation after
    it (what a host cache needs to take its own claim as read); elsewhere
    it says nothing. A claim that finds no room reports nothing
    either."""
    node = make_node()
    before = node_state(node)['generation']
    report = {'generation': 'stale'}
    consumer = str(uuid.uuid4())
    assert claims.claim_in_sql(node, consumer, claims.Resources(1, 1024, 10),
                               refuse_settled=True, report=report) is True
    after = node_state(node)
    assert after['generation'] == before + 1
    assert allocations(consumer)
    if db_api.get_engine().dialect.driver in ('psycopg2', 'pymysql'):
        assert report == {'generation': after['generation']}
    else:
        assert report == {}
    report = {}
    assert claims.claim_in_sql(node, str(uuid.uuid4()),
                               claims.Resources(99, 1, 1),
                               refuse_settled=True, report=report) is False
    assert report == {}
    assert node_state(node) == after


def test_a_claim_whose_connection_died_is_retried_once(any_database,
                                                       config):
    """The pool hands the claim a connection whose server session ended
    a moment ago (no ping on a busy connection): the claim meets the
    lost connection, is retried on a new one (which prepares the claim's
    statements again on psycopg2), and claims exactly once."""
    engine = db_api.get_engine()
    if engine.dialect.name == 'sqlite':
        pytest.skip('no server session to end')
    config.config(db_retry_interval=0, db_inc_retry_interval=False,
                  group='database')
    backend = databases.backend_of(engine.url)
    node = make_node()
    assert sql_claim(node, (1, 1024, 10)) is True
    with db_api.reader() as session:
        pid = databases.backend_pid(backend, session)
    databases.kill_session(backend, pid)
    consumer = str(uuid.uuid4())
    assert sql_claim(node, (2, 2048, 20), consumer) is True
    assert (node_state(node)['vcpus_used'],
            node_state(node)['memory_mb_used']) == (3, 3072)
    assert len(allocations(consumer)) == 1
    assert inconsistencies() == []


def kept_session(kept):
    """The server session behind the connection ``kept`` keeps."""
    engine = db_api.get_engine()
    backend = databases.backend_of(engine.url)
    if backend == 'postgresql':
        # psycopg2's kept connection stays out of transactions.
        return kept.autocommit_rows(engine, {}, 'SELECT pg_backend_pid()',
                                    {})[0][0]
    # PyMySQL's is used as it is (the claim's string commits).
    with kept.use() as connection:
        return databases.backend_pid(backend, connection)


class _Checkouts:
    """Counts the checkouts of the engine's pool."""

    def __init__(self, engine):
        self.count = 0
        self.pool = engine.pool
        sa.event.listen(self.pool, 'checkout', self._checkout)

    def _checkout(self, *args):
        self.count += 1

    def stop(self):
        sa.event.remove(self.pool, 'checkout', self._checkout)


def kept_claim(node, kept, consumer=None, resources=(1, 1024, 10)):
    consumer = consumer or str(uuid.uuid4())
    return claims.claim_in_sql(node, consumer, claims.Resources(*resources),
                               refuse_settled=True, report={}, kept=kept)


def _node_update_counts():
    """``(updates, heap-only updates)`` of compute_nodes, as the server
    counts them once every connection of the engine has ended (a backend
    reports its counts when it exits)."""
    db_api.dispose_engine()
    engine = db_api.get_engine()
    deadline = time.monotonic() + 30
    counts = None
    while time.monotonic() < deadline:
        with engine.connect() as connection:
            active = connection.exec_driver_sql(
                'SELECT count(*) FROM pg_stat_activity WHERE datname = '
                'current_database() AND pid <> pg_backend_pid()').scalar()
            found = tuple(connection.exec_driver_sql(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                "WHERE relname = 'compute_nodes'").one())
        if not active and found == counts:
            return found
        counts = found
        time.sleep(0.2)
    raise AssertionError('the statistics did not settle: %s' % (counts,))


def test_the_usual_claim_is_a_heap_only_update_of_the_node(
        postgresql_database):
    """The usual claim leaves the node's updated_at as it was and changes
    no other indexed column: on PostgreSQL each of its UPDATEs is a HOT
    update (no entry written in the node's indexes), the table's pages
    leaving room for one (fillfactor)."""
    node = make_node(vcpus=64, memory_mb=65536)
    with db_api.reader() as session:
        updated_at = session.scalar(sa.select(_NODE.c.updated_at).where(
            _NODE.c.id == node))
        options = session.execute(sa.text(
            "SELECT reloptions FROM pg_class WHERE relname = "
            "'compute_nodes'")).scalar()
    before = _node_update_counts()
    for _ in range(5):
        assert claims.claim_in_sql(node, str(uuid.uuid4()),
                                   claims.Resources(1, 1024, 10),
                                   refuse_settled=True) is True
    after = _node_update_counts()

    assert options == ['fillfactor=80']
    assert node_state(node)['vcpus_used'] == 5
    with db_api.reader() as session:
        assert session.scalar(sa.select(_NODE.c.updated_at).where(
            _NODE.c.id == node)) == updated_at
    assert (after[0] - before[0], after[1] - before[1]) == (5, 5)


def test_claims_on_a_kept_connection_take_it_from_the_pool_once(
        server_database, config):
    engine = db_api.get_engine()
    node = make_node(vcpus=16, memory_mb=32768)
    kept = db_api.KeptConnection()
    checkouts = _Checkouts(engine)
    try:
        for _ in range(3):
            assert kept_claim(node, kept) is True
        assert checkouts.count == 1
        assert engine.pool.checkedout() == 1
        # Given back: the pool holds it again, nothing checked out.
        kept.close()
        assert engine.pool.checkedout() == 0
        assert kept_claim(node, kept) is True
        assert checkouts.count == 2
        # Recycled as the pool would recycle it: a new one at each use.
        config.config(connection_recycle_time=0, group='database')
        assert kept_claim(node, kept) is True
        assert kept_claim(node, kept) is True
        assert checkouts.count == 4
        assert engine.pool.checkedout() == 1
    finally:
        checkouts.stop()
        kept.close()
    assert node_state(node)['vcpus_used'] == 6
    assert inconsistencies() == []


def test_a_kept_connection_lost_meanwhile_is_replaced_by_the_retry(
        server_database, config):
    """The server ends the kept session between two claims (a restart,
    an operator): the next claim meets the lost connection, is retried
    on a new one, and claims exactly once."""
    config.config(db_retry_interval=0, db_inc_retry_interval=False,
                  group='database')
    node = make_node()
    kept = db_api.KeptConnection()
    try:
        assert kept_claim(node, kept) is True
        pid = kept_session(kept)
        databases.kill_session(databases.backend_of(
            db_api.get_engine().url), pid)
        consumer = str(uuid.uuid4())
        assert kept_claim(node, kept, consumer, (2, 2048, 20)) is True
        assert kept_session(kept) != pid
    finally:
        kept.close()
    assert len(allocations(consumer)) == 1
    assert node_state(node)['vcpus_used'] == 3
    assert inconsistencies() == []


def test_a_kept_connection_follows_the_engine(server_database):
    """dispose_engine (new options, a cell's engine): the kept
    connection of the old pool is given back, a new one taken."""
    node = make_node()
    kept = db_api.KeptConnection()
    try:
        assert kept_claim(node, kept) is True
        old = db_api.get_engine().pool
        db_api.dispose_engine()
        assert kept_claim(node, kept) is True
        assert db_api.get_engine().pool is not old
        assert db_api.get_engine().pool.checkedout() == 1
    finally:
        kept.close()
    assert db_api.get_engine().pool.checkedout() == 0


def test_a_failed_claim_on_a_kept_connection_gives_it_back(
        server_database):
    # An error other than a lost connection: nothing used after an error
    # is kept (the refusal of a settled instance comes from the full path,
    # after the fast one found nothing to claim).
    node = make_node()
    kept = db_api.KeptConnection()
    checkouts = _Checkouts(db_api.get_engine())
    try:
        assert kept_claim(node, kept) is True
        with pytest.raises(RuntimeError):
            with kept.use():
                raise RuntimeError('boom')
        assert db_api.get_engine().pool.checkedout() == 0
        assert kept_claim(node, kept) is True
        assert checkouts.count == 2
    finally:
        checkouts.stop()
        kept.close()


_REFUSE_ALLOCATIONS = {
    'postgresql': [
        "CREATE FUNCTION gantt_test_refuse() RETURNS trigger LANGUAGE "
        "plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$",
        "CREATE TRIGGER gantt_test_refuse BEFORE INSERT ON allocations "
        "FOR EACH ROW EXECUTE FUNCTION gantt_test_refuse()"],
    'mariadb': [
        "CREATE TRIGGER gantt_test_refuse BEFORE INSERT ON allocations "
        "FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = "
        "'refused by the test'"],
}


def test_a_claim_failing_midway_leaves_nothing_written(server_database):
    """The allocation's INSERT fails after the node's UPDATE took the
    room (a trigger refuses it): the claim raises the server's error (not
    dropped with the results after it), the node's usage is as it was,
    no allocation is left, the instance's row is not left locked, and
    the kept connection is given back; the next claim goes through."""
    engine = db_api.get_engine()
    backend = databases.backend_of(engine.url)
    node = make_node()
    instance = add_instance()
    kept = db_api.KeptConnection()
    try:
        assert kept_claim(node, kept) is True
        before = node_state(node)
        with engine.begin() as connection:
            for statement in _REFUSE_ALLOCATIONS[backend]:
                connection.exec_driver_sql(statement)
        # (oslo.db passes MariaDB's OperationalError through as it is.)
        with pytest.raises((db_exc.DBError, sa.exc.OperationalError),
                           match='refused by the test'):
            kept_claim(node, kept, instance)
        assert engine.pool.checkedout() == 0
        assert node_state(node) == before
        assert allocations(instance) == []
        with engine.begin() as connection:
            # Another session locks the instance without waiting.
            assert connection.execute(sa.text(
                'SELECT id FROM instances WHERE uuid = :uuid '
                'FOR UPDATE NOWAIT'), {'uuid': instance}).all()
            connection.exec_driver_sql(
                'DROP TRIGGER gantt_test_refuse' +
                (' ON allocations' if backend == 'postgresql' else ''))
        assert kept_claim(node, kept, instance) is True
    finally:
        kept.close()
    assert node_state(node)['vcpus_used'] == before['vcpus_used'] + 1
    assert len(allocations(instance)) == 1
    assert inconsistencies() == []


# The server session of a claim waiting for a row lock.
_WAITING_SESSION = {
    'postgresql': "SELECT pid FROM pg_stat_activity WHERE datname = "
                  "current_database() AND wait_event_type = 'Lock'",
    'mariadb': "SELECT trx_mysql_thread_id FROM information_schema."
               "innodb_trx WHERE trx_state = 'LOCK WAIT'",
}


def test_a_claim_whose_session_ends_while_it_waits_claims_once(
        server_database, config):
    """The database ends the claim's session in the middle of its one
    round trip (it waits for the instance's lock, held by another
    transaction): the claim meets the lost connection, is retried on a
    new one, and claims exactly once; nothing of the first try stays."""
    config.config(db_retry_interval=0, db_inc_retry_interval=False,
                  group='database')
    engine = db_api.get_engine()
    backend = databases.backend_of(engine.url)
    node = make_node()
    instance = add_instance()
    kept = db_api.KeptConnection()
    outcome = []
    try:
        assert kept_claim(node, kept) is True
        before = node_state(node)
        with engine.connect() as holder:
            holder.execute(sa.text('SELECT id FROM instances WHERE uuid = '
                                   ':uuid FOR UPDATE'), {'uuid': instance})
            claimer = threading.Thread(target=lambda: outcome.append(
                kept_claim(node, kept, instance)))
            claimer.start()
            deadline = time.monotonic() + 30
            waiting = []
            while not waiting and time.monotonic() < deadline:
                time.sleep(0.05)
                with engine.connect() as watcher:
                    waiting = watcher.exec_driver_sql(
                        _WAITING_SESSION[backend]).scalars().all()
            assert len(waiting) == 1, 'the claim never waited'
            databases.kill_session(backend, waiting[0])
            time.sleep(0.2)
            holder.rollback()
        claimer.join(30)
        assert not claimer.is_alive()
    finally:
        kept.close()
    assert outcome == [True]
    assert len(allocations(instance)) == 1
    assert node_state(node)['vcpus_used'] == before['vcpus_used'] + 1
    assert node_state(node)['generation'] == before['generation'] + 1
    assert inconsistencies() == []


def add_instance(vm_state='building', task_state='scheduling', host=None):
    instance_uuid = str(uuid.uuid4())
    now = models.utcnow()
    with db_api.writer() as session:
        session.execute(sa.insert(models.Instance.__table__).values(
            uuid=instance_uuid, vm_state=vm_state, task_state=task_state,
            host=host, created_at=now, updated_at=now))
    return instance_uuid


def test_copies_of_one_request_claiming_at_once_leave_one_claim(
        any_database):
    # A dead scheduler's message delivered again while the conductor
    # asked another scheduler: copies of one request claim on different
    # nodes at the same moment. Each claim replaces the one before it;
    # the instance ends with exactly one.
    nodes = [make_node(host='host%d' % index) for index in range(8)]
    instance = add_instance()

    results = race(len(nodes), lambda i: sql_claim(nodes[i], (1, 1024, 10),
                                                   instance))

    assert results == [True] * len(nodes)
    held = allocations(instance)
    assert len(held) == 1, held
    assert sum(node_state(node)['vcpus_used'] for node in nodes) == 1
    assert inconsistencies() == []


def test_a_claim_waits_for_the_placement_and_is_refused(any_database):
    first, second = make_node(), make_node(host='host2')
    instance = add_instance()
    assert sql_claim(first, (1, 1024, 10), instance) is True
    outcome = []

    def stale_copy():
        try:
            outcome.append(sql_claim(second, (1, 1024, 10), instance))
        except exception.InvalidRequest as error:
            outcome.append(error)

    # The conductor takes the placement (as in BuildTask._take_placement):
    # a copy of the request claiming meanwhile waits for it, then finds
    # the instance placed and claims nothing.
    with db_api.writer() as session:
        claims.lock_instance(session, instance)
        session.execute(sa.update(models.Instance.__table__)
                        .where(models.Instance.__table__.c.uuid == instance)
                        .values(task_state='spawning', host='host1'))
        thread = threading.Thread(target=stale_copy)
        thread.start()
        thread.join(0.5)
        assert thread.is_alive() and outcome == []
    thread.join(30)
    assert len(outcome) == 1
    assert isinstance(outcome[0], exception.InvalidRequest), outcome
    assert 'placed on host1 already' in str(outcome[0])
    assert [node_id for node_id, _ in allocations(instance)] == [first]
    assert node_state(second)['vcpus_used'] == 0
    assert inconsistencies() == []


def test_fast_path_follows_ratio_defaults_and_capacity(any_database, config):
    node = make_node(cpu_allocation_ratio=None)
    config.config(cpu_allocation_ratio=1.0)
    assert sql_claim(node, (4, 0, 0)) is True
    assert sql_claim(node, (1, 0, 0)) is False
    # A new default applies to the next claim (statements are prepared
    # per ratio).
    config.config(cpu_allocation_ratio=2.0)
    assert sql_claim(node, (4, 0, 0)) is True
    assert sql_claim(node, (1, 0, 0)) is False
    # Zero amounts are not checked on the fast path either.
    assert sql_claim(node, (0, 1, 0)) is True
    assert node_state(node)['vcpus_used'] == 8
    with pytest.raises(ValueError):
        sql_claim(node, (-1, 0, 0))
    assert node_state(node)['vcpus_used'] == 8


def test_the_one_trip_claim_is_found_again_until_an_option_changes(config):
    """psycopg2's claim statement is kept per shape while the options
    hold, and written anew with the ratio an option gives once it
    changes (and back)."""
    from sqlalchemy.dialects import postgresql
    dialect = postgresql.psycopg2.dialect()
    shape = ((True, True, False), True, dialect)
    config.config(cpu_allocation_ratio=3.0)
    first = claims.one_trip_sql(*shape)
    assert claims.one_trip_sql(*shape) is first
    assert 'coalesce(compute_nodes.cpu_allocation_ratio, 3.0)' in \
        ''.join(first.prepares.values())
    config.config(cpu_allocation_ratio=5.0)
    changed = claims.one_trip_sql(*shape)
    assert 'coalesce(compute_nodes.cpu_allocation_ratio, 5.0)' in \
        ''.join(changed.prepares.values())
    assert set(changed.prepares) != set(first.prepares)
    config.config(cpu_allocation_ratio=3.0)
    assert claims.one_trip_sql(*shape) == first


def test_fast_path_refuses_settled_and_repeated_consumers(any_database):
    node = make_node()
    other = make_node(host='host2')
    consumer = str(uuid.uuid4())
    assert sql_claim(node, (1, 1, 1), consumer) is True
    # The consumer holds a claim: the fast path matches nothing and the
    # full path replaces the earlier claim (a conductor that asked again).
    assert sql_claim(other, (2, 1, 1), consumer) is True
    assert [node_id for node_id, _ in allocations(consumer)] == [other]
    assert node_state(node)['vcpus_used'] == 0
    assert node_state(other)['vcpus_used'] == 2
    settled = str(uuid.uuid4())
    now = models.utcnow()
    with db_api.writer() as session:
        session.execute(sa.insert(models.Instance.__table__).values(
            uuid=settled, vm_state='active', host='host1', node='host1-node',
            created_at=now, updated_at=now))
    before = node_state(node)
    with pytest.raises(exception.InvalidRequest):
        sql_claim(node, (1, 1, 1), settled)
    assert node_state(node) == before
    assert allocations(settled) == []


def test_claims_through_a_bare_postgresql_url_use_psycopg_3(config):
    """``postgresql://`` (no driver named) is psycopg 3 in SQLAlchemy 2.1:
    the usual claim is the instance lock and one statement, and it claims
    exactly once."""
    with databases.migrated_database('postgresql', config) as url:
        bare = sa.engine.make_url(url).set(drivername='postgresql')
        config.config(connection=bare.render_as_string(hide_password=False),
                      group='database')
        db_api.dispose_engine()
        assert db_api.get_engine().dialect.driver == 'psycopg'
        node = make_node()
        sql_claim(node, (1, 1, 1))
        consumer = str(uuid.uuid4())
        with statements.recorded() as sent:
            assert sql_claim(node, (1, 1024, 10), consumer) is True
        assert [s.split()[0].upper() for s in sent] == ['SELECT', 'WITH']
        assert len(allocations(consumer)) == 1
        assert node_state(node)['vcpus_used'] == 2
        assert inconsistencies() == []
        db_api.dispose_engine()


@pytest.mark.parametrize('conf_text', [
    '[DEFAULT]\ncpu_allocation_ratio = 2.0\n',
    # The name Gantt used before, still read (deprecated).
    '[filter_scheduler]\ncpu_allocation_ratio = 2.0\n',
])
def test_the_ratio_of_a_config_file_reaches_the_claims(database, config,
                                                       tmp_path, conf_text):
    path = tmp_path / 'gantt.conf'
    path.write_text(conf_text)
    config.set_config_files([str(path)])
    assert claims.default_ratio('cpu_allocation_ratio') == 2.0
    # A node that never reported a ratio: 4 vCPUs * 2.0 - 0 reserved.
    node = make_node(vcpus=4, reserved_vcpus=0, cpu_allocation_ratio=None)
    assert sql_claim(node, (8, 1, 1)) is True
    assert sql_claim(node, (1, 1, 1)) is False


@pytest.mark.parametrize('option', [None, 0.0])
def test_without_the_option_a_node_without_ratio_has_the_initial_one(
        database, config, option):
    # 0.0 is unset too, as Nova reads it.
    config.config(cpu_allocation_ratio=option,
                  initial_cpu_allocation_ratio=3.0)
    assert claims.default_ratio('cpu_allocation_ratio') == 3.0
    node = make_node(vcpus=4, reserved_vcpus=0, cpu_allocation_ratio=None)
    assert sql_claim(node, (12, 1, 1)) is True
    assert sql_claim(node, (1, 1, 1)) is False


def used_vcpus(node_id):
    """The node's vCPUs in use, as its row says."""
    return node_state(node_id)['vcpus_used']
