"""The database layer: transactions on enginefacade, and retried writes.

Connections are really lost here: the test's own server-side session is
ended from an admin connection (``pg_terminate_backend`` on PostgreSQL,
``KILL`` on MariaDB) in the middle of a transaction.
"""

import contextlib
import datetime
import sqlite3
import threading
import time

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import models
from scheduler import exception
from tests.fixtures import databases

SERVICES = models.Service.__table__


@pytest.fixture(params=['postgresql', 'mariadb'])
def server_database(request, config):
    config.config(db_retry_interval=0, db_inc_retry_interval=False,
                  group='database')
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(
                databases.migrated_database(request.param, config))
        except databases.ServerDown as error:
            pytest.fail(str(error), pytrace=False)
        yield request.param, url


def _kill_own_session(backend, session):
    """End the server session behind ``session``'s connection."""
    databases.kill_session(backend, databases.backend_pid(backend, session))


def _writer_that_loses_its_connection(backend, losses):
    attempts = []

    @db_api.retry_on_db_error
    def add_service():
        attempts.append(1)
        with db_api.writer() as session:
            if len(attempts) <= losses:
                _kill_own_session(backend, session)
            session.execute(sa.insert(SERVICES).values(
                host='h1', binary='gantt-scheduler', topic='scheduler',
                disabled=False, forced_down=False, report_count=0,
                created_at=models.utcnow()))
    return add_service, attempts


def _service_rows():
    with db_api.reader() as session:
        return session.execute(sa.select(SERVICES.c.host)).all()


def test_a_write_that_loses_its_connection_is_retried(server_database):
    backend, _url = server_database
    add_service, attempts = _writer_that_loses_its_connection(backend, 1)
    add_service()
    assert len(attempts) == 2
    assert [row.host for row in _service_rows()] == ['h1']


def test_a_write_fails_loudly_once_the_budget_is_spent(server_database,
                                                       config):
    backend, _url = server_database
    config.config(db_max_retries=2, group='database')
    add_service, attempts = _writer_that_loses_its_connection(backend, 99)
    with pytest.raises(db_exc.DBConnectionError):
        add_service()
    assert len(attempts) == 3
    assert _service_rows() == []


def test_an_unreachable_server_is_a_connection_error(config):
    config.config(connection='postgresql+psycopg2://u:p@127.0.0.1:9/x',
                  max_retries=0, db_max_retries=1, db_retry_interval=0,
                  group='database')
    db_api.dispose_engine()
    calls = []

    @db_api.retry_on_db_error
    def read():
        calls.append(1)
        with db_api.reader() as session:
            session.execute(sa.text('SELECT 1'))

    try:
        with pytest.raises(db_exc.DBConnectionError):
            read()
    finally:
        db_api.dispose_engine()
    assert len(calls) == 2


def test_a_sqlite_writer_takes_the_write_lock_at_once(database):
    path = sa.engine.make_url(database).database
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        with db_api.reader() as session:
            session.execute(sa.select(SERVICES.c.id)).all()
            other.execute('BEGIN IMMEDIATE')   # a reader locks nothing
            other.execute('ROLLBACK')
        with db_api.writer() as session:
            session.execute(sa.select(SERVICES.c.id)).all()
            with pytest.raises(sqlite3.OperationalError, match='locked'):
                other.execute('BEGIN IMMEDIATE')
    finally:
        other.close()


def _connection_error(config, url):
    """check_connection()'s error for ``url`` (3 tries, no wait)."""
    config.config(connection=url, max_retries=3, retry_interval=0,
                  group='database')
    db_api.dispose_engine()
    try:
        with pytest.raises(exception.DatabaseUnavailable) as raised:
            db_api.check_connection()
    finally:
        db_api.dispose_engine()
    return raised


