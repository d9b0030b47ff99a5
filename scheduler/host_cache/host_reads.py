"""The SQL reads of one host cache refresh in one database.

:class:`scheduler.host_cache.host_manager.HostManager` reads ``[database]``
with these when there are no cells, and :mod:`scheduler.host_cache.cell_gather`
reads each cell's database with the same queries, so that both see
the same rows. The nodes written since the watermark and the nodes to
read again come in one statement (a ``UNION ALL`` of indexed selects)::

    with db_api.reader() as session:
        nodes, services = host_reads.read_changes(
            session, since, reread_ids, alive_since, dead_hosts)

A cell's incremental read is one statement: the same node rows and
service rows, in one ``UNION ALL`` (:func:`read_cell_changes`, on a
:func:`statement_connection`; one round trip on psycopg2, where it runs
outside a transaction), so that what a refresh costs per cell does not
grow with the number of things it asks for.
"""

import collections
import contextlib
import datetime
import functools
import operator

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import compute_nodes
from scheduler.db import models

COMPUTE_BINARY = 'gantt-compute'

_SERVICE = models.Service.__table__
# (Not ``updated_at``: the reads select by it, and nothing reads its
# value; a timestamp of every service is a tenth of a second at 100,000.
# ``created_at`` only where the service never sent a heartbeat: once it
# has, nothing reads it, and the driver makes a datetime of every one it
# gets, half a second of a million-row cold start.)
_SERVICE_COLUMNS = (_SERVICE.c.id, _SERVICE.c.host, _SERVICE.c.binary,
                    _SERVICE.c.disabled, _SERVICE.c.disabled_reason,
                    _SERVICE.c.forced_down, _SERVICE.c.last_seen_up,
                    sa.case((_SERVICE.c.last_seen_up.is_(None),
                             _SERVICE.c.created_at)).label('created_at'))


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
    given), as ServiceRow tuples."""
    if since is None and hosts is None and dead_before is None:
        return list(stream_services(session))
    return named_rows(ServiceRow, session.execute(
        _select_services(since, hosts, dead_before)).all())


def stream_services(session):
    """Every compute service as ServiceRow tuples, each as it comes: on
    psycopg2 a batch at a time from a server-side cursor (fetching
    100,000 rows at once is one call that holds the interpreter for
    100-150 ms, stalling the requests; issue 53), so that a reader that
    keeps only what it makes of each row never holds them all (a
    million rows held while the nodes are read leave a quarter of a
    GB of holes in the interpreter's memory)."""
    connection = session.connection()
    if connection.dialect.driver == 'psycopg2':
        yield from _driver_stream(connection, 'services', ServiceRow)
        return
    yield from named_rows(ServiceRow, session.execute(
        _select_services()).all())


def _driver_stream(connection, name, row_type):
    """The rows of the whole read ``name`` as ``row_type`` tuples, from
    psycopg2's own server-side cursor a batch at a time (see
    :func:`_driver_read`)."""
    query, params, processors = _driver_read(connection.dialect, name,
                                             row_type)
    make = _maker(row_type)
    for batch in db_api.driver_batches(connection, query, params,
                                       compute_nodes.STREAM_BATCH):
        yield from map(make, _typed(batch, processors))


def named_rows(row_type, rows):
    """SQLAlchemy rows of ``row_type``'s fields, in its order, as
    ``row_type``'s named tuples: the host cache reads some forty fields
    of each node row as it builds a host state, and a field of a
    SQLAlchemy 2.1 Row costs ~0.3 us where a named tuple's costs
    ~0.01 us (100,000 nodes: about a second of a cold start).

    :raises RuntimeError: the rows have other fields (a query and its
        row type that no longer agree).
    """
    rows = list(rows)
    if rows and tuple(rows[0]._fields) != row_type._fields:
        raise RuntimeError('rows of %s read as %s'
                           % (', '.join(rows[0]._fields), row_type.__name__))
    make = row_type._make
    return [make(row) for row in rows]


def stream_nodes(session):
    """:func:`compute_nodes.stream_nodes` (with the raw documents) as
    NodeRow tuples, each as it comes (the first checked as
    :func:`named_rows` checks). On psycopg2 the driver's own server-side
    cursor (see :func:`_driver_read`)."""
    connection = session.connection()
    if connection.dialect.driver == 'psycopg2':
        yield from _driver_stream(connection, 'nodes', NodeRow)
        return
    rows = compute_nodes.stream_nodes(session, raw_documents=True)
    first = next(rows, None)
    if first is None:
        return
    yield from named_rows(NodeRow, [first])
    yield from map(NodeRow._make, rows)


def _maker(row_type):
    """``row_type`` (a named tuple) of a sequence of as many values as it
    has fields, by ``tuple.__new__``: its ``_make`` also counts them, in
    Python, once a row (a million rows of a cold start: 0.15 s), where
    :func:`_driver_read` checked the query's columns once."""
    return functools.partial(tuple.__new__, row_type)


# The whole reads a first load (and a full read) makes, by name.
_WHOLE_READS = {
    'nodes': lambda: compute_nodes.full_read(raw_documents=True),
    'services': _select_services,
}


# Keyed on the dialect: one per cell engine; bounded, as engines come back.
@functools.lru_cache(maxsize=64)
def _driver_read(dialect, name, row_type):
    """``(query string, parameters, result processors)`` of the whole
    read ``name`` for psycopg2's own cursor, compiled once: at 100,000
    rows SQLAlchemy's result rows cost more than the driver's fetch (the
    node rows of a cold start: 0.73-1.09 s in all, 0.46-0.65 s so, on
    the 2-CPU machine), and the result processors
    (:func:`_result_processors`).

    :raises RuntimeError: the statement's columns are not
        ``row_type``'s fields.
    """
    statement = _WHOLE_READS[name]()
    names = tuple(column.name for column in statement.selected_columns)
    if names != row_type._fields:
        raise RuntimeError('rows of %s read as %s'
                           % (', '.join(names), row_type.__name__))
    processors = _result_processors(statement, dialect)
    compiled = statement.compile(dialect=dialect)
    return str(compiled), dict(compiled.params), processors


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
    nodes = named_rows(NodeRow, compute_nodes.written_since(
        session, since, raw_documents=True, ids=reread, known=known))
    return nodes, read_service_changes(session, since, alive_since, dead)


def read_full_nodes(session, known):
    """``(changed node rows, removed ids)`` of a full read against
    ``{id: generation}`` (empty: every node)."""
    nodes, removed = compute_nodes.changed_since(session, known,
                                                 raw_documents=True)
    return named_rows(NodeRow, nodes), removed


def read_full(session, known):
    """``(changed node rows, removed ids, every service)`` of a full
    read against ``{id: generation}`` (empty: every node)."""
    return (*read_full_nodes(session, known), read_services(session))


# -- a full read's services, compared on the server -------------------------

# A full read leaves the comparison of the services to the database
# (read_service_differences) while the cache holds at most this many
# that are not usual; beyond, it reads them all. A service is usual when
# enabled without a reason, not forced down, and alive: where the cache
# and the database both hold a usual service of the same id, they agree
# on everything a refresh compares (Applying._compare_services).
UNUSUAL_AT_MOST = 1000


def _unusual_in_sql():
    """The condition of a compute service row that is not usual (see
    :data:`UNUSUAL_AT_MOST`) at the parameters ``alive_since`` and
    ``alive_until``: judged as Applying._compare_services judges the
    row (its ``last_seen_up``, else its ``created_at``, between the
    two)."""
    heartbeat = sa.func.coalesce(_SERVICE.c.last_seen_up,
                                 _SERVICE.c.created_at)
    return sa.or_(_SERVICE.c.disabled.is_(True),
                  _SERVICE.c.disabled_reason.is_not(None),
                  _SERVICE.c.forced_down.is_(True),
                  heartbeat.is_(None),
                  heartbeat < sa.bindparam('alive_since'),
                  heartbeat > sa.bindparam('alive_until'))


def _service_digest_statement():
    """Count, sum, least and greatest of the compute services' ids."""
    ids = _SERVICE.c.id
    return sa.select(sa.func.count(ids), sa.func.sum(ids), sa.func.min(ids),
                     sa.func.max(ids)).where(
                         _SERVICE.c.binary == COMPUTE_BINARY)


def service_digest(ids):
    """What :func:`_service_digest_statement` gives for ``ids`` (a
    list)."""
    if not ids:
        return (0, None, None, None)
    return (len(ids), sum(ids), min(ids), max(ids))


def read_service_differences(session, cached, alive_since, alive_until):
    """A full read's compute services, compared with ``cached`` (the
    cache's ``{host: ServiceInfo}``) on the server: the rows that may
    differ from the cached ones, as ServiceRow tuples, or None when the
    database cannot tell them apart from the rest (then read them all).

    A full read reads every service again to notice the ones deleted and
    the ones written with an ``updated_at`` older than the incremental
    reads look (a writer whose clock lags). Nearly all are usual (see
    :data:`UNUSUAL_AT_MOST`) in the cache and in the database alike, and
    for those there is nothing to compare; at 100,000 services, reading
    and comparing every row held the refresh thread, and the requests
    that share the interpreter with it, for over half a second (issue
    53). So the database sends the rows that are not usual in SQL and
    the rows of the services not usual in the cache, and the count, sum,
    least and greatest of the compute services' ids: the cache's
    (:func:`service_digest`) unless a service was deleted or added
    unseen. None when they differ, or when the cache holds more than
    :data:`UNUSUAL_AT_MOST` unusual services (a mass outage: as many
    ids to send as rows to read).

    ``cached`` is read without a lock: only the refresh writes it, but
    for rows newer than the ones read here.
    """
    # One walk of the cache for the digest's ids and the services not
    # usual, judged inline (a function call per service cost 35 ms at
    # 100,000; two walks 30 ms, one 20 ms).
    ids = []
    unusual = []
    for service in cached.values():
        ids.append(service.id)
        if (service.alive is not True or service.disabled
                or service.disabled_reason is not None
                or service.forced_down):
            unusual.append(service.id)
    if len(unusual) > UNUSUAL_AT_MOST:
        return None
    digest = session.execute(_service_digest_statement()).one()
    if tuple(digest) != service_digest(ids):
        return None
    differing = _unusual_in_sql()
    if unusual:
        differing = sa.or_(differing, _SERVICE.c.id.in_(
            sa.bindparam('unusual', expanding=True)))
    params = {'alive_since': alive_since, 'alive_until': alive_until}
    if unusual:
        params['unusual'] = unusual
    return named_rows(ServiceRow, session.execute(
        sa.select(*_SERVICE_COLUMNS)
        .where(_SERVICE.c.binary == COMPUTE_BINARY, differing)
        .order_by(_SERVICE.c.id), params).all())


def read_nodes_of(session, node_ids):
    """The rows of ``node_ids`` and the services of their hosts."""
    rows = named_rows(NodeRow, compute_nodes.get_nodes(
        session, ids=node_ids, raw_documents=True))
    return rows, read_services(session, hosts={row.host for row in rows})


def _unique(rows):
    """``rows`` without the repeats of an id (a row matched by several
    parts of a union), in id order."""
    return sorted({row.id: row for row in rows}.values(),
                  key=lambda row: row.id)


# -- a cell's incremental read: one statement ---------------------------------

_NODE = models.ComputeNode.__table__
NODE_FIELDS = tuple(column.name
                    for column in compute_nodes.cache_columns())
SERVICE_FIELDS = tuple(column.name for column in _SERVICE_COLUMNS)
NodeRow = collections.namedtuple('NodeRow', NODE_FIELDS)
ServiceRow = collections.namedtuple('ServiceRow', SERVICE_FIELDS)
_ID_AT = NODE_FIELDS.index('id')


def _node_columns(real, arrays=False):
    """The node half of a row of :func:`_changes_statement`: the node's
    columns (the shared documents as JSON text, the id plus
    ``:id_offset``), or NULLs of their types."""
    columns = []
    for column in compute_nodes.cache_columns():
        column_type = sa.Text() if column.name in \
            compute_nodes.SHARED_DOCUMENTS else column.type
        if not real:
            value = sa.type_coerce(sa.null(), column_type)
        elif column.name == 'id':
            offset = sa.bindparam('id_offset', type_=sa.BigInteger())
            if arrays:
                # Prepared, the offset would be typed as the id column.
                offset = sa.cast(offset, sa.BigInteger())
            value = column + offset
        else:
            value = sa.type_coerce(column, column_type)
        columns.append(value.label(column.name))
    return columns


def _service_columns(real):
    """The service half: its columns (labelled ``service_*``), or NULLs
    of their types."""
    return [(column if real else sa.type_coerce(sa.null(), column.type))
            .label('service_' + column.name) for column in _SERVICE_COLUMNS]


@functools.cache
def _changes_statement(with_reread, with_revived, arrays=False,
                       with_known=False):
    """The incremental read of one cell as one ``UNION ALL``, each branch
    an indexed select, each row a node row or a service row (the other
    half NULL). Built once per shape (the lists of ids and hosts are
    expanding parameters, or with ``arrays`` PostgreSQL arrays compared
    with ``= ANY``), so that executing it costs no compilation.

    ``with_known`` (with ``arrays``): the nodes written since ``since``
    leave out those whose id and generation are a pair of the arrays
    ``known_ids`` and ``known_generations``: the rows the cache holds
    already, which the slack would otherwise send again at each
    refresh."""
    node_row = (*_node_columns(True, arrays), *_service_columns(False))
    service_row = (*_node_columns(False), *_service_columns(True))
    compute = _SERVICE.c.binary == COMPUTE_BINARY
    since = sa.bindparam('since')
    alive_since = sa.bindparam('alive_since')
    # A node row, then a service row: together they give every column a
    # type (PostgreSQL types the columns of a union pairwise, from the
    # first branches; a NULL in both would be text).
    known = [_not_known()] if with_known else []
    # The nodes updated since, and those claimed on (a claim leaves
    # updated_at alone). Prepared (``arrays``), each range also has an
    # upper bound, a parameter given as the latest time there is
    # (UNTIL): the plan made for any values of the parameters (the
    # server's generic plan, which it keeps after a few executions)
    # then expects a few rows, as a refresh finds, and reaches them
    # through the indexes. With the lower bound alone it expected a
    # third of each table, and read every node to find those claimed
    # on: under load, 6 ms a refresh at 5,000 nodes (most of it that
    # scan), 12 ms at 20,000 in process, for about 100 nodes to send.
    # The services' ranges too (a lower bound, EARLIEST, for the dead):
    # bounded below only, the generic plan read the services whole,
    # twice a refresh (1.2 ms of the server's CPU at 10,000 services).
    until = sa.bindparam('until') if arrays else None
    updated, claimed = compute_nodes.written_conditions(since, until)
    written = [_SERVICE.c.updated_at >= since]
    silent = [_SERVICE.c.last_seen_up < alive_since]
    if arrays:
        written.append(_SERVICE.c.updated_at < until)
        silent.append(_SERVICE.c.last_seen_up >= sa.bindparam('earliest'))
    branches = [
        sa.select(*node_row).where(updated, *known),
        sa.select(*service_row).where(compute, *written),
        sa.select(*node_row).where(claimed, *known),
        sa.select(*service_row).where(
            compute, sa.or_(sa.and_(*silent),
                            _SERVICE.c.last_seen_up.is_(None)))]
    if with_reread:
        branches.append(sa.select(*node_row).where(
            _one_of(_NODE.c.id, 'reread', arrays)))
    if with_revived:
        # The hosts believed dead that heartbeated again (those still
        # dead come with the branch above).
        branches.append(sa.select(*service_row).where(
            compute, _one_of(_SERVICE.c.host, 'dead', arrays),
            _SERVICE.c.last_seen_up >= alive_since))
    return sa.union_all(*branches)


def _not_known():
    """PostgreSQL: the node's id and generation are not a pair of the
    arrays ``known_ids`` and ``known_generations``. As ``NOT IN`` a
    subquery, which the server hashes: the planner believes few rows
    were written lately (the statistics lag the clock), and for a ``NOT
    EXISTS`` chose a nested loop, each row against every pair (40 ms
    for 1,000 of each, against 1 ms). Neither column is NULL."""
    known = sa.func.unnest(
        sa.cast(sa.bindparam('known_ids'), postgresql.ARRAY(sa.BigInteger)),
        sa.cast(sa.bindparam('known_generations'),
                postgresql.ARRAY(sa.BigInteger)),
    ).table_valued('id', 'generation').render_derived(name='known')
    return sa.tuple_(_NODE.c.id, _NODE.c.generation).not_in(
        sa.select(known.c.id, known.c.generation))


def _one_of(column, name, arrays):
    """``column`` is one of the list parameter ``name``."""
    if not arrays:
        return column.in_(sa.bindparam(name, expanding=True))
    return column == sa.any_(sa.bindparam(
        name, type_=postgresql.ARRAY(column.type)))


# The upper bound of the prepared read's ranges, and the lower bound of
# the dead services' (see _changes_statement): none in effect.
UNTIL = datetime.datetime.max
EARLIEST = datetime.datetime.min

# The parameters each read of a cell gives.
_READ_PARAMETERS = ('since', 'until', 'earliest', 'alive_since',
                    'id_offset', 'reread', 'dead', 'known_ids',
                    'known_generations')


# Keyed on the dialect: one per cell engine; bounded, as engines come back.
@functools.lru_cache(maxsize=64)
def _driver_changes(with_reread, with_revived, dialect, with_known=False):
    """``(db_api.Prepared, result processors)`` of
    :func:`_changes_statement` for psycopg2's own cursor: prepared on
    each pooled connection (planning the ``UNION ALL`` cost the server
    more than running it), the lists as arrays (so that one statement
    serves every length), and the result processors
    (:func:`_result_processors`)."""
    statement = _changes_statement(with_reread, with_revived, arrays=True,
                                   with_known=with_known)
    processors = _result_processors(statement, dialect)
    return (db_api.Prepared.of(statement, dialect, _READ_PARAMETERS),
            processors)


def prepared_cell_read(dialect, since, reread, alive_since, dead,
                       id_offset=0, known=None):
    """``(db_api.Prepared, parameters, result processors)`` of
    :func:`read_cell_changes` on psycopg2 (see :func:`_driver_changes`),
    for a caller that runs the query string on a connection of its own
    (:mod:`scheduler.host_cache.cell_reads`); :func:`cell_read_rows` makes
    its rows what :func:`read_cell_changes` returns."""
    prepared, processors = _driver_changes(bool(reread), bool(dead), dialect,
                                           known is not None)
    params = _cell_read_parameters(since, reread, alive_since, dead,
                                   id_offset)
    params['until'] = UNTIL
    params['earliest'] = EARLIEST
    if known is not None:
        # As array literals: psycopg2 adapts a list element by element
        # (1.6 ms for 600 pairs on the 2-CPU machine; the text, 0.1 ms).
        params['known_ids'], params['known_generations'] = (
            '{%s}' % ','.join(map(str, values)) for values in known)
    return prepared, dict(prepared.defaults, **params), processors


def _cell_read_parameters(since, reread, alive_since, dead, id_offset):
    params = {'since': since, 'alive_since': alive_since,
              'id_offset': id_offset}
    if reread:
        params['reread'] = sorted(reread)
    if dead:
        params['dead'] = sorted(dead)
    return params


def _result_processors(statement, dialect):
    """``(index, processor, keeps None)`` of the columns of
    ``statement`` whose driver's value SQLAlchemy would convert: only our
    own column types (the JSON documents); psycopg2 gives integers,
    floats, booleans, text and timestamps as SQLAlchemy's result would.
    A processor that makes None None again is not called for None (most
    documents of most nodes)."""
    processors = []
    for index, column in enumerate(statement.selected_columns):
        if isinstance(column.type, sa.types.TypeDecorator):
            convert = column.type.result_processor(dialect, None)
            if convert is not None:
                processors.append((index, convert, convert(None) is None))
    return tuple(processors)


def _typed(rows, processors):
    """``rows`` of psycopg2 with our own column types converted as
    SQLAlchemy converts them (see :func:`_result_processors`)."""
    if not processors:
        return rows
    # The columns with a value in some row (a column whose every value
    # is None, as most nodes' documents are, is left alone without a
    # loop in Python over the rows).
    processors = [processor for processor in processors
                  if not processor[2] or list(
                      map(operator.itemgetter(processor[0]), rows)).count(
                          None) != len(rows)]
    if not processors:
        return rows
    typed = []
    for row in rows:
        converted = None
        for index, convert, keeps_none in processors:
            value = row[index]
            if value is None and keeps_none:
                continue
            if converted is None:
                converted = list(row)
            converted[index] = convert(value)
        typed.append(row if converted is None else converted)
    return typed


def cell_read_rows(rows, processors=()):
    """``(node rows, service rows)`` of the rows of the statement of
    :func:`read_cell_changes` (its :func:`prepared_cell_read`'s result
    processors applied first): named tuples, in id order, each once."""
    width = len(NODE_FIELDS)
    nodes, services = {}, {}
    for row in _typed(rows, processors):
        if row[_ID_AT] is not None:
            node = NodeRow._make(row[:width])
            nodes[node.id] = node
        else:
            service = ServiceRow._make(row[width:])
            services[service.id] = service
    return ([nodes[key] for key in sorted(nodes)],
            [services[key] for key in sorted(services)])


def read_cell_changes(connection, since, reread, alive_since, dead,
                      id_offset=0, known=None):
    """``(node rows, service rows)`` of an incremental refresh in one
    statement: the rows :func:`read_changes` reads, as named tuples, in
    id order, each once. Node ids come plus ``id_offset`` (a cell's
    cache ids); ``reread`` holds the node ids of this database.

    ``known``: ``(ids, generations)``, two lists of the same length,
    of nodes whose row the caller holds at that generation: on
    psycopg2 those written since ``since`` are not sent again (the
    caller must leave them out itself elsewhere: they may come)."""
    if connection.dialect.driver == 'psycopg2':
        # The driver's own cursor (see db_api.driver_rows: SQLAlchemy's
        # execution context and result cost more CPU than the round
        # trip), the statement prepared once per pooled connection.
        prepared, params, processors = prepared_cell_read(
            connection.dialect, since, reread, alive_since, dead,
            id_offset, known)
        db_api.prepare_on(connection, {prepared.name: prepared.prepare})
        return cell_read_rows(
            db_api.driver_rows_batched(connection, prepared.execute,
                                       params),
            processors)
    params = _cell_read_parameters(since, reread, alive_since, dead,
                                   id_offset)
    return cell_read_rows(connection.execute(
        _changes_statement(bool(reread), bool(dead)), params).all())


@functools.lru_cache(maxsize=64)
def _driver_fingerprint(dialect):
    return db_api.Prepared.of(db_aggregates.fingerprint_statement(),
                              dialect, ())


def aggregates_fingerprint(connection):
    """:func:`scheduler.db.aggregates.fingerprint` on a Core connection
    (on psycopg2 prepared, on the driver's own cursor)."""
    if connection.dialect.driver != 'psycopg2':
        return db_aggregates.fingerprint(connection)
    prepared = _driver_fingerprint(connection.dialect)
    db_api.prepare_on(connection, {prepared.name: prepared.prepare})
    rows = db_api.driver_rows(connection, prepared.execute,
                              dict(prepared.defaults))
    return tuple(rows[0])


@contextlib.contextmanager
def statement_connection():
    """A Core connection to the targeted database for one read
    statement. On psycopg2 it runs outside a transaction: no ``BEGIN``
    and ``ROLLBACK`` round trips around the statement (one statement
    sees one snapshot anyway)."""
    engine = db_api.get_engine()
    if engine.dialect.driver == 'psycopg2':
        with db_api.autocommit_connection() as connection:
            yield connection
        return
    with engine.connect() as connection:
        yield connection
