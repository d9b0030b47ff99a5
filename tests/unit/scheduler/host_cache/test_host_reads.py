"""The reads of an incremental refresh: each a union in one statement,
each row once, on every backend."""

import datetime
import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import models
from scheduler.host_cache import host_reads
from scheduler import placement_types
from tests.fixtures import databases
from tests.fixtures import statements
from tests.unit.scheduler import fakes


@pytest.fixture(params=databases.BACKENDS)
def cell_url(request):
    with databases.cell_database(request.param) as url:
        yield url


@pytest.fixture(params=databases.BACKENDS + ('postgresql+psycopg',))
def any_driver_url(request):
    """:func:`cell_url`, and PostgreSQL through psycopg 3 too (which
    binds parameters server-side, typed)."""
    backend, _plus, driver = request.param.partition('+')
    with databases.cell_database(backend) as url:
        if driver:
            url = sa.engine.make_url(url).set(
                drivername='postgresql+' + driver).render_as_string(
                    hide_password=False)
        yield url


def test_written_and_reread_nodes_come_once_each(cell_url):
    with db_api.target_cell(cell_url):
        cloud = fakes.Cloud()
        old = cloud.add_node('old')
        alive_since = models.utcnow() - datetime.timedelta(seconds=60)
        since = models.utcnow() + datetime.timedelta(seconds=1)
        with db_api.reader() as session:
            assert host_reads.read_changes(
                session, since, set(), alive_since, set()) == ([], [])
            # 'old' was not written since: only the reread brings it.
            nodes, _services = host_reads.read_changes(
                session, since, {old}, alive_since, set())
            assert [row.id for row in nodes] == [old]
            assert isinstance(nodes[0].stats, (str, type(None)))
        fresh = cloud.add_node('fresh')
        since = models.utcnow() - datetime.timedelta(seconds=30)
        with db_api.reader() as session:
            nodes, _services = host_reads.read_changes(
                session, since, {fresh, old}, alive_since, set())
    # Both written since and reread: once each, in id order.
    assert [row.id for row in nodes] == sorted([old, fresh])


def test_service_changes_are_written_dead_and_revived_hosts_once(cell_url):
    with db_api.target_cell(cell_url):
        cloud = fakes.Cloud()
        for host in ('quiet', 'dead', 'revived'):
            cloud.add_node(host)
        cloud.set_last_seen('dead', 3600)
        alive_since = models.utcnow() - datetime.timedelta(seconds=60)
        # Nothing written since `since`: the dead one still comes, and
        # the host believed dead comes to show it heartbeated again.
        since = models.utcnow() + datetime.timedelta(seconds=1)
        with db_api.reader() as session:
            rows = host_reads.read_service_changes(
                session, since, alive_since, {'revived', 'dead'})
        assert [row.host for row in rows] == ['dead', 'revived']
        # Written since, dead and believed dead at once: one row.
        since = models.utcnow() - datetime.timedelta(seconds=30)
        with db_api.reader() as session:
            rows = host_reads.read_service_changes(
                session, since, alive_since, {'dead'})
    assert sorted(row.host for row in rows) == ['dead', 'quiet', 'revived']
    assert len({row.id for row in rows}) == len(rows) == 3


def _age(table, host, **columns):
    """Set columns of the host's row without moving anything else."""
    with db_api.writer() as session:
        session.execute(sa.update(table).where(table.c.host == host)
                        .values(**columns))