@pytest.mark.parametrize('url', [
    'postgresql+psycopg2://u:p@127.0.0.1:9/x',
    'mysql+pymysql://u:p@127.0.0.1:9/x',
])
def test_check_connection_waits_max_retries_then_names_the_database(
        config, url, caplog):
    raised = _connection_error(config, url)
    waits = [record for record in caplog.records
             if 'unreachable' in record.getMessage()]
    assert len(waits) == 2, [r.getMessage() for r in caplog.records]
    assert 'u:***@127.0.0.1:9/x' in str(raised.value)
    assert ':p@' not in str(raised.value)


def test_a_driver_that_is_not_installed_is_named_with_its_package(
        config):
    # mysql:// is MySQLdb's URL, whose package (mysqlclient) Gantt does
    # not install.
    raised = _connection_error(config, 'mysql://u:p@127.0.0.1:9/x')
    assert str(raised.value) == (
        'Cannot use the database at mysql://u:***@127.0.0.1:9/x: the '
        'Python package mysqlclient (pip install mysqlclient, the driver '
        'of mysql:// and mysql+mysqldb:// URLs; or use mysql+pymysql:// '
        "with pip install 'gantt[mysql]') is not installed")


def test_a_connection_in_steady_use_is_not_pinged(server_database):
    backend, _url = server_database
    engine = db_api.get_engine()
    pings = []
    real_ping = engine.dialect.do_ping
    engine.dialect.do_ping = lambda conn: pings.append(1) or real_ping(conn)
    try:
        for _ in range(5):
            with db_api.reader() as session:
                session.execute(sa.text('SELECT 1'))
    finally:
        engine.dialect.do_ping = real_ping
    assert pings == []


def test_an_idle_connection_the_server_dropped_is_replaced(
        server_database, monkeypatch):
    backend, _url = server_database
    with db_api.reader() as session:
        first = databases.backend_pid(backend, session)
    # Back in the pool, its server session ends.
    databases.kill_session(backend, first)
    monkeypatch.setattr(db_api, 'PING_AFTER_IDLE_SECONDS', 0.0)
    # A read is not retried: it works only because the checkout pinged
    # the idle connection and replaced it.
    with db_api.reader() as session:
        second = databases.backend_pid(backend, session)
    assert second != first


def test_a_busy_connection_the_server_dropped_fails_once_then_recovers(
        server_database):
    backend, _url = server_database
    with db_api.reader() as session:
        first = databases.backend_pid(backend, session)
    databases.kill_session(backend, first)
    # Used a moment ago: no ping, so the read meets the dead connection...
    with pytest.raises(db_exc.DBConnectionError):
        with db_api.reader() as session:
            session.execute(sa.text('SELECT 1'))
    # ... which invalidated the pool: the next read gets a new one, and a
    # write would have been retried (test above).
    with db_api.reader() as session:
        assert databases.backend_pid(backend, session) != first


def _add_service(connection, host='h1'):
    connection.execute(sa.insert(SERVICES).values(
        host=host, binary='gantt-scheduler', topic='scheduler',
        disabled=False, forced_down=False, report_count=0,
        created_at=models.utcnow()))


def _add_service_then_fail():
    with pytest.raises(RuntimeError):
        with db_api.writer() as session:
            _add_service(session)
            raise RuntimeError('roll back')


def test_an_autocommit_connection_goes_back_to_the_pool_transactional(
        server_database):
    """An INSERT on it commits by itself; the connection it lent is then
    in transactions again for the next user."""
    with db_api.autocommit_connection() as connection:
        _add_service(connection, 'h0')
    # Committed on its own, without a COMMIT...
    assert [row.host for row in _service_rows()] == ['h0']
    # ... while the writer that next takes that pooled connection still
    # rolls back.
    _add_service_then_fail()
    assert [row.host for row in _service_rows()] == ['h0']


def test_an_autocommit_connection_that_died_is_not_pooled(server_database):
    backend, _url = server_database
    with pytest.raises(db_exc.DBConnectionError):
        with db_api.autocommit_connection() as connection:
            pid = databases.backend_pid(backend, connection)
            databases.kill_session(backend, pid)
            connection.exec_driver_sql('SELECT 1')
    with db_api.reader() as session:
        assert databases.backend_pid(backend, session) != pid
    _add_service_then_fail()
    assert _service_rows() == []


