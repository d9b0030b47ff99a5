"""The SQL reads of one host cache refresh in one database.

:class:`scheduler.host_manager.HostManager` reads ``[database]`` with
these when there are no cells, and :mod:`scheduler.host_manager_cells`
reads each cell's database with the same functions, so that both see
the same rows. The nodes written since the watermark and the nodes to
read again come in one statement (a ``UNION ALL`` of indexed selects)::

    with db_api.reader() as session:
        nodes, services = host_reads.read_changes(
            session, since, reread_ids, alive_since, dead_hosts)
"""

import sqlalchemy as sa

from scheduler.db import compute_nodes
from scheduler.db import models

COMPUTE_BINARY = 'gantt-compute'

_SERVICE = models.Service.__table__
_SERVICE_COLUMNS = (_SERVICE.c.id, _SERVICE.c.host, _SERVICE.c.binary,
                    _SERVICE.c.disabled, _SERVICE.c.disabled_reason,
                    _SERVICE.c.forced_down, _SERVICE.c.last_seen_up,
                    _SERVICE.c.updated_at, _SERVICE.c.created_at)


def _select_services(since=None, hosts=None, dead_before=None):
    query = sa.select(*_SERVICE_COLUMNS).where(
        _SERVICE.c.binary == COMPUTE_BINARY)
    if since is not None:
        query = query.where(_SERVICE.c.updated_at >= since)
    if hosts is not None:
        query = query.where(_SERVICE.c.host.in_(list(hosts)))
    if dead_before is not None:
        query = query.where(sa.or_(_SERVICE.c.last_seen_up < dead_before,
                                   _SERVICE.c.last_seen_up.is_(None)))
    return query


def read_services(session, since=None, hosts=None, dead_before=None):
    """The compute services (all, or those matching every criterion
    given)."""
    return session.execute(
        _select_services(since, hosts, dead_before)).all()


def read_service_changes(session, since, alive_since, dead):
    """The service rows written since ``since``, those dead at
    ``alive_since`` (few: as many as dead services) and those of the
    ``dead`` hosts that heartbeated again; heartbeats of live services
    are not read. Each row once."""
    rows = read_services(session, since=since)
    rows.extend(read_services(session, dead_before=alive_since))
    revived = dead - {row.host for row in rows}
    if revived:
        rows.extend(read_services(session, hosts=revived))
    return _unique(rows)


def read_changes(session, since, reread, alive_since, dead, known=None):
    """``(node rows, service rows)`` of an incremental refresh: the nodes
    written since ``since`` and the nodes ``reread`` (ids) whatever
    their ``updated_at``, and :func:`read_service_changes`. ``known``:
    see :func:`compute_nodes.written_since`."""
    nodes = compute_nodes.written_since(session, since, raw_documents=True,
                                        ids=reread, known=known)
    return nodes, read_service_changes(session, since, alive_since, dead)


def read_full(session, known):
    """``(changed node rows, removed ids, every service)`` of a full
    read against ``{id: generation}`` (empty: every node)."""
    nodes, removed = compute_nodes.changed_since(session, known,
                                                 raw_documents=True)
    return nodes, removed, read_services(session)


def read_nodes_of(session, node_ids):
    """The rows of ``node_ids`` and the services of their hosts."""
    rows = compute_nodes.get_nodes(session, ids=node_ids, raw_documents=True)
    return rows, read_services(session, hosts={row.host for row in rows})


def _unique(rows):
    """``rows`` without the repeats of an id (a row matched by several
    parts of a union), in id order."""
    return sorted({row.id: row for row in rows}.values(),
                  key=lambda row: row.id)