def test_a_cells_one_statement_reads_what_the_separate_reads_read(
        any_driver_url):
    """read_cell_changes is the incremental read in one statement: the
    same node and service rows as read_changes, each once, in id order,
    the node ids shifted to cache ids."""
    nodes, services = models.ComputeNode.__table__, models.Service.__table__
    long_ago = models.utcnow() - datetime.timedelta(hours=1)
    with db_api.target_cell(any_driver_url):
        cloud = fakes.Cloud()
        ids = {host: cloud.add_node(host, stats={'gpu': 1})
               for host in ('old', 'fresh', 'quiet', 'dead', 'never',
                            'revived', 'reread')}
        for host in ids:
            _age(nodes, host, updated_at=long_ago)
            _age(services, host, updated_at=long_ago)
        _age(nodes, 'fresh', vcpus=8, updated_at=models.utcnow())
        _age(services, 'dead', last_seen_up=long_ago, updated_at=long_ago)
        _age(services, 'never', last_seen_up=None, updated_at=long_ago)
        cloud.disable('quiet')                    # written since
        now = models.utcnow()
        since = now - datetime.timedelta(seconds=30)
        alive_since = now - datetime.timedelta(seconds=60)
        # 'revived' and 'dead' are believed dead; 'gone' has no service.
        believed_dead = {'revived', 'dead', 'gone'}
        with db_api.reader() as session:
            expected = host_reads.read_changes(
                session, since, {ids['reread'], ids['fresh']}, alive_since,
                believed_dead)
        with host_reads.statement_connection() as connection:
            got = host_reads.read_cell_changes(
                connection, since, {ids['reread'], ids['fresh']},
                alive_since, believed_dead)
            offset = 3 << 40
            shifted = host_reads.read_cell_changes(
                connection, since, {ids['reread']}, alive_since, set(),
                offset)
            nothing = host_reads.read_cell_changes(
                connection, now + datetime.timedelta(seconds=5), set(),
                alive_since, set())

    assert [row.host for row in got[0]] == ['fresh', 'reread']
    assert [row.host for row in got[1]] == ['quiet', 'dead', 'never',
                                            'revived']
    assert [tuple(row) for row in got[0]] == [tuple(row)
                                              for row in expected[0]]
    assert [tuple(row) for row in got[1]] == [tuple(row)
                                              for row in expected[1]]
    # Typed as the separate reads type them, on every backend.
    assert got[0][0].stats == {'gpu': 1}
    assert isinstance(got[0][0].cpu_info, (str, type(None)))
    assert got[1][0].disabled is True
    # A service's creation only where it never sent a heartbeat (its
    # heartbeat until it does), typed.
    assert isinstance(got[1][2].created_at, datetime.datetime)
    assert got[1][0].created_at is None
    assert [row.id for row in shifted[0]] == [offset + ids['fresh'],
                                              offset + ids['reread']]
    assert [row.host for row in shifted[1]] == ['quiet', 'dead', 'never']
    # With nothing written since, the dead ones still come.
    assert nothing == ([], [got[1][1], got[1][2]])


def test_a_node_claimed_on_is_written_though_its_updated_at_is_not(
        any_driver_url):
    """The usual claim leaves the node's updated_at as it was (so that
    it changes no indexed column); every incremental read finds the node
    through the allocation's created_at, once, at its new generation,
    and with ``known`` leaves it out only at that generation."""
    nodes = models.ComputeNode.__table__
    long_ago = models.utcnow() - datetime.timedelta(hours=1)
    with db_api.target_cell(any_driver_url):
        cloud = fakes.Cloud()
        ids = {host: cloud.add_node(host) for host in ('claimed', 'quiet')}
        for host in ids:
            _age(nodes, host, updated_at=long_ago)
        since = models.utcnow()
        assert claims.claim_in_sql(ids['claimed'], str(uuid.uuid4()),
                                   placement_types.Resources(1, 512, 1))
        alive_since = since - datetime.timedelta(seconds=60)
        with db_api.reader() as session:
            row = session.execute(sa.select(nodes).where(
                nodes.c.id == ids['claimed'])).one()
            separate, _services = host_reads.read_changes(
                session, since, set(), alive_since, set())
            # Written since and reread: once.
            reread, _services = host_reads.read_changes(
                session, since, {ids['claimed']}, alive_since, set())
            held, _services = host_reads.read_changes(
                session, since, set(), alive_since, set(),
                known={ids['claimed']: row.generation})
        with host_reads.statement_connection() as connection:
            one, _services = host_reads.read_cell_changes(
                connection, since, {ids['claimed']}, alive_since, set())
            later, _services = host_reads.read_cell_changes(
                connection, models.utcnow() + datetime.timedelta(seconds=5),
                set(), alive_since, set())
    assert row.updated_at == long_ago
    assert row.memory_mb_used == 512
    for found in (separate, reread, one):
        assert [(node.id, node.generation) for node in found] == [
            (ids['claimed'], row.generation)]
    assert held == []
    assert later == []


