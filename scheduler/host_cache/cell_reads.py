"""Cells' incremental reads on PostgreSQL, all at once from one thread.

A refresh over cells reads each cell with one statement
(:func:`scheduler.host_cache.host_reads.read_cell_changes`). Handing each read
to a thread of its own costs the process more CPU than the reads: each
thread wakes, takes the GIL, gives it up for the round trip, takes it
again, and signals. Ten prepared reads of 44 columns, measured on a
2-core machine: 1.3 ms of CPU one after another, 3.1 ms on ten threads,
1.7 ms here, and the shortest wall time of the three. The threads stay
for the other reads (whole reads, other drivers).

On psycopg2 each cell keeps a :class:`CellConnection`, an asynchronous
connection (``async_=1``: autocommit, every call returns at once) with
the read's statement prepared on it; :func:`gather` sends every cell's
read and waits on their sockets together until each answered or the
deadline passed::

    reads = {cell: connection.read(since, reread, alive_since, dead,
                                   offset)
             for cell, connection in connections.items()}
    outcomes = gather(reads, time.monotonic() + 60)
    # {cell: (node rows, service rows) or the exception}; a cell that
    # did not answer in time is missing: close its connection.

A read that failed or did not answer leaves its connection to be closed
(:meth:`CellConnection.close`); the next read connects again. Opening a
connection does not block, but libpq resolves a host *name* before it
starts: a cell URL naming a host whose DNS lookup hangs holds the
refresh for as long (an address does not).
"""

import functools
import os
import selectors
import time

import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.host_cache import host_reads
from scheduler.host_cache import node_extras

# Connections a forked child found in its parent's memory: forgotten
# there, never closed (closing one would end the parent's session).
_inherited = []


@functools.lru_cache(maxsize=256)
def eligible(url):
    """True when the database at ``url`` is read here: PostgreSQL through
    psycopg2, installed."""
    try:
        if sa.engine.make_url(url).get_driver_name() != 'psycopg2':
            return False
        import psycopg2  # noqa: F401
    except Exception:
        return False
    return True


def _cursor(connection):
    return connection.cursor()


class CellConnection:
    """An asynchronous psycopg2 connection to one cell's database, the
    statements prepared on it; used by one thread at a time (the
    refresh's)."""

    def __init__(self, url):
        self.url = url
        self._connection = None
        self._pid = None
        self._prepared = set()

    def read(self, since, reread, alive_since, dead, offset,
             with_extras=False, held=None):
        """A generator for :func:`gather`: the incremental read of
        :func:`host_reads.read_cell_changes`, node ids plus ``offset``.
        It yields ``(socket, selector events)`` to wait for and returns
        ``(node rows, service rows)``; ``with_extras``, ``(node rows,
        service rows, their node_extras.Extras)``, read with a second
        statement when it read nodes whose rows are not ``held`` (see
        :func:`node_extras.ids_to_read`)."""
        with db_api.target_cell(self.url):
            engine = db_api.get_engine()
        prepared, params, processors = host_reads.prepared_cell_read(
            engine.dialect, since, reread, alive_since, dead, offset)
        connection = self._connected(engine)
        cursor = None
        try:
            yield from _wait(connection)        # connected
            cursor = _cursor(connection)
            if prepared.name not in self._prepared:
                cursor.execute(prepared.prepare)
                yield from _wait(connection)
                self._prepared.add(prepared.name)
            cursor.execute(prepared.execute, params)
            yield from _wait(connection)
            nodes, services = host_reads.cell_read_rows(
                db_api.fetch_batched(cursor), processors)
            if not with_extras:
                return nodes, services
            extras = node_extras.none()
            ids = node_extras.ids_to_read(nodes, held, offset)
            if ids:
                query, extra_params = node_extras.driver_read(
                    engine.dialect, ids)
                cursor.execute(query, extra_params)
                yield from _wait(connection)
                extras = node_extras.extras_of(
                    db_api.fetch_batched(cursor), offset)
            return nodes, services, extras
        except connection.OperationalError:
            # The database went away (or restarted): the pool's
            # connections to it are as dead as this one. Dropped, as
            # SQLAlchemy drops them when one of them meets a lost
            # connection, so that the cell's next (whole) read, on the
            # cell's thread, connects again.
            engine.pool.dispose()
            raise
        finally:
            # Still busy when the read is abandoned: the caller closes
            # the connection, and the cursor with it.
            if cursor is not None:
                _quietly(cursor.close)

    def _connected(self, engine):
        """The connection (being opened if it is new)."""
        if self._connection is not None and (
                self._pid != os.getpid() or self._connection.closed):
            self.close()
        if self._connection is None:
            import psycopg2
            args, kwargs = engine.dialect.create_connect_args(engine.url)
            self._connection = psycopg2.connect(*args, async_=1, **kwargs)
            self._pid = os.getpid()
            self._prepared = set()
        return self._connection

    def close(self):
        """Close the connection (the next read opens another)."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._pid != os.getpid():
            _inherited.append(connection)
            return
        _quietly(connection.close)


def _quietly(call):
    try:
        call()
    except Exception:
        pass


def _wait(connection):
    """Yield what ``connection`` waits for until its call is done
    (psycopg2's ``poll``; an error of the call is raised here)."""
    from psycopg2 import extensions
    while True:
        state = connection.poll()
        if state == extensions.POLL_OK:
            return
        if state == extensions.POLL_READ:
            yield connection, selectors.EVENT_READ
        elif state == extensions.POLL_WRITE:
            yield connection, selectors.EVENT_WRITE
        else:
            raise RuntimeError('unexpected psycopg2 poll state %r' % state)


def gather(reads, deadline):
    """Run ``reads`` (``{key: generator}`` of :meth:`CellConnection.read`)
    together until each is done or ``deadline`` (``time.monotonic()``)
    passed; ``{key: result or exception}``, without the keys of those
    still waiting at the deadline (closed, not run further)."""
    outcomes = {}
    selector = selectors.DefaultSelector()
    try:
        for key, read in reads.items():
            _advance(selector, key, read, outcomes)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for selected, _events in selector.select(left):
                selector.unregister(selected.fileobj)
                key, read = selected.data
                _advance(selector, key, read, outcomes)
    finally:
        for selected in list(selector.get_map().values()):
            selected.data[1].close()
        selector.close()
    return outcomes


def _advance(selector, key, read, outcomes):
    try:
        waited, events = next(read)
    except StopIteration as done:
        outcomes[key] = done.value
    except Exception as error:
        outcomes[key] = error
    else:
        selector.register(waited, events, (key, read))
