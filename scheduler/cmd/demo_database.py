"""A database of the demo's own on a real database server.

``gantt-demo --database-connection postgresql+psycopg2://root@db/test``
does not write into ``test``: it creates a database of its own on that
server (``gantt_demo_<random>``), runs there, and drops it at the end, so
that a second run never mixes its servers with the first's and nothing
is left behind::

    with demo_database.own_database(url) as demo_url:
        ...   # [database] connection = demo_url
"""

import contextlib
import uuid

import sqlalchemy as sa

from scheduler import config
from scheduler.db import api as db_api
from scheduler import exception

PREFIX = 'gantt_demo_'


class DemoDatabaseError(exception.GanttException):
    msg_fmt = ('cannot make a database of the demo\'s own on %(url)s: '
               '%(reason)s (the user must be allowed to create databases)')


def _admin_engine(url):
    return sa.create_engine(url, isolation_level='AUTOCOMMIT',
                            poolclass=sa.pool.NullPool)


def _run(url, statement):
    try:
        engine = _admin_engine(url)
    except ImportError as error:
        raise DemoDatabaseError(url=config.redact_database_url(str(url)),
                                reason=db_api.describe_error(error))
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql(statement)
    except sa.exc.SQLAlchemyError as error:
        raise DemoDatabaseError(
            url=config.redact_database_url(str(url)),
            reason=config.mask_secrets(
                str(getattr(error, 'orig', None) or error).strip()
                .splitlines()[0]))
    finally:
        engine.dispose()


@contextlib.contextmanager
def own_database(url, report=print):
    """Yield the URL of a new database on ``url``'s server (SQLite URLs
    are yielded unchanged); drop it afterwards, saying so."""
    given = sa.engine.make_url(url)
    if given.get_backend_name() == 'sqlite':
        yield url
        return
    name = PREFIX + uuid.uuid4().hex[:12]
    _run(given, 'CREATE DATABASE %s' % name)
    demo_url = given.set(database=name)
    try:
        yield demo_url.render_as_string(hide_password=False)
    finally:
        db_api.dispose_engine()
        drop = 'DROP DATABASE IF EXISTS %s' % name
        if given.get_backend_name() == 'postgresql':
            drop += ' WITH (FORCE)'
        _run(given, drop)
        report('The demo ran in a database of its own, %s, on %s; it is '
               'dropped.' % (name, config.redact_database_url(url)))