def test_the_one_statement_leaves_out_a_claimed_node_it_knows():
    """On psycopg2 the node claimed on comes but at the generation the
    cache holds, as a node whose updated_at moved does."""
    with databases.cell_database('postgresql') as url, \
            db_api.target_cell(url):
        cloud = fakes.Cloud()
        node = cloud.add_node('claimed')
        since = models.utcnow()
        assert claims.claim_in_sql(node, str(uuid.uuid4()),
                                   placement_types.Resources(1, 512, 1))
        alive_since = since - datetime.timedelta(seconds=60)
        with db_api.reader() as session:
            generation = session.scalar(sa.select(
                models.ComputeNode.generation).where(
                    models.ComputeNode.id == node))
        with host_reads.statement_connection() as connection:
            same, _services = host_reads.read_cell_changes(
                connection, since, set(), alive_since, set(),
                known=([node], [generation]))
            older, _services = host_reads.read_cell_changes(
                connection, since, set(), alive_since, set(),
                known=([node], [generation - 1]))
    assert same == []
    assert [(row.id, row.generation) for row in older] == [
        (node, generation)]


def test_the_one_statement_leaves_out_the_known_pairs_on_psycopg2():
    """With ``known`` (ids and generations) the nodes written since come
    but for those at the generation given; a reread node comes anyway;
    the services are not affected."""
    with databases.cell_database('postgresql') as url, \
            db_api.target_cell(url):
        cloud = fakes.Cloud()
        ids = {host: cloud.add_node(host) for host in ('same', 'newer',
                                                       'reread', 'unknown')}
        with db_api.reader() as session:
            generations = {row.host: row.generation
                           for row in session.execute(sa.select(
                               models.ComputeNode.__table__))}
        now = models.utcnow()
        since = now - datetime.timedelta(seconds=30)
        alive_since = now - datetime.timedelta(seconds=60)
        known = ([ids['same'], ids['newer'], ids['reread']],
                 [generations['same'], generations['newer'] - 1,
                  generations['reread']])
        with host_reads.statement_connection() as connection:
            nodes, services = host_reads.read_cell_changes(
                connection, since, {ids['reread']}, alive_since, set(),
                known=known)
            everything = host_reads.read_cell_changes(
                connection, since, set(), alive_since, set())
            empty = host_reads.read_cell_changes(
                connection, since, set(), alive_since, set(),
                known=([], []))
    assert [row.host for row in nodes] == ['newer', 'reread', 'unknown']
    assert services == everything[1]
    assert len(services) == 4
    assert empty == everything


