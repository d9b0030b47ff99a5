"""Engines, transactions and retries, on oslo.db's enginefacade.

Queries take a session; callers open one with :func:`writer` (a write
transaction, committed on exit, rolled back on error) or :func:`reader`::

    from scheduler.db import api as db_api

    @db_api.retry_on_db_error
    def rename(uuid, name):
        with db_api.writer() as session:
            session.execute(...)

The engine is oslo.db's, built lazily from the ``[database]`` options (the
same names and defaults as Nova's: ``connection``, ``max_pool_size``,
``max_overflow``, ``pool_timeout``, ``connection_recycle_time``,
``max_retries`` and ``retry_interval`` for waiting for the database at
start (:func:`check_connection`),
``mysql_sql_mode``...). oslo.db turns driver errors into its own
exceptions (``DBDeadlock``, ``DBConnectionError``, ``DBDuplicateEntry``)
whatever the backend, and guards pooled connections against being shared
by the scheduler's forked workers.

:func:`retry_on_db_error` is the one retry policy of every write: a
deadlock (or SQLite's busy lock, or a serialization failure) is retried at
once with a short, jittered backoff; a lost or refused connection is
retried with ``[database] db_retry_interval`` seconds, doubling when
``db_inc_retry_interval`` up to ``db_max_retry_interval``, at most
``db_max_retries`` times. With Nova's defaults (20, 1 s, doubling, 10 s)
a database may be away for about three minutes before the write fails;
then the oslo.db error is raised to the caller, which turns it into the
instance's fault or a remote error. The decorated function must open its
own transaction, and be safe to run again (Gantt's writes are conditional
or keyed, so a retried write never applies twice).

On SQLite, :func:`writer` starts with ``BEGIN IMMEDIATE``, which takes the
database's write lock up front, and :func:`reader` with a plain ``BEGIN``:
a read-then-write (``SELECT ... FOR UPDATE`` then UPDATE, which SQLite
does not lock) must not act on rows another writer just changed.
MariaDB/MySQL sessions run at READ COMMITTED, as Placement's do.

The API database (``[api_database] connection``: the cell, host and
instance mappings, build requests, aggregates and server groups) has
sessions of its own, :func:`api_writer` and
:func:`api_reader`, on an engine built from the ``[api_database]``
options with the same listeners; :func:`retry_on_api_db_error` retries
with that group's budget. They ignore :func:`target_cell`. Without
``[api_database] connection`` (one cell), they are ``[database]``'s::

    with db_api.api_reader() as session:
        rows = session.execute(sa.select(cell_mappings)).all()
"""

import collections
import contextlib
import contextvars
import datetime
import functools
import hashlib
import itertools
import math
import queue
import re
import threading
import time

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import exc_filters
from oslo_log import log as logging
from oslo_service import backend as service_backend
import sqlalchemy as sa

from scheduler import conf
from scheduler.conf import cached
from scheduler import config
from scheduler import exception

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# Deadlocks are retried this many times, the first after a few ms.
DEADLOCK_RETRIES = 10
DEADLOCK_RETRY_INTERVAL = 0.01
DEADLOCK_MAX_RETRY_INTERVAL = 0.5

# Execution option: the statement that opens a transaction on SQLite.
SQLITE_BEGIN = 'gantt_sqlite_begin'

_lock = threading.Lock()
# Connection URL (None: [database] connection) -> enginefacade context.
_context_managers = {}


class _Context:
    """What enginefacade hangs a transaction on: one per writer()/reader()
    block, so that every block is a transaction of its own."""


def _sqlite_begin(connection):
    """Open the transaction ourselves (oslo.db's listener then sees it is
    open): ``BEGIN IMMEDIATE`` for writers, ``BEGIN`` otherwise."""
    dbapi_connection = connection.connection.driver_connection
    if not dbapi_connection.in_transaction:
        statement = connection.get_execution_options().get(SQLITE_BEGIN,
                                                           'BEGIN')
        connection.exec_driver_sql(statement)
    connection.info['in_transaction'] = True


def _sqlite_busy_timeout(dbapi_connection, connection_record):
    cursor = dbapi_connection.cursor()
    cursor.execute('PRAGMA busy_timeout=30000')
    cursor.execute('PRAGMA journal_mode=WAL')
    cursor.close()


def _mysql_read_committed(dbapi_connection, connection_record):
    cursor = dbapi_connection.cursor()
    cursor.execute('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED')
    cursor.close()


# PyMySQL's CLIENT.MULTI_STATEMENTS (pymysql.constants.CLIENT).
_PYMYSQL_MULTI_STATEMENTS = 1 << 16


