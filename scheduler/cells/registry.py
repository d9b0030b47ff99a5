"""The cell and host mappings, read from the API database and cached.

The scheduler asks for the cells at every refresh of its host cache
(twice a second) and for a host's cell when it needs it; neither should
cost a query each time. The cell list is kept for :data:`CACHE_SECONDS`,
and each host's answer too (a host that is not mapped as well, so that
requests naming an unknown host do not each cost a query), then read
again. A change made in this process (``gantt-manage cell_v2``) clears
the cache at once; other processes see it within :data:`CACHE_SECONDS`.
The scheduler's host cache sees it sooner: each of its refreshes reads
the list again in the background (:func:`reload_cells`) and reads the
cells of the list it had (:func:`cached_cells`), so that a change is
read by the next refresh but one (within a second, at the default
``[scheduler] host_state_refresh_interval``) and the API database never
delays or stops the reading of the cells.

Reads are tried once, never retried: a caller that meets
:class:`~scheduler.exception.ApiDatabaseUnavailable` decides what to do
(the scheduler keeps scheduling on the cells it knows). An unexpired
cache is served while the API database is away.

Without ``[api_database] connection`` (one cell), :func:`get_cells` is
``[cells.LOCAL]`` without a query, and :func:`host_cell` is ``LOCAL``
for a host that has a mapped compute node in ``[database]``.
"""

import contextlib
import threading
import time

from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler import cells
from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import mappings
from scheduler.db import models
from scheduler import exception

LOG = logging.getLogger(__name__)

# How long the mappings read from the API database are used.
CACHE_SECONDS = 10.0

_lock = threading.Lock()
_cells = None           # (expiry, [CellMapping])
_hosts = {}             # host -> (expiry, CellMapping or None)
# Bumped by clear_cache(): a read that began before it is not cached.
_clears = 0


def clear_cache():
    global _cells, _clears
    with _lock:
        _cells = None
        _hosts.clear()
        _clears += 1


def cell_from_row(row):
    """A :class:`cells.CellMapping` from a ``cell_mappings`` row."""
    return cells.CellMapping(
        uuid=row.uuid, name=row.name,
        database_connection=row.database_connection,
        transport_url=row.transport_url, disabled=bool(row.disabled))


@contextlib.contextmanager
def database_errors(what, api=True):
    """Turn a database error inside the block into ApiDatabaseUnavailable
    naming the API database (DatabaseUnavailable naming ``[database]``
    when not ``api``), password masked, saying it happened ``what``."""
    try:
        yield
    except (sa_exc.SQLAlchemyError, db_exc.DBError) as error:
        error_class = exception.ApiDatabaseUnavailable if api \
            else exception.DatabaseUnavailable
        raise error_class(
            url=config.redact_database_url(
                db_api.api_connection() if api
                else conf.CONF.database.connection),
            reason='%s: %s' % (what, db_api.describe_error(error))) \
            from error


def _read(what, query, api=True):
    """Run ``query(session)`` once on the API database (else on
    ``[database]``), errors as :func:`database_errors`."""
    with database_errors('reading ' + what, api=api):
        if api:
            with db_api.api_reader() as session:
                return query(session)
        with db_api.target_cell(None):
            with db_api.reader() as session:
                return query(session)


def get_cells():
    if not db_api.api_database_configured():
        return [cells.LOCAL]
    cached = _cells
    if cached is not None and time.monotonic() < cached[0]:
        return list(cached[1])
    return reload_cells()


def reload_cells():
    """Read the cell mappings now (one statement), cache them as
    :func:`get_cells` does, and return them.

    :raises exception.ApiDatabaseUnavailable: the API database cannot be
        read (the cache is left as it was).
    """
    global _cells
    if not db_api.api_database_configured():
        return [cells.LOCAL]
    now = time.monotonic()
    clears = _clears
    found = [cell_from_row(row) for row in
             _read('the cell mappings', mappings.list_cells)]
    with _lock:
        # A mapping changed (and the cache cleared) while this read ran:
        # what it read may predate the change.
        if clears == _clears:
            _cells = (now + CACHE_SECONDS, found)
    return list(found)


def cached_cells():
    """The cell mappings last read, however old (the API database may
    have been away since); None when none were read since the last
    :func:`clear_cache`."""
    cached = _cells
    return None if cached is None else list(cached[1])


def get_cell(uuid):
    if uuid is None or not db_api.api_database_configured():
        return cells.LOCAL
    for cell in get_cells():
        if cell.uuid == uuid:
            return cell
    # Created since the list was cached: ask the API database once.
    row = _read('the cell mapping %s' % uuid,
                lambda session: mappings.get_cell(session, uuid))
    clear_cache()
    return cell_from_row(row)


def _local_host_mapped(session, host):
    node = models.ComputeNode.__table__
    return session.execute(sa.select(node.c.id).where(
        node.c.host == host, node.c.mapped.is_(True)).limit(1)).first() \
        is not None


def _read_host_cell(host):
    if not db_api.api_database_configured():
        mapped = _read('the compute nodes of %s' % host,
                       lambda session: _local_host_mapped(session, host),
                       api=False)
        return cells.LOCAL if mapped else None

    def query(session):
        row = mappings.host_mappings_of(session, [host]).get(host)
        return None if row is None else mappings.get_cell(
            session, row.cell_uuid)
    row = _read('the host mapping of %s' % host, query)
    return None if row is None else cell_from_row(row)


def host_cell(host):
    now = time.monotonic()
    cached = _hosts.get(host)
    if cached is not None and now < cached[0]:
        return cached[1]
    cell = _read_host_cell(host)
    with _lock:
        _hosts[host] = (now + CACHE_SECONDS, cell)
    return cell