def _bulk_nodes(connection, count, at):
    """``count`` compute nodes written and claimed on at ``at``, and
    their services, each kind inserted in one statement; their ids."""
    node = models.ComputeNode.__table__
    ids = connection.execute(sa.insert(node).returning(node.c.id), [
        {'uuid': str(uuid.uuid4()), 'host': 'bulk%d' % index,
         'hypervisor_hostname': 'bulk%d' % index, 'vcpus': 8,
         'memory_mb': 16384, 'local_gb': 100, 'updated_at': at,
         'created_at': at} for index in range(count)]).scalars().all()
    connection.execute(sa.insert(models.Allocation.__table__), [
        {'consumer_uuid': str(uuid.uuid4()), 'compute_node_id': node_id,
         'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1, 'created_at': at}
        for node_id in ids])
    connection.execute(sa.insert(models.Service.__table__), [
        {'host': 'bulk%d' % index, 'binary': host_reads.COMPUTE_BINARY,
         'topic': 'compute', 'updated_at': at, 'created_at': at,
         'last_seen_up': at} for index in range(count)])
    return ids


def test_the_prepared_read_reaches_the_written_nodes_through_indexes():
    """The plan the server keeps for the prepared read (its generic
    plan, made for any values of the parameters) finds the nodes
    written and claimed on since ``since``, and the services written
    since or silent, through the indexes of updated_at, of the
    allocations' created_at and of the services' last_seen_up, whatever
    the number of nodes: it reads no table whole (it did, every node at
    every refresh, with the ranges bounded below only; and the services,
    twice, once their heartbeats came in any order)."""
    with databases.cell_database('postgresql') as url, \
            db_api.target_cell(url):
        long_ago = models.utcnow() - datetime.timedelta(days=1)
        with db_api.get_engine().begin() as connection:
            ids = _bulk_nodes(connection, 5000, long_ago)
            # Heartbeats and service updates land in any order: nothing
            # ties these times to where the rows lie.
            connection.exec_driver_sql(
                "UPDATE services SET "
                "last_seen_up = last_seen_up + random() * interval '1 day',"
                " updated_at = updated_at + random() * interval '1 day'")
        with db_api.get_engine().connect() as connection:
            connection.exec_driver_sql('ANALYZE')
            now = models.utcnow()
            prepared, params, _processors = host_reads.prepared_cell_read(
                connection.dialect, now - datetime.timedelta(seconds=2),
                {ids[0]}, now - datetime.timedelta(seconds=60), set(),
                known=(ids[:10], [1] * 10))
            db_api.prepare_on(connection, {prepared.name: prepared.prepare})
            connection.exec_driver_sql(
                'SET plan_cache_mode = force_generic_plan')
            plan = '\n'.join(row[0] for row in db_api.driver_rows(
                connection, 'EXPLAIN ' + prepared.execute, params))
            connection.rollback()
    assert 'ix_compute_nodes_updated_at' in plan, plan
    assert 'ix_allocations_created_at' in plan, plan
    assert 'Seq Scan on compute_nodes' not in plan, plan
    assert 'Seq Scan on allocations' not in plan, plan
    assert 'Seq Scan on services' not in plan, plan
    assert 'ix_services_updated_at' in plan, plan
    assert 'ix_services_last_seen_up' in plan, plan


def test_the_host_caches_reads_give_named_tuples_of_the_same_rows(
        cell_url, monkeypatch):
    """Every read of the host cache gives NodeRow and ServiceRow tuples
    (a field of a SQLAlchemy Row costs thirty times as much), holding
    what compute_nodes' and the services' own queries read; the first
    load's stream across its batches."""
    from scheduler.db import compute_nodes
    monkeypatch.setattr(compute_nodes, 'STREAM_BATCH', 3)
    with db_api.target_cell(cell_url):
        cloud = fakes.Cloud()
        ids = [cloud.add_node('n%d' % number, stats={'n': number})
               for number in range(7)]
        long_ago = models.utcnow() - datetime.timedelta(hours=1)
        with db_api.reader() as session:
            plain = compute_nodes.get_nodes(session, raw_documents=True)
            streamed = list(host_reads.stream_nodes(session))
            services = host_reads.read_services(session)
            full, removed, _services = host_reads.read_full(session, {})
            changed, _services = host_reads.read_changes(
                session, long_ago, set(), long_ago, set())
            some, their_services = host_reads.read_nodes_of(session,
                                                            ids[:2])
            plain_services = session.execute(sa.select(
                *host_reads._SERVICE_COLUMNS).where(
                    models.Service.__table__.c.binary
                    == host_reads.COMPUTE_BINARY)).all()
    assert [type(row) for row in streamed] == [host_reads.NodeRow] * 7
    assert [tuple(row) for row in streamed] == [tuple(row) for row in plain]
    for rows in (full, changed, some):
        assert {type(row) for row in rows} == {host_reads.NodeRow}
    assert [row.id for row in full] == ids and removed == []
    assert [row.id for row in changed] == ids
    assert [row.host for row in some] == ['n0', 'n1']
    assert {type(row) for row in services + their_services} == {
        host_reads.ServiceRow}
    assert sorted(tuple(row) for row in services) == sorted(
        tuple(row) for row in plain_services)
    assert [row.host for row in their_services] == ['n0', 'n1']


def test_the_first_load_streams_batches_and_names_a_lost_database(
        monkeypatch):
    """On psycopg2 the first load reads the nodes through the driver's
    server-side cursor, a batch at a time: a session ended between two
    batches fails the read with oslo.db's DBConnectionError (which the
    host cache's callers know), not the driver's own error, and the
    rows already given were whole."""
    from oslo_db import exception as db_exc

    from scheduler.db import compute_nodes
    monkeypatch.setattr(compute_nodes, 'STREAM_BATCH', 3)
    with databases.cell_database('postgresql') as url, \
            db_api.target_cell(url):
        cloud = fakes.Cloud()
        for number in range(7):
            cloud.add_node('n%d' % number, stats={'n': number})
        raised = []
        with pytest.raises(db_exc.DBConnectionError):
            with db_api.reader() as session:
                pid = databases.backend_pid('postgresql', session)
                rows = host_reads.stream_nodes(session)
                first = [next(rows) for _ in range(3)]
                databases.kill_session('postgresql', pid)
                try:
                    list(rows)
                except Exception as error:
                    # The read's own error (the session's end would make
                    # any error a DBConnectionError).
                    raised.append(error)
                    raise
        with db_api.reader() as session:
            again = list(host_reads.stream_nodes(session))
    assert [type(error) for error in raised] == [db_exc.DBConnectionError]
    assert [(row.host, row.stats) for row in first] == [
        ('n0', {'n': 0}), ('n1', {'n': 1}), ('n2', {'n': 2})]
    assert [row.host for row in again] == ['n%d' % n for n in range(7)]


def test_cursor_listeners_see_the_first_loads_reads():
    """The reads on psycopg2's own cursor are seen by the engine's
    cursor listeners as SQLAlchemy's are (tracing, statement counts)."""
    with databases.cell_database('postgresql') as url, \
            db_api.target_cell(url):
        fakes.Cloud().add_node('n0')
        with statements.recorded() as sent, \
                db_api.reader() as session:
            services = host_reads.read_services(session)
            nodes = list(host_reads.stream_nodes(session))
    seen = [table for statement in sent
            for table in ('services', 'compute_nodes')
            if 'FROM %s' % table in statement]
    assert seen == ['services', 'compute_nodes']
    assert [row.host for row in services] == ['n0']
    assert [row.host for row in nodes] == ['n0']


def test_the_drivers_rows_are_converted_as_sqlalchemy_converts_them():
    """Our own column types are converted as SQLAlchemy's result would
    convert them; None is passed over only where the type makes None
    None again, and a row with nothing to convert is the driver's own."""
    from sqlalchemy.dialects import postgresql

    class EmptyForNone(sa.types.TypeDecorator):
        impl = sa.Text
        cache_ok = True

        def process_result_value(self, value, dialect):
            return {} if value is None else {'text': value}

    table = sa.Table('t', sa.MetaData(), sa.Column('id', sa.Integer),
                     sa.Column('doc', models.JSONText),
                     sa.Column('other', EmptyForNone))
    statement = sa.select(table)
    processors = host_reads._result_processors(
        statement, postgresql.psycopg2.dialect())
    assert [(index, keeps) for index, _, keeps in processors] == [
        (1, True), (2, False)]
    bare = (1, None, 'x')
    rows = host_reads._typed([bare, (2, '{"a": 1}', None)], processors)
    assert rows == [[1, None, {'text': 'x'}], [2, {'a': 1}, {}]]
    only_documents = processors[:1]
    rows = host_reads._typed([bare, (2, '[3]', 'y')], only_documents)
    assert rows[0] is bare
    assert rows[1] == [2, [3], 'y']


def test_a_column_none_in_every_row_of_a_batch_is_not_converted():
    """A converter that keeps None is not called on a batch whose rows
    all hold None in its column (the batch is given back as it is); one
    that makes something of None is called for each row."""
    calls = []

    def keeps(value):
        calls.append(value)
        return None if value is None else [value]

    def fills(value):
        return {} if value is None else {'text': value}

    batch = [(1, None, None), (2, None, None)]
    assert host_reads._typed(batch, ((1, keeps, True),)) is batch
    assert calls == []
    assert host_reads._typed(batch, ((1, keeps, True), (2, fills, False))) \
        == [[1, None, {}], [2, None, {}]]
    assert calls == []
    rows = host_reads._typed([(1, None, None), (2, 'x', None)],
                             ((1, keeps, True),))
    assert rows == [(1, None, None), [2, ['x'], None]]
    assert calls == ['x']


def test_rows_of_other_fields_are_refused_by_name(cell_url):
    with db_api.target_cell(cell_url):
        fakes.Cloud().add_node('n0')
        with db_api.reader() as session:
            rows = session.execute(sa.select(
                models.ComputeNode.__table__.c.id,
                models.ComputeNode.__table__.c.host)).all()
    with pytest.raises(RuntimeError, match='rows of id, host read as '
                                           'ServiceRow'):
        host_reads.named_rows(host_reads.ServiceRow, rows)
    assert host_reads.named_rows(host_reads.ServiceRow, []) == []


class _Fetches:
    """The sizes of the fetches of the psycopg2 cursors made while it is
    installed on a raw connection (``cursor_factory``); the real cursor
    runs."""

    def __init__(self):
        import psycopg2.extensions

        sizes = self.sizes = []

        class Cursor(psycopg2.extensions.cursor):
            def fetchall(self):
                rows = super().fetchall()
                sizes.append(('all', len(rows)))
                return rows

            def fetchmany(self, size=None):
                rows = super().fetchmany(size)
                sizes.append(('many', len(rows)))
                return rows

        self.cursor = Cursor


def test_the_incremental_read_makes_its_rows_a_batch_at_a_time(
        monkeypatch):
    """Many changed rows (every service after a liveness change) are
    made Python rows a batch at a time, so that requests run between
    two batches; every row comes once, in order, batch bounds or not."""
    monkeypatch.setattr(db_api, 'FETCH_BATCH', 3)
    fetches = _Fetches()
    with databases.cell_database('postgresql') as url, \
            db_api.target_cell(url):
        cloud = fakes.Cloud()
        ids = [cloud.add_node('n%d' % number) for number in range(6)]
        since, alive_since = _window_before_now()
        with host_reads.statement_connection() as connection:
            raw = connection.connection.dbapi_connection
            raw.cursor_factory = fetches.cursor
            try:
                nodes, services = host_reads.read_cell_changes(
                    connection, since, set(), alive_since, set())
            finally:
                raw.cursor_factory = None
    assert [row.id for row in nodes] == ids
    assert [row.host for row in services] == ['n%d' % n for n in range(6)]
    # 12 rows (a node's and a service's per host): 3, 3, 3, 3 and the
    # empty fetch that tells the end; never all at once.
    assert fetches.sizes == [('many', 3)] * 4 + [('many', 0)]


def test_a_batched_fetch_of_fewer_rows_than_a_batch_is_one_fetch():
    fetches = _Fetches()
    with databases.cell_database('postgresql') as url, \
            db_api.target_cell(url):
        with host_reads.statement_connection() as connection:
            raw = connection.connection.dbapi_connection
            raw.cursor_factory = fetches.cursor
            try:
                rows = db_api.driver_rows_batched(
                    connection, 'SELECT generate_series(1, 5)', {})
            finally:
                raw.cursor_factory = None
    assert [row[0] for row in rows] == [1, 2, 3, 4, 5]
    assert fetches.sizes == [('many', 5)]


def _window_before_now():
    now = models.utcnow()
    return (now - datetime.timedelta(seconds=30),
            now - datetime.timedelta(seconds=60))


def test_the_database_sends_the_services_that_may_differ(cell_url,
                                                        monkeypatch):
    """A full read's services compared on the server: the rows unusual
    in SQL (disabled, a reason, forced down, a heartbeat outside the
    window, or none and a creation outside it) and the rows of the
    services unusual in the cache; None when a service came or went
    unseen, or when the cache holds too many unusual ones to list."""
    from scheduler.host_cache import host_state
    services = models.Service.__table__
    hosts = ['h%d' % number for number in range(9)]
    with db_api.target_cell(cell_url):
        cloud = fakes.Cloud()
        for host in hosts:
            cloud.add_node(host)
        now = models.utcnow()
        since = now - datetime.timedelta(seconds=60)
        until = now + datetime.timedelta(seconds=60)
        with db_api.reader() as session:
            cached = {row.host: host_state.service_info(row, True)
                      for row in host_reads.read_services(session)}
        # h1 is disabled in the cache, enabled in SQL.
        cached['h1'] = cached['h1']._replace(disabled=True)
        hour = datetime.timedelta(hours=1)
        for host, values in (
                ('h0', {'disabled': True}),
                ('h2', {'disabled_reason': 'left over'}),
                ('h3', {'forced_down': True}),
                ('h4', {'last_seen_up': now - hour}),
                ('h5', {'last_seen_up': now + hour}),
                ('h6', {'last_seen_up': None, 'created_at': now - hour}),
                ('h7', {'last_seen_up': None, 'created_at': now})):
            with db_api.writer() as session:
                session.execute(sa.update(services).where(
                    services.c.host == host).values(**values))

        def differing():
            with db_api.reader() as session:
                rows = host_reads.read_service_differences(
                    session, cached, since, until)
                whole = {row.host: row
                         for row in host_reads.read_services(session)}
            if rows is None:
                return None
            # Each as the whole read gives it.
            assert all(row == whole[row.host] for row in rows)
            return [row.host for row in rows]
        assert differing() == ['h0', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6']
        # Cached as they are now: the same rows (unusual on both sides).
        with db_api.reader() as session:
            for row in host_reads.read_services(session):
                heartbeat = row.last_seen_up or row.created_at
                cached[row.host] = host_state.service_info(
                    row, since <= heartbeat <= until)
        assert differing() == ['h0', 'h2', 'h3', 'h4', 'h5', 'h6']
        monkeypatch.setattr(host_reads, 'UNUSUAL_AT_MOST', 5)
        assert differing() is None
        monkeypatch.undo()
        # A service the cache holds deleted, or one it lacks added.
        gone = cached.pop('h8')
        assert differing() is None
        cached['h8'] = gone
        with db_api.writer() as session:
            session.execute(sa.delete(services).where(
                services.c.host == 'h8'))
        assert differing() is None
        del cached['h8']
        assert differing() == ['h0', 'h2', 'h3', 'h4', 'h5', 'h6']