def _pymysql_multi_statements(dialect, connection_record, cargs, cparams):
    """PyMySQL connections take query strings of several statements (the
    claim's one round trip: see :func:`driver_results`). Every statement
    Gantt sends binds its values as parameters; none is built from a
    caller's text."""
    cparams['client_flag'] = (cparams.get('client_flag', 0)
                              | _PYMYSQL_MULTI_STATEMENTS)


# A pooled connection idle for longer than this is pinged when it is
# checked out; one in steady use is not (see _ping_if_idle).
PING_AFTER_IDLE_SECONDS = 1.0


def _mark_checkin(dbapi_connection, connection_record):
    connection_record.info['checked_in_at'] = time.monotonic()


def _ping_if_idle(engine):
    """A checkout listener that pings only connections that sat idle.

    oslo.db turns on SQLAlchemy's pre-ping, a ``SELECT 1`` round trip at
    every checkout: under load it is one more round trip for each claim
    than the claim needs. A connection used a moment ago is not pinged; if
    the database dropped it meanwhile, the statement fails with a lost
    connection, SQLAlchemy invalidates the pool, and the writes retry
    (``retry_on_db_error``). One that sat idle (a quiet period, the
    database restarted) is pinged first, and replaced if it fails.
    """
    def checkout(dbapi_connection, connection_record, proxy):
        checked_in = connection_record.info.get('checked_in_at')
        if checked_in is None or \
                time.monotonic() - checked_in < PING_AFTER_IDLE_SECONDS:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as error:
            raise sa.exc.DisconnectionError(
                'idle connection failed its ping: %s' % error) from error
    return checkout


def _connect_failure(context):
    """A failure to open a connection is a lost connection, whatever the
    driver's words for it (oslo.db matches only some of libpq's): the
    writes that meet it are retried like the others."""
    if context.connection is None and isinstance(
            context.sqlalchemy_exception, sa.exc.OperationalError):
        context.is_disconnect = True
        return db_exc.DBConnectionError(context.sqlalchemy_exception)
    return None


def _on_engine_create(engine):
    # Ours first: oslo.db's filters re-raise what they do not translate.
    sa.event.remove(engine, 'handle_error', exc_filters.handler)
    sa.event.listen(engine, 'handle_error', _connect_failure, retval=True)
    sa.event.listen(engine, 'handle_error', exc_filters.handler,
                    retval=True)
    backend = engine.dialect.name
    if backend != 'sqlite':
        engine.pool._pre_ping = False
        sa.event.listen(engine.pool, 'checkin', _mark_checkin)
        sa.event.listen(engine.pool, 'checkout', _ping_if_idle(engine))
    if backend == 'sqlite':
        # oslo.db emits a plain BEGIN; ours chooses the statement.
        for listener in list(engine.dispatch.begin):
            if getattr(listener, '__name__', '') == '_sqlite_emit_begin':
                sa.event.remove(engine, 'begin', listener)
        sa.event.listen(engine, 'begin', _sqlite_begin)
        if engine.url.database not in (None, '', ':memory:'):
            sa.event.listen(engine, 'connect', _sqlite_busy_timeout)
    elif backend in ('mysql', 'mariadb'):
        sa.event.listen(engine, 'connect', _mysql_read_committed)
        if engine.dialect.driver == 'pymysql':
            sa.event.listen(engine, 'do_connect', _pymysql_multi_statements)
    else:
        return
    # Drop any connection made before these listeners, so that every
    # pooled one has them.
    engine.pool.dispose()


def _green():
    """True when the process runs on eventlet's green threads."""
    return service_backend.get_backend_type() == \
        service_backend.BackendType.EVENTLET


# The cell database the current thread's sessions go to: a connection
# URL, or None for ``[database] connection``. Set with target_cell().
_target = contextvars.ContextVar('gantt_target_cell_db', default=None)


def _new_context_manager(connection, group=None):
    # enginefacade reads the other [database] options itself; the URL is
    # given for a cell other than [database]'s own. The API database's
    # options (``group``) are given, all of them, as Nova does.
    context_manager = enginefacade.transaction_context()
    options = dict(group.items()) if group is not None else {}
    # max_retries=0: oslo.db does not connect while it builds the engine
    # (before our listeners); check_connection() waits for the database
    # with [database] max_retries instead.
    # thread_checkin: oslo.db's sleep(0) at each connection check-in lets
    # other green threads run under eventlet. On native threads it hands
    # the GIL to whichever thread wants it (the refresh thread, another
    # request) at every claim, and the request waits for it back; off
    # there.
    options.update(sqlite_fk=True, on_engine_create=[_on_engine_create],
                   expire_on_commit=False, max_retries=0,
                   thread_checkin=_green())
    if connection is not None:
        options['connection'] = connection
    context_manager.configure(**options)
    return context_manager