# PostgreSQL's own SQL, with psycopg2's parameters.
_INSERT_SERVICE = (
    'INSERT INTO services (host, "binary", topic, disabled, forced_down, '
    "report_count, created_at) VALUES (%(host)s, 'gantt-scheduler', "
    "'scheduler', false, false, 0, now()) RETURNING host")


def _psycopg2_only(server_database):
    if server_database[0] != 'postgresql':
        pytest.skip('the kept connection\'s rows are psycopg2\'s')


def test_rows_on_a_kept_connection_commit_and_it_goes_back_transactional(
        server_database):
    """KeptConnection.autocommit_rows: the statement (after the PREPAREs
    it names) commits by itself; once the connection is given back, the
    next user of it is in transactions again."""
    _psycopg2_only(server_database)
    engine = db_api.get_engine()
    kept = db_api.KeptConnection()
    try:
        prepares = {'gantt_test_one': 'PREPARE gantt_test_one AS SELECT 1'}
        assert kept.autocommit_rows(engine, prepares,
                                    'EXECUTE gantt_test_one', {}) == [(1,)]
        assert kept.autocommit_rows(engine, {}, _INSERT_SERVICE,
                                    {'host': 'h0'}) == [('h0',)]
        # Prepared once on the connection: named again, not prepared again.
        assert kept.autocommit_rows(engine, prepares,
                                    'EXECUTE gantt_test_one', {}) == [(1,)]
    finally:
        kept.close()
    assert [row.host for row in _service_rows()] == ['h0']
    assert engine.pool.checkedout() == 0
    _add_service_then_fail()
    assert [row.host for row in _service_rows()] == ['h0']


def test_a_failed_statement_on_a_kept_connection_gives_it_back(
        server_database):
    """An error of the driver is oslo.db's, and the kept connection goes
    back to the pool (nothing is reused after an error); the next use
    takes another."""
    _psycopg2_only(server_database)
    engine = db_api.get_engine()
    kept = db_api.KeptConnection()
    try:
        assert kept.autocommit_rows(engine, {}, _INSERT_SERVICE,
                                    {'host': 'h0'}) == [('h0',)]
        with pytest.raises(db_exc.DBDuplicateEntry):
            kept.autocommit_rows(engine, {}, _INSERT_SERVICE,
                                 {'host': 'h0'})
        assert engine.pool.checkedout() == 0
        assert kept.autocommit_rows(engine, {}, _INSERT_SERVICE,
                                    {'host': 'h1'}) == [('h1',)]
    finally:
        kept.close()
    assert sorted(row.host for row in _service_rows()) == ['h0', 'h1']


def test_rows_on_a_kept_connection_are_psycopg2_only(server_database):
    if server_database[0] == 'postgresql':
        pytest.skip('psycopg2 runs them')
    with pytest.raises(ValueError, match='psycopg2'):
        db_api.KeptConnection().autocommit_rows(
            db_api.get_engine(), {}, 'SELECT 1', {})
    assert db_api.get_engine().pool.checkedout() == 0


def test_a_connection_going_back_to_the_pool_does_not_yield_the_gil(
        database, monkeypatch):
    """oslo.db's sleep(0) at check-in is for eventlet; on native threads
    it would hand the GIL away after every claim."""
    with db_api.reader() as session:      # the engine and its pool exist
        session.execute(sa.text('SELECT 1'))
    sleeps = []
    monkeypatch.setattr(time, 'sleep', sleeps.append)
    for _ in range(3):
        with db_api.reader() as session:
            session.execute(sa.text('SELECT 1'))
    assert sleeps == []


def test_the_retry_budget_is_read_at_each_call(config):
    calls = []

    @db_api.retry_on_db_error
    def lose_the_connection():
        calls.append(1)
        raise db_exc.DBConnectionError('gone')

    for budget in (1, 3, 1, 0):
        config.config(db_max_retries=budget, db_retry_interval=0,
                      group='database')
        del calls[:]
        with pytest.raises(db_exc.DBConnectionError):
            lose_the_connection()
        assert len(calls) == budget + 1


