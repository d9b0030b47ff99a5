"""Databases made on a database server: cell0's, the demo's own.

``gantt-manage cell_v2 map_cell0`` and ``simple_cell_setup`` make the
database that cell0's URL names when it is not there yet, as far as the
URL's user may: PostgreSQL and MariaDB (``CREATE DATABASE``, which the
user needs the right to, ``CREATEDB`` or ``CREATE``), SQLite (the file,
in a directory that must exist). A user who may not is refused with
:class:`DatabaseCreationRefused`, which names the database, the server
and what to do::

    created = server_databases.ensure_database(url)   # True: made now
    server_databases.create_database(url)             # it must be new
    server_databases.drop_database(url)               # gone if it was

Errors are one line with the password masked
(:class:`~scheduler.exception.GanttException` subclasses).
"""

import os

import sqlalchemy as sa

from scheduler import config
from scheduler.db import api as db_api
from scheduler import exception

# What the servers answer when a database is not there, and when the user
# may not create one: PostgreSQL's SQLSTATE, MariaDB's error numbers.
_PG_NO_DATABASE = '3D000'
_PG_NO_PRIVILEGE = '42501'
_MYSQL_NO_DATABASE = 1049
_MYSQL_NO_ACCESS = 1044   # no privilege on that database (there or not)
_MYSQL_NO_PRIVILEGE = (_MYSQL_NO_ACCESS, 1045, 1227)


class DatabaseCreationRefused(exception.GanttException):
    msg_fmt = ('cannot create the database %(name)s on %(url)s: %(reason)s. '
               'Create it as a user who may (e.g. "CREATE DATABASE '
               '%(name)s" as the server\'s administrator, then grant this '
               'user its privileges), or give the URL of a database that '
               'exists')


class DatabaseServerError(exception.GanttException):
    msg_fmt = 'cannot %(what)s on %(url)s: %(reason)s'


def _backend(url):
    name = url.get_backend_name()
    return 'mysql' if name in ('mysql', 'mariadb') else name


def _reason(error):
    inner = getattr(error, 'orig', None) or error
    text = str(inner).strip()
    return config.mask_secrets(text.splitlines()[0] if text
                               else type(inner).__name__)


def _error_code(error):
    """PostgreSQL's SQLSTATE or MariaDB's error number of ``error``."""
    inner = getattr(error, 'orig', None)
    code = getattr(inner, 'pgcode', None)
    if code is None and inner is not None and getattr(inner, 'args', None):
        code = inner.args[0]
    return code


def _missing(error, url):
    """Whether connecting failed because the database is not there."""
    code = _error_code(error)
    if code in (_PG_NO_DATABASE, _MYSQL_NO_DATABASE, _MYSQL_NO_ACCESS):
        # MariaDB refuses a database the user has no privilege on
        # whether or not it exists: creating it says which.
        return True
    # psycopg2 gives no SQLSTATE to errors raised while connecting.
    return (_backend(url) == 'postgresql'
            and 'database "%s" does not exist' % url.database
            in _reason(error))


def _refused(error):
    code = _error_code(error)
    return code == _PG_NO_PRIVILEGE or code in _MYSQL_NO_PRIVILEGE or (
        'permission denied' in _reason(error).lower())


def _engine(url):
    try:
        return sa.create_engine(url, isolation_level='AUTOCOMMIT',
                                poolclass=sa.pool.NullPool)
    except ImportError as error:
        raise DatabaseServerError(
            what='connect', url=config.redact_database_url(str(url)),
            reason=db_api.describe_error(error))


def _server_url(url):
    """The URL of the server's own database (PostgreSQL's ``postgres``,
    none for MariaDB), for statements about other databases."""
    # (URL.set() leaves a field given as None unchanged.)
    return sa.engine.URL.create(
        url.drivername, username=url.username, password=url.password,
        host=url.host, port=url.port, query=url.query,
        database='postgres' if _backend(url) == 'postgresql' else None)


def _execute(url, statement, what, creating=None):
    """Run ``statement`` on ``url``; ``creating``: the URL of the
    database it creates (a refusal names it)."""
    engine = _engine(url)
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql(statement)
    except sa.exc.SQLAlchemyError as error:
        if creating is not None and _refused(error):
            raise DatabaseCreationRefused(
                name=creating.database,
                url=config.redact_database_url(str(creating)),
                reason=_reason(error))
        raise DatabaseServerError(
            what=what, url=config.redact_database_url(str(url)),
            reason=_reason(error))
    finally:
        engine.dispose()


def _quoted(url, name):
    return _engine(url).dialect.identifier_preparer.quote(name)


def _sqlite_path(url):
    """The file of an SQLite URL, or None (in memory)."""
    if url.database in (None, '', ':memory:'):
        return None
    return os.path.abspath(url.database)


def _ensure_sqlite(url):
    path = _sqlite_path(url)
    if path is None or os.path.exists(path):
        return False
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        raise DatabaseCreationRefused(
            name=path, url=str(url),
            reason='the directory %s does not exist' % directory)
    if not os.access(directory, os.W_OK):
        raise DatabaseCreationRefused(
            name=path, url=str(url),
            reason='the directory %s is not writable' % directory)
    _execute(url, 'SELECT 1', 'create the SQLite file', creating=url)
    return True


def database_exists(url):
    """Whether the database of ``url`` is there (connecting to it).

    :raises DatabaseServerError: the server cannot be reached or refuses
        the user.
    """
    url = sa.engine.make_url(url)
    if _backend(url) == 'sqlite':
        path = _sqlite_path(url)
        return path is None or os.path.exists(path)
    engine = _engine(url)
    try:
        with engine.connect():
            return True
    except sa.exc.SQLAlchemyError as error:
        if _missing(error, url):
            return False
        raise DatabaseServerError(
            what='connect', url=config.redact_database_url(str(url)),
            reason=_reason(error))
    finally:
        engine.dispose()


def create_database(url, via=None):
    """``CREATE DATABASE`` the database of ``url`` on its server, over a
    connection to ``via`` (default: the server's own database).

    :raises DatabaseCreationRefused: the user may not.
    :raises DatabaseServerError: any other failure (it exists...).
    """
    url = sa.engine.make_url(url)
    server = sa.engine.make_url(via) if via else _server_url(url)
    statement = 'CREATE DATABASE %s' % _quoted(server, url.database)
    if _backend(url) == 'mysql':
        statement += ' CHARACTER SET utf8mb4'
    _execute(server, statement, 'create the database %s' % url.database,
             creating=url)


def ensure_database(url):
    """Create the database of ``url`` unless it is there; whether it was
    created now. SQLite: the file (its directory must exist)."""
    given = sa.engine.make_url(url)
    if _backend(given) == 'sqlite':
        return _ensure_sqlite(given)
    if database_exists(given):
        return False
    create_database(given)
    return True


def drop_database(url, via=None):
    """Drop the database of ``url`` if it is there (PostgreSQL: ending
    its sessions), over a connection to ``via`` as :func:`create_database`.
    """
    url = sa.engine.make_url(url)
    server = sa.engine.make_url(via) if via else _server_url(url)
    statement = 'DROP DATABASE IF EXISTS %s' % _quoted(server, url.database)
    if _backend(url) == 'postgresql':
        statement += ' WITH (FORCE)'
    _execute(server, statement, 'drop the database %s' % url.database)