def _context_for(key, build):
    """The enginefacade context kept under ``key``, built by ``build()``
    at first use and kept for the process."""
    context_manager = _context_managers.get(key)
    if context_manager is not None:
        return context_manager
    with _lock:
        context_manager = _context_managers.get(key)
        if context_manager is None:
            context_manager = build()
            _context_managers[key] = context_manager
        return context_manager


def _cell_context(connection):
    def build():
        if connection is None and not CONF.database.connection:
            raise exception.DatabaseUnavailable(
                url='(unset)',
                reason='[database] connection is not set in the '
                       'configuration files')
        return _new_context_manager(connection)
    return _context_for(connection, build)


def _transaction_context():
    """The enginefacade context of the targeted cell's database (one per
    URL)."""
    return _cell_context(_target.get())


def api_database_configured():
    """True when ``[api_database] connection`` is set (cells v2)."""
    return bool(CONF.api_database.connection)


def api_connection():
    """The URL of the API database: ``[api_database] connection``, else
    ``[database] connection`` (one cell)."""
    return CONF.api_database.connection or CONF.database.connection


def _api_options():
    """The option group of the API database's engine and retries."""
    return CONF.api_database if api_database_configured() else CONF.database


def _api_transaction_context():
    """The enginefacade context of the API database, whatever cell this
    thread targets; ``[database]``'s default one in a one-cell
    deployment."""
    url = CONF.api_database.connection
    if not url:
        return _cell_context(None)
    return _context_for(('api', url), lambda: _new_context_manager(
        url, CONF.api_database))


@contextlib.contextmanager
def target_cell(connection):
    """Send this thread's sessions inside the block to the cell database
    at ``connection`` (a URL; None or ``[database] connection``'s own
    URL is the default database).

    The choice is a context variable: other threads, and threads started
    inside the block, keep their own target, so a scatter-gather sets it
    in each worker.
    """
    if connection == cached.group('database').connection:
        connection = None
    token = _target.set(connection)
    try:
        yield
    finally:
        _target.reset(token)


def targeted_connection():
    """The URL the current sessions go to (``[database] connection``'s
    when no cell is targeted), for messages and the scrubbing of them."""
    return _target.get() or CONF.database.connection


def get_engine():
    """The engine of the targeted cell's database (``[database]
    connection`` by default)."""
    return _transaction_context().writer.get_engine()


def dispose_engine():
    """Close every engine of the process; the next use builds a new one
    (after the options changed, e.g. in tests)."""
    with _lock:
        context_managers = list(_context_managers.values())
        _context_managers.clear()
    for context_manager in context_managers:
        context_manager.dispose_pool()


# The engines a forked child took over from its parent (see
# forget_engines_after_fork): held until the child exits.
_inherited = []


def forget_engines_after_fork():
    """In a forked child: leave the parent's engines alone (closing,
    or garbage-collecting, a pooled connection the child shares with its
    parent ends the parent's session on the server); the next use builds
    the child's own."""
    with _lock:
        _inherited.extend(_context_managers.values())
        _context_managers.clear()


def api_engine():
    """The engine of the API database (see :func:`api_connection`)."""
    return _api_transaction_context().writer.get_engine()


@contextlib.contextmanager
def _writer(context_manager):
    with context_manager.writer.using(_Context()) as session:
        if session.bind.dialect.name == 'sqlite':
            session.connection(
                execution_options={SQLITE_BEGIN: 'BEGIN IMMEDIATE'})
        yield session


def writer():
    """A session in a write transaction: commit on success, else roll back."""
    return _writer(_transaction_context())


def api_writer():
    """:func:`writer` on the API database."""
    return _writer(_api_transaction_context())


def api_reader():
    """:func:`reader` on the API database."""
    return _api_transaction_context().reader.using(_Context())


@contextlib.contextmanager
def write_connection():
    """A Core connection in a write transaction: commit on success, else
    roll back. Lighter than :func:`writer` for a few prepared statements
    on a hot path (the claim)."""
    if get_engine().dialect.name == 'sqlite':
        with writer() as session:
            yield session.connection()
        return
    with _transaction_context().writer.connection.using(
            _Context()) as connection:
        yield connection


@contextlib.contextmanager
def autocommit_connection():
    """A Core connection outside any transaction: each statement (or
    query string) the server runs commits on its own.

    On psycopg2 the driver's own autocommit flag is switched on for the
    statement and off again: the driver sends nothing for either.
    SQLAlchemy's ``isolation_level='AUTOCOMMIT'`` would cost a round trip
    (``SET default_transaction_isolation``) each time the connection goes
    back to the pool. A connection whose flag cannot be switched back
    (the server went away) is dropped, never returned to the pool in
    autocommit mode.
    """
    engine = get_engine()
    if engine.dialect.driver != 'psycopg2':
        with engine.connect().execution_options(
                isolation_level='AUTOCOMMIT') as connection:
            yield connection
        return
    with engine.connect() as connection, _driver_autocommit(connection):
        yield connection