def _two_statements():
    services = sa.select(SERVICES.c.id).where(
        SERVICES.c.host == sa.bindparam('host'),
        SERVICES.c.binary.in_(['gantt-compute', 'gantt-scheduler']))
    hosts = sa.select(SERVICES.c.host).where(
        SERVICES.c.id == sa.bindparam('id'), SERVICES.c.disabled.is_(False))
    return services, hosts


def test_a_query_string_of_positional_parameters_orders_them():
    from sqlalchemy.dialects import mysql
    services, hosts = _two_statements()
    trip = db_api.QueryString.of([services, 'SELECT 1', hosts],
                                 mysql.pymysql.dialect(), ('host', 'id'))
    assert trip.statement.count(';\n') == 2
    assert trip.statement.count('%s') == len(trip.names) == 4
    assert trip.names[0] == 'host' and trip.names[-1] == 'id'
    assert trip.arguments({'host': 'h1', 'id': 7}) == (
        'h1', 'gantt-compute', 'gantt-scheduler', 7)


def test_a_query_string_of_named_parameters_gives_a_mapping():
    from sqlalchemy.dialects import postgresql
    services, hosts = _two_statements()
    trip = db_api.QueryString.of([services, hosts],
                                 postgresql.psycopg2.dialect(),
                                 ('host', 'id'))
    assert trip.names is None
    assert '%(host)s' in trip.statement and '%(id)s' in trip.statement
    arguments = trip.arguments({'host': 'h1', 'id': 7})
    assert arguments['host'] == 'h1' and arguments['id'] == 7
    assert sorted(value for value in arguments.values()
                  if isinstance(value, str) and value.startswith('gantt')) \
        == ['gantt-compute', 'gantt-scheduler']


def test_a_query_string_refuses_a_constant_given_two_values():
    from sqlalchemy.dialects import mysql
    first = sa.select(SERVICES.c.id).where(SERVICES.c.report_count > 1)
    second = sa.select(SERVICES.c.id).where(SERVICES.c.report_count > 2)
    with pytest.raises(ValueError, match='report_count_1'):
        db_api.QueryString.of([first, second], mysql.pymysql.dialect(), ())


def _constants_statement(binaries=('gantt-compute', "o'compute"),
                         count=2.5):
    return sa.select(SERVICES.c.host).where(
        SERVICES.c.host == sa.bindparam('host'),
        SERVICES.c.binary.in_(list(binaries)),
        SERVICES.c.report_count > count,
        SERVICES.c.report_count > -3).order_by(SERVICES.c.host)


def test_a_prepared_statement_holds_its_constants_and_names_the_rest():
    """The statement's own values are written into the PREPARE (quotes
    doubled, negatives in parentheses); the EXECUTE sends only what each
    call gives."""
    from sqlalchemy.dialects import postgresql
    prepared = db_api.Prepared.of(_constants_statement(),
                                  postgresql.psycopg2.dialect(), ('host',))
    assert prepared.execute == 'EXECUTE %s(%%(host)s)' % prepared.name
    assert prepared.defaults == {}
    assert "IN ('gantt-compute', 'o''compute')" in prepared.prepare
    assert '> 2.5' in prepared.prepare and '> (-3)' in prepared.prepare
    assert prepared.prepare.count('$') == 1
    assert prepared.prepare.startswith('PREPARE %s AS ' % prepared.name)


def test_other_constants_make_another_prepared_statement():
    """A constant that changes (an allocation ratio after SIGHUP) names
    another statement: a connection that prepared the old one never runs
    it for the new values."""
    from sqlalchemy.dialects import postgresql
    dialect = postgresql.psycopg2.dialect()
    first = db_api.Prepared.of(_constants_statement(), dialect, ('host',))
    again = db_api.Prepared.of(_constants_statement(), dialect, ('host',))
    other = db_api.Prepared.of(_constants_statement(count=4.0), dialect,
                               ('host',))
    assert first == again
    assert other.name != first.name and '> 4.0' in other.prepare


