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
from scheduler.db import server_databases

PREFIX = 'gantt_demo_'


@contextlib.contextmanager
def own_database(url, report=print):
    """Yield the URL of a new database on ``url``'s server (SQLite URLs
    are yielded unchanged); drop it afterwards, saying so."""
    given = sa.engine.make_url(url)
    if given.get_backend_name() == 'sqlite':
        yield url
        return
    name = PREFIX + uuid.uuid4().hex[:12]
    demo_url = given.set(database=name)
    server_databases.create_database(demo_url, via=given)
    try:
        yield demo_url.render_as_string(hide_password=False)
    finally:
        db_api.dispose_engine()
        server_databases.drop_database(demo_url, via=given)
        report('The demo ran in a database of its own, %s, on %s; it is '
               'dropped.' % (name, config.redact_database_url(url)))