@contextlib.contextmanager
def _driver_autocommit(connection):
    """psycopg2's own autocommit flag on ``connection`` (a Core
    connection) for the block; a connection whose flag cannot be switched
    back is invalidated."""
    raw = connection.connection.dbapi_connection
    raw.autocommit = True
    try:
        yield
    finally:
        try:
            raw.autocommit = False
        except Exception:
            connection.invalidate()


class KeptConnection:
    """A Core connection kept checked out of the pool between the uses
    of one user at a time (a claim slot: see
    scheduler.drivers.base.ClaimSlots): each use skips the pool's
    checkout and return and a new Connection object: most of a claim's
    CPU time on the client (measured between requests, 10k hosts on
    PostgreSQL: 485 us for claim_in_sql on a pooled connection, 163 us on
    a kept one, 131 us for the driver's call alone).

    :meth:`autocommit_rows` runs a query string on it in psycopg2's
    autocommit mode, :meth:`use` hands it over as it is. The
    connection is given back to the pool and a new one taken when a use
    fails (whatever the error: a lost connection was invalidated by its
    error handling; nothing else is reused after an error), when the
    engine's pool is not the one it came from (``dispose_engine``, a
    cell's engine), and after ``[database] connection_recycle_time``
    seconds, as the pool would recycle it. A connection lost while kept
    (the server restarted) fails its next use, which the caller's retry
    (:func:`retry_on_db_error`) makes again on a new one.
    """

    def __init__(self):
        self._connection = None
        self._pool = None
        self._since = 0.0

    def autocommit_rows(self, engine, prepares, statement, parameters):
        """On psycopg2: the rows of ``statement`` (as :func:`driver_rows`)
        run in the driver's autocommit mode on the kept connection (as
        :func:`autocommit_connection` runs them on a pooled one), once
        it prepared what it has not of ``prepares`` (as
        :func:`prepare_on`). Plain calls, no generator's context manager
        (a claim's path).

        :raises ValueError: the engine's driver is not psycopg2.
        """
        if engine.dialect.driver != 'psycopg2':
            raise ValueError('autocommit_rows runs on psycopg2, not %s'
                             % engine.dialect.driver)
        connection = self._kept(engine)
        try:
            raw = connection.connection.dbapi_connection
            raw.autocommit = True
            try:
                prepare_on(connection, prepares)
                rows = driver_rows(connection, statement, parameters)
            finally:
                try:
                    raw.autocommit = False
                except Exception:
                    connection.invalidate()
        except BaseException:
            self.close()
            raise
        if connection.invalidated:
            self.close()
        return rows

    @contextlib.contextmanager
    def use(self, engine=None):
        """The kept connection as its driver left it: for a query string
        that ends the transaction it begins (see :func:`driver_results`)."""
        connection = self._kept(engine if engine is not None
                                else get_engine())
        try:
            yield connection
        except BaseException:
            self.close()
            raise
        if connection.invalidated:
            # Lost, or its autocommit flag could not be switched back.
            self.close()

    def _kept(self, engine):
        connection = self._connection
        if connection is not None:
            recycle = cached.group('database').connection_recycle_time
            if (self._pool is not engine.pool or connection.closed
                    or connection.invalidated
                    or (recycle is not None and recycle >= 0
                        and time.monotonic() - self._since > recycle)):
                self.close()
                connection = None
        if connection is None:
            connection = engine.connect()
            self._connection = connection
            self._pool = engine.pool
            self._since = time.monotonic()
        return connection

    def close(self):
        """Give the connection back to its pool (if one is kept)."""
        connection, self._connection = self._connection, None
        self._pool = None
        if connection is None:
            return
        try:
            connection.close()
        except Exception as error:
            LOG.debug('Could not give back a kept connection: %s', error)


def driver_rows(connection, statement, parameters):
    """The rows of ``statement`` (the driver's own query string and
    parameters) run on the DBAPI cursor of ``connection`` (a Core
    connection), for a hot path that sends one prepared query string:
    SQLAlchemy's execution context and result objects cost more CPU than
    the driver's round trip (a claim: ~170 us of ~470 us).

    The ``before_cursor_execute`` and ``after_cursor_execute`` listeners
    are called as SQLAlchemy calls them. A driver error goes through the
    connection's error handling, as in
    ``Connection.exec_driver_sql``: the ``handle_error`` listeners
    (oslo.db's filters, ours) turn it into DBConnectionError,
    DBDeadlock, DBDuplicateEntry..., and a lost connection invalidates
    the connection and the pool, so that the retries meet fresh ones.
    """
    return _read_cursor(connection, statement, parameters, _fetch_all)