@pytest.mark.parametrize('value', [None, True, 'back\\slash', 'nul\x00',
                                   '10%',
                                   float('inf'), datetime.date(2026, 1, 2),
                                   b'bytes'])
def test_values_not_written_as_literals_stay_parameters(value):
    from sqlalchemy.dialects import postgresql
    assert db_api.sql_literal(value) is None
    statement = sa.select(SERVICES.c.id).where(
        SERVICES.c.host == sa.bindparam('host'),
        SERVICES.c.topic == sa.literal(value))
    prepared = db_api.Prepared.of(statement, postgresql.psycopg2.dialect(),
                                  ('host',))
    assert list(prepared.defaults.values()) == [value]
    assert prepared.execute.count('%(') == 2


def test_a_prepared_statement_with_constants_runs_as_written(
        postgresql_database):
    """On the server: the literals written into the PREPARE (a quote, a
    float against an integer column), beside a constant left a parameter
    (a percent sign), select the rows the same statement selects through
    SQLAlchemy."""
    engine = db_api.get_engine()
    rows = [("o'c%ompute", 'h0', 't1', 3), ('gantt-compute', 'h1', 't1', 5),
            ('gantt-compute', 'h2', 't2', 9), ('gantt-compute', 'h3', 't1', 2),
            ('other', 'h4', 't1', 7)]
    with engine.begin() as connection:
        connection.execute(sa.insert(SERVICES), [
            {'host': host, 'binary': binary, 'topic': topic,
             'disabled': False, 'forced_down': False, 'report_count': count,
             'created_at': models.utcnow()}
            for binary, host, topic, count in rows])
    statement = sa.select(SERVICES.c.host).where(
        SERVICES.c.topic == sa.bindparam('topic'),
        SERVICES.c.binary.in_(['gantt-compute', "o'c%ompute"]),
        SERVICES.c.report_count > 2.5,
        SERVICES.c.report_count > -3).order_by(SERVICES.c.host)
    prepared = db_api.Prepared.of(statement, engine.dialect, ('topic',))
    with engine.connect() as connection:
        db_api.prepare_on(connection, {prepared.name: prepared.prepare})
        got = db_api.driver_rows(connection, prepared.execute,
                                 dict(prepared.defaults, topic='t1'))
        expected = connection.execute(statement, {'topic': 't1'}).all()
    assert [tuple(row) for row in got] == [tuple(row) for row in expected] \
        == [('h0',), ('h1',)]


def test_driver_results_gives_each_statement_and_raises_a_later_error(
        mariadb_database):
    """PyMySQL: the rows of every statement of one string; a statement
    that fails in the middle raises through oslo.db's handling, and the
    ones after it are not run."""
    engine = db_api.get_engine()
    with engine.connect() as connection:
        results = db_api.driver_results(
            connection, 'SELECT 1;\nSELECT 2 UNION SELECT 3;\n'
            'DO 0;\nSELECT %s', (4,))
    assert [list(map(tuple, rows)) for rows in results] == [
        [(1,)], [(2,), (3,)], [], [(4,)]]
    insert = ("INSERT INTO services (host, `binary`, topic, disabled, "
              "forced_down, report_count, created_at) "
              "VALUES (%s, 'b', 't', 0, 0, 0, NOW())")
    with engine.connect() as connection:
        db_api.driver_results(connection, insert + ';\nCOMMIT', ('h1',))
        with pytest.raises(db_exc.DBDuplicateEntry):
            db_api.driver_results(
                connection, ';\n'.join(['SELECT 1', insert, insert,
                                         'COMMIT']), ('h1', 'h9'))
    assert _service_rows() == [('h1',)]


def _fetch_ahead_threads():
    return [thread for thread in threading.enumerate()
            if thread.name == 'gantt-fetch-ahead']


