"""Engines and transactions, one engine per process.

Queries take a session; callers open one with :func:`writer` (a write
transaction, committed on exit, rolled back on error) or :func:`reader`::

    from scheduler.db import api as db_api
    with db_api.writer() as session:
        session.execute(...)

The engine is built lazily from ``[database] connection`` and rebuilt after
a fork, so that scheduler workers never share a connection. SQLite is set up
for several processes (WAL, a busy timeout, foreign keys on).

On a SQLite file, SQLAlchemy rather than the ``sqlite3`` module opens
transactions: :func:`writer` starts with ``BEGIN IMMEDIATE``, which takes the
database's write lock up front (waiting up to the busy timeout for it), and
:func:`reader` with a plain ``BEGIN``. Without that, ``sqlite3`` would run a
transaction's first SELECTs outside any transaction, and a read-then-write
(``SELECT ... FOR UPDATE`` then UPDATE, which SQLite does not lock) could act
on rows another writer had just changed. An in-memory database keeps
``sqlite3``'s own handling: it is one connection shared by all threads.
"""

import contextlib
import os
import threading
import time

from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from scheduler import conf
from scheduler import config
from scheduler import exception

CONF = conf.CONF
LOG = logging.getLogger(__name__)

_lock = threading.Lock()
_engine = None
_sessionmakers = None
_engine_pid = None

DEADLOCK_RETRIES = 10

# Execution option: the statement that opens a transaction on SQLite.
SQLITE_BEGIN = 'gantt_sqlite_begin'


def _sqlite_on_connect(dbapi_connection, connection_record):
    cursor = dbapi_connection.cursor()
    cursor.execute('PRAGMA foreign_keys=ON')
    cursor.execute('PRAGMA busy_timeout=30000')
    cursor.close()


def _sqlite_file_on_connect(dbapi_connection, connection_record):
    _sqlite_on_connect(dbapi_connection, connection_record)
    cursor = dbapi_connection.cursor()
    cursor.execute('PRAGMA journal_mode=WAL')
    cursor.close()
    # sqlite3 must not emit BEGIN on its own: _sqlite_begin does.
    dbapi_connection.isolation_level = None


def _sqlite_begin(connection):
    options = connection.get_execution_options()
    if options.get('isolation_level') != 'AUTOCOMMIT':
        connection.exec_driver_sql(options.get(SQLITE_BEGIN, 'BEGIN'))


def create_engine(url):
    """Build an engine for ``url`` with Gantt's per-backend settings."""
    parsed = sa.engine.make_url(url)
    kwargs = {'future': True}
    if parsed.get_backend_name() == 'sqlite':
        kwargs['connect_args'] = {'timeout': 30, 'check_same_thread': False}
        if parsed.database in (None, '', ':memory:'):
            kwargs['poolclass'] = sa.pool.StaticPool
    else:
        kwargs['pool_size'] = CONF.database.max_pool_size
        kwargs['max_overflow'] = CONF.database.max_pool_size
        kwargs['pool_recycle'] = CONF.database.connection_recycle_time
        kwargs['pool_pre_ping'] = True
        if parsed.get_backend_name() in ('mysql', 'mariadb'):
            kwargs['isolation_level'] = 'READ COMMITTED'
    engine = sa.create_engine(parsed, **kwargs)
    if parsed.get_backend_name() == 'sqlite':
        if parsed.database in (None, '', ':memory:'):
            sa.event.listen(engine, 'connect', _sqlite_on_connect)
        else:
            sa.event.listen(engine, 'connect', _sqlite_file_on_connect)
            sa.event.listen(engine, 'begin', _sqlite_begin)
    return engine


def _engine_and_sessionmakers():
    global _engine, _sessionmakers, _engine_pid
    with _lock:
        if _engine is None or _engine_pid != os.getpid():
            if not CONF.database.connection:
                raise exception.DatabaseUnavailable(
                    url='(unset)',
                    reason='[database] connection is not set in the '
                           'configuration files')
            if _engine is not None:
                # Inherited through fork: drop the parent's connections
                # without closing them under the parent's feet.
                _engine.dispose(close=False)
            _engine = create_engine(CONF.database.connection)
            writer_engine = _engine.execution_options(
                **{SQLITE_BEGIN: 'BEGIN IMMEDIATE'})
            _sessionmakers = {
                'reader': orm.sessionmaker(bind=_engine,
                                           expire_on_commit=False),
                'writer': orm.sessionmaker(bind=writer_engine,
                                           expire_on_commit=False),
            }
            _engine_pid = os.getpid()
        return _engine, _sessionmakers


def get_engine():
    """The process's engine for ``[database] connection``."""
    return _engine_and_sessionmakers()[0]


def dispose_engine():
    """Close the process's engine; the next use builds a new one."""
    global _engine, _sessionmakers, _engine_pid
    with _lock:
        if _engine is not None:
            _engine.dispose()
        _engine = _sessionmakers = _engine_pid = None


def _session(kind):
    return _engine_and_sessionmakers()[1][kind]()


@contextlib.contextmanager
def writer():
    """A session in a write transaction: commit on success, else roll back."""
    session = _session('writer')
    try:
        with session.begin():
            yield session
    finally:
        session.close()


@contextlib.contextmanager
def reader():
    """A session for reads; nothing it does is committed."""
    session = _session('reader')
    try:
        yield session
    finally:
        session.rollback()
        session.close()


def is_deadlock(error):
    """True for the errors a retried transaction can get past."""
    text = str(getattr(error, 'orig', error)).lower()
    return ('deadlock' in text or 'database is locked' in text or
            'could not serialize' in text or 'lock wait timeout' in text)


def retry_on_deadlock(func):
    """Run ``func`` again (it must open its own transaction) on deadlock."""
    def wrapper(*args, **kwargs):
        for attempt in range(DEADLOCK_RETRIES):
            try:
                return func(*args, **kwargs)
            except sa_exc.OperationalError as error:
                if not is_deadlock(error) or attempt == DEADLOCK_RETRIES - 1:
                    raise
                LOG.debug('Deadlock in %s, retrying (attempt %d)',
                          func.__name__, attempt + 1)
                time.sleep(0.01 * (attempt + 1))
    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


def check_connection():
    """Connect once; raise DatabaseUnavailable naming the (redacted) URL."""
    url = CONF.database.connection
    try:
        with get_engine().connect() as conn:
            conn.execute(sa.text('SELECT 1'))
    except exception.DatabaseUnavailable:
        raise
    except Exception as error:
        reason = str(getattr(error, 'orig', None) or error).strip()
        reason = reason.splitlines()[0] if reason else type(error).__name__
        raise exception.DatabaseUnavailable(url=config.redact_url(url),
                                            reason=reason)