def driver_rows_batched(connection, statement, parameters):
    """:func:`driver_rows` for a read that may return many rows: they are
    made Python rows :data:`FETCH_BATCH` at a time (:func:`fetch_batched`),
    so that other threads run in between."""
    return _read_cursor(connection, statement, parameters, fetch_batched)


def driver_read_batches(connection, statement, parameters, read):
    """``read(batches)`` of the rows of ``statement`` (as
    :func:`driver_rows`), ``batches`` an iterator of lists of up to
    :data:`FETCH_BATCH` rows made as it is read: for a reader that
    keeps only what it makes of the rows, so that they are never all
    held at once (and other threads run between two batches)."""
    return _read_cursor(connection, statement, parameters,
                        lambda cursor: read(_batches(cursor)))


def _batches(cursor):
    while True:
        batch = cursor.fetchmany(FETCH_BATCH)
        if batch:
            yield batch
        if len(batch) < FETCH_BATCH:
            return


def _fetch_all(cursor):
    return cursor.fetchall()


# Rows made Python rows by one fetch of fetch_batched.
FETCH_BATCH = 2000


def fetch_batched(cursor, size=None):
    """Every row ``cursor`` (one that ran its statement) has left, in
    order, fetched ``size`` (:data:`FETCH_BATCH`) at a time. psycopg2's
    client-side cursor holds the whole result already, but makes its
    Python rows in the fetch, holding the interpreter throughout:
    ``fetchall`` of 100,000 service rows stops every other thread (the
    requests) for 100-800 ms on the 2-CPU machine; between two
    ``fetchmany`` calls another thread may take its turn."""
    size = size or FETCH_BATCH
    rows = cursor.fetchmany(size)
    if len(rows) < size:
        return rows
    rows = list(rows)
    while True:
        batch = cursor.fetchmany(size)
        rows.extend(batch)
        if len(batch) < size:
            return rows


def driver_results(connection, statement, parameters):
    """Run ``statement``, a query string of several statements (as
    :func:`driver_rows`: the driver's own string and parameters, the
    listeners called, errors made oslo.db's), and return the rows of
    each statement, in order (empty for a statement without rows): for
    PyMySQL, whose connections take several statements (psycopg2 keeps
    only the last one's). The server stops at the first statement that
    fails; its error is raised here, never dropped with the results
    after it."""
    return _read_cursor(connection, statement, parameters, _every_result)


def _every_result(cursor):
    results = [cursor.fetchall()]
    while cursor.nextset():
        results.append(cursor.fetchall())
    return results


# Names of server-side cursors: unique in the process.
_CURSOR_NUMBERS = itertools.count()


def driver_batches(connection, statement, parameters, size):
    """The rows of ``statement`` (as :func:`driver_rows`) in lists of up
    to ``size``, fetched from a server-side cursor of the DBAPI
    connection of ``connection`` (a Core connection in a transaction):
    a generator, to consume before the connection's next statement.
    SQLAlchemy's rows cost more CPU than the driver's fetch (see
    :func:`scheduler.host_cache.host_reads.stream_nodes`). Errors, listeners
    and the cursor's end as in :func:`driver_rows` (the cursor also ends when
    the generator is closed or dropped). Timestamps are read by
    :func:`_timestamp`."""
    name = 'gantt_batches_%d' % next(_CURSOR_NUMBERS)
    with _driver_cursor(connection, statement, parameters,
                        name) as cursor:
        yield from _fetched_ahead(cursor, size)


def _fetched_ahead(cursor, size):
    """The lists of ``cursor.fetchmany(size)`` to the end, each fetched by
    a thread of its own while the caller works on the one before: the
    server makes the next batch and sends it (the driver waits for it
    without the interpreter) while the caller's thread makes Python
    objects of this one (a million node rows of a cold start: the
    server's share of the read, no longer added to the caller's). One
    batch is held ahead at most. An error of a fetch is raised here, at
    the batch it stopped; a caller that stops early ends the thread
    before the cursor is closed (the thread's fetch in progress ends
    first)."""
    ahead = queue.Queue(maxsize=1)
    stopped = threading.Event()

    def fetch():
        try:
            while not stopped.is_set():
                rows = cursor.fetchmany(size)
                ahead.put(rows)
                if not rows:
                    return
        except BaseException as error:
            ahead.put(error)
    thread = threading.Thread(target=fetch, name='gantt-fetch-ahead',
                              daemon=True)
    thread.start()
    try:
        while True:
            rows = ahead.get()
            if isinstance(rows, BaseException):
                raise rows
            if not rows:
                return
            yield rows
    finally:
        stopped.set()
        while thread.is_alive():
            try:
                ahead.get(timeout=0.05)
            except queue.Empty:
                pass
        thread.join()