def test_batches_are_fetched_ahead_while_the_caller_works(
        postgresql_database):
    """The next batch's FETCH runs on the server while the caller still
    holds the one before (seen in pg_stat_activity from another
    session); every row comes, in order, and the fetching thread ends."""
    query = ('SELECT n, pg_sleep(0.3) FROM generate_series(1, 6) AS n '
             'ORDER BY n')
    engine = db_api.get_engine()
    seen_fetching = []
    rows = []
    with engine.connect() as connection, engine.connect() as watcher:
        for batch in db_api.driver_batches(connection, query, (), 2):
            rows.extend(row[0] for row in batch)
            if len(rows) == 2:
                deadline = time.monotonic() + 10
                while not seen_fetching and time.monotonic() < deadline:
                    seen_fetching = watcher.exec_driver_sql(
                        "SELECT query FROM pg_stat_activity "
                        "WHERE state = 'active' AND query LIKE 'FETCH%%' "
                        "AND pid <> pg_backend_pid()").all()
                    watcher.rollback()
    assert rows == [1, 2, 3, 4, 5, 6]
    assert seen_fetching, 'the second batch was not fetched ahead'
    assert _fetch_ahead_threads() == []


def test_a_caller_that_stops_early_ends_the_fetching_thread(
        postgresql_database):
    engine = db_api.get_engine()
    with engine.connect() as connection:
        batches = db_api.driver_batches(
            connection, 'SELECT n FROM generate_series(1, 1000) AS n', (), 10)
        assert [row[0] for row in next(batches)] == list(range(1, 11))
        batches.close()
        assert _fetch_ahead_threads() == []
        # The connection is free for its next statement.
        assert connection.exec_driver_sql('SELECT 42').scalar() == 42


def test_an_error_of_a_fetch_ahead_is_raised_at_its_batch(
        postgresql_database):
    """The server fails the second batch (a division by zero at its
    fifth row): the first batch came, the error is oslo.db's, raised
    where the second would be, and no thread is left."""
    engine = db_api.get_engine()
    got = []
    with engine.connect() as connection:
        with pytest.raises(db_exc.DBError) as raised:
            for batch in db_api.driver_batches(
                    connection, 'SELECT 10 / (n - 5) FROM '
                    'generate_series(1, 9) AS n', (), 3):
                got.append([row[0] for row in batch])
    assert got == [[-2, -3, -5]]
    assert 'division by zero' in str(raised.value)
    assert _fetch_ahead_threads() == []


def test_batches_read_timestamps_as_psycopg2_does(postgresql_database,
                                                  monkeypatch):
    """driver_batches reads a ``timestamp`` with datetime.fromisoformat,
    and the values are psycopg2's own: microseconds, none, whole seconds,
    early years, and what fromisoformat cannot read (infinity)."""
    query = ("SELECT t FROM (VALUES (1, '2026-12-05 11:55:01.123456'), "
             "(2, NULL), (3, '2020-01-01 00:00:00'), "
             "(4, '0099-02-03 04:05:06.5'), (5, 'infinity'), "
             "(6, '-infinity'))"
             " AS v(n, t) ORDER BY n")
    typed = query.replace('SELECT t', 'SELECT t::timestamp')
    parsed = []

    def from_iso(text):
        parsed.append(text)
        return datetime.datetime.fromisoformat(text)
    monkeypatch.setattr(db_api, '_FROM_ISO', from_iso)
    engine = db_api.get_engine()
    with engine.connect() as connection:
        batches = list(db_api.driver_batches(connection, typed, (), 3))
        fast = [row[0] for batch in batches for row in batch]
        plain = connection.connection.dbapi_connection.cursor()
        plain.execute(typed)
        expected = [row[0] for row in plain.fetchall()]
    assert [len(batch) for batch in batches] == [3, 3]
    assert fast == expected
    assert fast[0] == datetime.datetime(2026, 12, 5, 11, 55, 1, 123456)
    assert fast[1] is None
    assert fast[4] == datetime.datetime.max
    # By fromisoformat, but for the NULL.
    assert len(parsed) == 5