def _timestamp(text, cursor):
    """A ``timestamp without time zone`` of psycopg2's text as the
    naive datetime psycopg2 makes of it, by :meth:`datetime.fromisoformat`
    (0.1 us where psycopg2's own takes 0.6-1: a second of a cold start
    per column at a million hosts); psycopg2's own for what that does
    not read (infinity)."""
    if text is None:
        return None
    try:
        return _FROM_ISO(text)
    except ValueError:
        return _psycopg2_extensions().PYDATETIME(text, cursor)


_FROM_ISO = datetime.datetime.fromisoformat
# PostgreSQL's oid of ``timestamp without time zone``.
_TIMESTAMP_OID = 1114


@functools.lru_cache(maxsize=None)
def _psycopg2_extensions():
    import psycopg2.extensions
    return psycopg2.extensions


@functools.lru_cache(maxsize=None)
def _timestamp_type():
    return _psycopg2_extensions().new_type(
        (_TIMESTAMP_OID,), 'GANTT_TIMESTAMP', _timestamp)


def _read_timestamps_fast(cursor):
    """Make ``cursor`` (psycopg2's) read timestamps with
    :func:`_timestamp`."""
    _psycopg2_extensions().register_type(_timestamp_type(), cursor)


def _read_cursor(connection, statement, parameters, read):
    """``read(cursor)`` of a DBAPI cursor of ``connection`` that ran
    ``statement`` (see :func:`_execute`); a driver error turned into
    oslo.db's by the connection's error handling, the cursor closed
    after. A plain function, not a generator's context manager: the
    claim's path runs it."""
    cursor = connection.connection.dbapi_connection.cursor()
    try:
        _execute(connection, cursor, statement, parameters)
        return read(cursor)
    except connection.dialect.loaded_dbapi.Error as error:
        connection._handle_dbapi_exception(error, statement, parameters,
                                           cursor, None)
    finally:
        _close(cursor)


@contextlib.contextmanager
def _driver_cursor(connection, statement, parameters, name=None):
    """:func:`_read_cursor` as a context manager, for a server-side
    cursor (``name``) read by a generator: the cursor that ran
    ``statement``, a driver error of the block made oslo.db's."""
    cursor = connection.connection.dbapi_connection.cursor(name=name)
    try:
        _read_timestamps_fast(cursor)
        _execute(connection, cursor, statement, parameters)
        yield cursor
    except connection.dialect.loaded_dbapi.Error as error:
        connection._handle_dbapi_exception(error, statement, parameters,
                                           cursor, None)
    finally:
        _close(cursor)


def _execute(connection, cursor, statement, parameters):
    """``cursor.execute``, the ``*_cursor_execute`` listeners around it
    called as SQLAlchemy calls them (tracing, tests counting
    statements)."""
    listening = connection._has_events or connection.engine._has_events
    if listening:
        connection.dispatch.before_cursor_execute(
            connection, cursor, statement, parameters, None, False)
    cursor.execute(statement, parameters)
    if listening:
        connection.dispatch.after_cursor_execute(
            connection, cursor, statement, parameters, None, False)


def _close(cursor):
    try:
        cursor.close()
    except Exception:
        pass


# A pyformat parameter of a compiled statement (psycopg2's style).
_PARAMETER = re.compile(r'%\((\w+)\)s')
# Connection.info key: the names of the statements prepared on it (gone
# with the DBAPI connection: a new connection prepares them again).
_PREPARED = 'gantt_prepared'


class Prepared(collections.namedtuple(
        'Prepared', 'name prepare execute defaults')):
    """A Core statement as a PostgreSQL prepared statement, for psycopg2's
    own cursor (see :func:`driver_rows`): the server plans it once per
    pooled connection, not at each call. ``prepare``: the ``PREPARE``
    statement (see :func:`prepare_on`); ``execute``: the ``EXECUTE``
    query string, with pyformat parameters; ``defaults``: the values of
    the parameters the caller does not give that are not written into
    the prepared statement (see :func:`sql_literal`)::

        prepared = Prepared.of(statement, dialect, ('node', 'since'))
        prepare_on(connection, {prepared.name: prepared.prepare})
        rows = driver_rows(connection, prepared.execute,
                           dict(prepared.defaults, node=1, since=then))

    The statement's own constants (a claim's allocation ratios, the VM
    states an IN list names...) are written into ``prepare`` as SQL
    literals: each call then sends, and psycopg2 quotes, only the values
    the caller gives (a claim: 6 of 16; their quoting 9 us against 25),
    and the server parses only those. The statement's name is a hash of
    that text, so that other constants (a ratio changed by SIGHUP) make
    another prepared statement, never run the old one.
    """

    @classmethod
    def of(cls, statement, dialect, given):
        """``statement`` prepared, ``given`` the names of the parameters
        each call gives (expanding lists among the others are rendered
        as plain parameters)."""
        given = set(given)
        expanded = statement.compile(dialect=dialect) \
            .construct_expanded_state(dict.fromkeys(given))
        literals = {parameter: sql_literal(value) for parameter, value
                    in expanded.parameters.items() if parameter not in given}
        # [text, parameter, text, parameter, ..., text]
        pieces = _PARAMETER.split(expanded.statement)
        names = list(dict.fromkeys(
            parameter for parameter in pieces[1::2]
            if literals.get(parameter) is None))

        def rendered(index, piece):
            if index % 2 == 0:
                return piece.replace('%%', '%')
            literal = literals.get(piece)
            if literal is not None:
                return literal
            return '$%d' % (names.index(piece) + 1)

        positional = ''.join(rendered(index, piece)
                             for index, piece in enumerate(pieces))
        name = 'gantt_' + hashlib.sha1(positional.encode()).hexdigest()[:20]
        # (PostgreSQL takes no empty parentheses.)
        execute = 'EXECUTE %s' % name + ('(%s)' % ', '.join(
            '%%(%s)s' % parameter for parameter in names) if names else '')
        defaults = {parameter: expanded.parameters[parameter]
                    for parameter in names if parameter not in given}
        return cls(name, 'PREPARE %s AS %s' % (name, positional), execute,
                   defaults)


# What keeps a string a parameter of a prepared statement.
_UNWRITTEN = re.compile(r'[\\\x00%]')


def sql_literal(value):
    """``value`` as a PostgreSQL literal to write into a prepared
    statement, or None for a value left a parameter: an int, a finite
    float, or a string without a backslash, NUL or percent sign (its
    quotes doubled, as under ``standard_conforming_strings``,
    PostgreSQL's default since 9.1; psycopg2 quotes such a parameter
    alike; a ``%`` would be read as a placeholder when the PREPARE is
    sent). Anything else (None, booleans, dates, bytes...) stays a
    parameter, which psycopg2 quotes at each call."""
    kind = type(value)
    if kind is int or kind is float and math.isfinite(value):
        text = repr(value)
        # (A negative number in parentheses: never ``--1``, a comment.)
        return '(%s)' % text if text.startswith('-') else text
    if kind is str and not _UNWRITTEN.search(value):
        return "'%s'" % value.replace("'", "''")
    return None


def prepare_on(connection, prepares):
    """PREPARE on ``connection`` (a Core connection) what it has not
    prepared yet of ``{name: PREPARE statement}``."""
    prepared = connection.info.setdefault(_PREPARED, set())
    for name, statement in prepares.items():
        if name not in prepared:
            connection.exec_driver_sql(statement)
            prepared.add(name)


class QueryString(collections.namedtuple(
        'QueryString', 'statement names defaults')):
    """Core statements as one query string of the driver's own (its
    paramstyle, ``pyformat`` or ``format``), to run with
    :func:`driver_results` in one round trip. ``names``: the parameter
    of each position for a positional paramstyle, else None;
    ``defaults``: the values of the parameters the caller does not give
    (the statements' own constants)::

        trip = QueryString.of([lock, update, 'COMMIT'], dialect, ('node',))
        results = driver_results(connection, trip.statement,
                                 trip.arguments({'node': 1}))
    """

    @classmethod
    def of(cls, statements, dialect, given):
        """``statements`` (Core statements, or query strings without
        parameters) joined; ``given``: the names of the parameters each
        call gives (expanding lists among the others are rendered as
        plain parameters)."""
        given = set(given)
        parts, names, defaults = [], [], {}
        for statement in statements:
            if isinstance(statement, str):
                parts.append(statement)
                continue
            expanded = statement.compile(dialect=dialect) \
                .construct_expanded_state(dict.fromkeys(given))
            for name, value in expanded.parameters.items():
                if name not in given and defaults.setdefault(
                        name, value) != value:
                    raise ValueError('two statements give the parameter %s '
                                     'different values' % name)
            parts.append(expanded.statement)
            if dialect.positional:
                names.extend(expanded.positiontup)
        return cls(';\n'.join(parts),
                   tuple(names) if dialect.positional else None, defaults)

    def arguments(self, values):
        """The driver's parameters, ``values`` giving the caller's."""
        values = dict(self.defaults, **values)
        if self.names is None:
            return values
        return tuple(values[name] for name in self.names)


@contextlib.contextmanager
def reader():
    """A session for reads; nothing it does is committed."""
    with _transaction_context().reader.using(_Context()) as session:
        yield session


def retry_on_db_error(func):
    """Run ``func`` again (it opens its own transaction) when it meets a
    deadlock, or a lost connection within the ``[database]`` retry
    budget; the oslo.db error once the budget is spent.

    The options are read at each call, never at import time.
    """
    return _retrying(func, lambda: cached.group('database'))


def retry_on_api_db_error(func):
    """:func:`retry_on_db_error` for writes to the API database, with the
    ``[api_database]`` retry budget (``[database]``'s in one cell)."""
    return _retrying(func, _api_options)


def _retrying(func, options):
    on_deadlock = oslo_db_api.wrap_db_retry(
        max_retries=DEADLOCK_RETRIES, retry_interval=DEADLOCK_RETRY_INTERVAL,
        inc_retry_interval=True,
        max_retry_interval=DEADLOCK_MAX_RETRY_INTERVAL,
        retry_on_deadlock=True, jitter=True)(func)

    # The disconnect retry for each budget the options gave: built once
    # per budget, not per call (a claim's path).
    budgets = {}

    def wrapper(*args, **kwargs):
        database = options()
        budget = (database.db_max_retries, database.db_retry_interval,
                  database.db_inc_retry_interval,
                  database.db_max_retry_interval)
        on_disconnect = budgets.get(budget)
        if on_disconnect is None:
            on_disconnect = oslo_db_api.wrap_db_retry(
                max_retries=budget[0], retry_interval=budget[1],
                inc_retry_interval=budget[2], max_retry_interval=budget[3],
                retry_on_disconnect=True)(on_deadlock)
            if len(budgets) > 8:
                budgets.clear()
            budgets[budget] = on_disconnect
        return on_disconnect(*args, **kwargs)

    wrapper.__name__ = func.__name__
    wrapper.__qualname__ = func.__qualname__
    wrapper.__doc__ = func.__doc__
    return wrapper


# The errors a write meets when the database goes away (after retries).
CONNECTION_ERRORS = (db_exc.DBConnectionError, db_exc.DBDeadlock)


# Database driver modules -> what to install for them.
DRIVER_PACKAGES = {
    'psycopg': "psycopg (pip install 'gantt[postgresql]', the driver of "
               "postgresql:// and postgresql+psycopg:// URLs)",
    'psycopg2': "psycopg2 (pip install 'gantt[postgresql]', the driver of "
                "postgresql+psycopg2:// URLs)",
    'pymysql': "PyMySQL (pip install 'gantt[mysql]', the driver of "
               "mysql+pymysql:// URLs)",
    'MySQLdb': 'mysqlclient (pip install mysqlclient, the driver of '
               'mysql:// and mysql+mysqldb:// URLs; or use '
               "mysql+pymysql:// with pip install 'gantt[mysql]')",
}


def describe_error(error):
    """One line saying why the database refused, secrets masked; for a
    driver that is not installed, which package to install."""
    if isinstance(error, ImportError) and error.name:
        top = error.name.split('.')[0]
        package = DRIVER_PACKAGES.get(top)
        if package is not None:
            return 'the Python package %s is not installed' % package
        return 'the Python module %s is not installed' % error.name
    inner = getattr(error, 'inner_exception', None) or error
    reason = str(getattr(inner, 'orig', None) or inner).strip()
    reason = reason.splitlines()[0] if reason else type(error).__name__
    return config.scrub(reason, [CONF.database.connection,
                                 targeted_connection(),
                                 CONF.api_database.connection])


def check_connection():
    """Connect, waiting for the database as a starting daemon does; raise
    DatabaseUnavailable naming the (redacted) URL when it stays away.

    A refused or lost connection is tried ``[database] max_retries``
    times in all (-1: until it works), ``retry_interval`` seconds apart,
    each wait logged; any other error fails at once.
    """
    _wait_for(get_engine, targeted_connection(), CONF.database)


def check_api_connection():
    """:func:`check_connection` for the API database, with the
    ``[api_database]`` options (``[database]``'s in one cell)."""
    _wait_for(api_engine, api_connection(), _api_options(),
              error_class=exception.ApiDatabaseUnavailable
              if api_database_configured() else None)


def _wait_for(engine, url, options, error_class=None):
    error_class = error_class or exception.DatabaseUnavailable
    attempts = options.max_retries
    attempt = 0
    while True:
        attempt += 1
        try:
            with engine().connect() as conn:
                conn.execute(sa.text('SELECT 1'))
            return
        except exception.DatabaseUnavailable:
            raise
        except db_exc.DBConnectionError as error:
            if attempts != -1 and attempt >= max(attempts, 1):
                raise error_class(
                    url=config.redact_database_url(url),
                    reason=describe_error(error))
            LOG.warning('The database at %s is unreachable (%s); trying '
                        'again in %s s (attempt %d of %s)',
                        config.redact_database_url(url),
                        describe_error(error),
                        options.retry_interval, attempt,
                        'unlimited' if attempts == -1 else attempts)
            time.sleep(options.retry_interval)
        except Exception as error:
            raise error_class(
                url=config.redact_database_url(url),
                reason=describe_error(error))
