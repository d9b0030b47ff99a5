"""Queries over host aggregates: their hosts and their metadata.

An aggregate groups compute hosts (by service host name) and carries
key/value metadata. The scheduler reads two kinds of keys:

* ``availability_zone``: the zone of every host of the aggregate (a host
  in no zone aggregate is in ``[DEFAULT] default_availability_zone``);
* ``<name>_weight_multiplier``: overrides the weigher multiplier option of
  the same name for the aggregate's hosts.

Every change to an aggregate, its hosts or its metadata touches the
aggregate's ``updated_at``, so that :func:`fingerprint` tells a reader
cheaply whether anything changed since it last looked.

Aggregates live where Nova keeps them: in the API database (sessions of
:func:`scheduler.db.api.api_writer` and
:func:`~scheduler.db.api.api_reader`), which is ``[database]`` itself
when no ``[api_database]`` is set. The queries are written once over the
cell schema's tables; the API database's have the same names and
definitions (:mod:`scheduler.db.api_models`)::

    with db_api.api_writer() as session:
        agg = aggregates.create(session, 'rack1',
                                metadata={'availability_zone': 'az1'})
        aggregates.add_host(session, agg.id, 'compute-1')
    with db_api.api_reader() as session:
        for agg in aggregates.get_all(session):
            print(agg.name, sorted(agg.hosts), agg.availability_zone)
"""

import collections
import functools
import sys

from oslo_utils import uuidutils
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler import exception
from scheduler.db import models
from scheduler import placement_types

_AGG = models.Aggregate.__table__
_HOST = models.AggregateHost.__table__
_META = models.AggregateMetadata.__table__

AZ_KEY = placement_types.AZ_KEY


class AggregateNotFound(exception.NotFound):
    msg_fmt = "Aggregate %(ident)s could not be found."


class AggregateNameExists(exception.InvalidRequest):
    msg_fmt = "Invalid request: an aggregate named %(name)s already exists."


class AggregateHostExists(exception.InvalidRequest):
    msg_fmt = ("Invalid request: host %(host)s is already in aggregate "
               "%(ident)s.")


class AggregateHostNotFound(exception.NotFound):
    msg_fmt = "Host %(host)s is not in aggregate %(ident)s."


class AvailabilityZoneConflict(exception.InvalidRequest):
    msg_fmt = ("Invalid request: host %(host)s cannot be in availability "
               "zone %(zone)s through aggregate %(ident)s: it is already in "
               "zone(s) %(others)s.")


# The read-only record readers get (defined with the shared types).
Aggregate = placement_types.Aggregate


def _hosts_by_aggregate(batches):
    """``{aggregate id: [host, ...]}`` of lists of ``(aggregate id,
    host)`` rows, each list dropped once read (see :func:`_all_hosts`).
    Rows unpacked, not read by name: at a million hosts a SQLAlchemy
    row's attribute cost a second of a cold start. Host names interned:
    the host cache's nodes and services name the same hosts (one string
    each, not one more per aggregate membership)."""
    hosts = collections.defaultdict(list)
    intern = sys.intern
    for batch in batches:
        for aggregate_id, host in batch:
            hosts[aggregate_id].append(intern(host))
    return hosts


def _build(rows, hosts, meta_rows):
    metadata = {}
    for aggregate_id, key, value in meta_rows:
        metadata.setdefault(aggregate_id, {})[key] = value
    return [Aggregate(id=row.id, uuid=row.uuid, name=row.name,
                      hosts=frozenset(hosts.get(row.id, ())),
                      metadata=metadata.get(row.id, {}))
            for row in rows]


def _all_hosts(session):
    """:func:`_hosts_by_aggregate` of every aggregate's hosts, read as
    the driver's own tuples (a host a row: SQLAlchemy's rows would cost
    more than the rest of the read), made a batch at a time so that
    other threads run in between, and each batch dropped once read: a
    million rows held at once would leave their memory's holes among
    what the host cache keeps."""
    connection = session.connection()
    compiled = sa.select(_HOST.c.aggregate_id, _HOST.c.host).compile(
        dialect=connection.dialect)
    return db_api.driver_read_batches(connection, str(compiled), (),
                                      _hosts_by_aggregate)


def _read(session, where=None):
    query = sa.select(_AGG.c.id, _AGG.c.uuid, _AGG.c.name).order_by(
        _AGG.c.id)
    if where is not None:
        query = query.where(where)
    rows = session.execute(query).all()
    ids = [row.id for row in rows]
    if not ids:
        return []
    if where is None:
        hosts = _all_hosts(session)
        meta_rows = session.execute(sa.select(
            _META.c.aggregate_id, _META.c.key, _META.c.value)).all()
    else:
        hosts = _hosts_by_aggregate([session.execute(
            sa.select(_HOST.c.aggregate_id, _HOST.c.host)
            .where(_HOST.c.aggregate_id.in_(ids))).all()])
        meta_rows = session.execute(
            sa.select(_META.c.aggregate_id, _META.c.key, _META.c.value)
            .where(_META.c.aggregate_id.in_(ids))).all()
    return _build(rows, hosts, meta_rows)


def get_all(session):
    """Every aggregate with its hosts and metadata, in id order."""
    return _read(session)


def get_by_host(session, host):
    """The aggregates ``host`` belongs to."""
    member = sa.select(_HOST.c.aggregate_id).where(_HOST.c.host == host)
    return _read(session, _AGG.c.id.in_(member))


def get(session, ident):
    """One aggregate by id, uuid or name; AggregateNotFound otherwise."""
    if isinstance(ident, int) or (isinstance(ident, str)
                                  and ident.isdigit()):
        where = _AGG.c.id == int(ident)
    elif uuidutils.is_uuid_like(ident):
        where = _AGG.c.uuid == ident
    else:
        where = _AGG.c.name == ident
    found = _read(session, where)
    if not found:
        raise AggregateNotFound(ident=ident)
    return found[0]


def fingerprint(session):
    """A value that changes whenever any aggregate, host or key changes
    (one statement: each refresh asks)."""
    return tuple(session.execute(fingerprint_statement()).one())


@functools.cache
def fingerprint_statement():
    """The SELECT of :func:`fingerprint`'s one row (built once)."""
    def figures(table, *more):
        return [sa.select(sa.func.count(table.c.id)).scalar_subquery(),
                sa.select(sa.func.sum(table.c.id)).scalar_subquery()] + [
                    sa.select(expression).scalar_subquery()
                    for expression in more]
    return sa.select(
        *figures(_AGG, sa.func.max(_AGG.c.updated_at),
                 sa.func.max(_AGG.c.created_at)),
        *figures(_HOST), *figures(_META))


def _touch(session, aggregate_id):
    session.execute(sa.update(_AGG).where(_AGG.c.id == aggregate_id)
                    .values(updated_at=models.utcnow()))


def _check_zone(session, aggregate, hosts, zone):
    """Refuse to put ``hosts`` in ``zone`` if another aggregate already
    puts one of them in another zone."""
    if zone is None:
        return
    hosts = sorted(hosts)
    for start in range(0, len(hosts), 500):
        chunk = hosts[start:start + 500]
        rows = session.execute(
            sa.select(_HOST.c.host, _META.c.value)
            .join(_META, _META.c.aggregate_id == _HOST.c.aggregate_id)
            .where(_META.c.key == AZ_KEY, _META.c.value != zone,
                   _HOST.c.host.in_(chunk),
                   _HOST.c.aggregate_id != aggregate.id)).all()
        if rows:
            host = rows[0].host
            others = sorted({row.value for row in rows if row.host == host})
            raise AvailabilityZoneConflict(host=host, zone=zone,
                                           ident=aggregate.name,
                                           others=', '.join(others))


def create(session, name, metadata=None, uuid=None):
    """Create an aggregate; AggregateNameExists if the name is taken."""
    exists = session.execute(
        sa.select(_AGG.c.id).where(_AGG.c.name == name)).first()
    if exists is not None:
        raise AggregateNameExists(name=name)
    now = models.utcnow()
    result = session.execute(sa.insert(_AGG).values(
        uuid=uuid or uuidutils.generate_uuid(), name=name, created_at=now,
        updated_at=now))
    aggregate_id = result.inserted_primary_key[0]
    if metadata:
        update_metadata(session, aggregate_id, metadata)
    return get(session, aggregate_id)


def delete(session, ident):
    """Delete an aggregate, its host list and its metadata."""
    aggregate = get(session, ident)
    session.execute(sa.delete(_HOST).where(
        _HOST.c.aggregate_id == aggregate.id))
    session.execute(sa.delete(_META).where(
        _META.c.aggregate_id == aggregate.id))
    session.execute(sa.delete(_AGG).where(_AGG.c.id == aggregate.id))


def add_host(session, ident, host):
    """Add a host; refused if it would put the host in two zones."""
    return add_hosts(session, ident, [host])


def add_hosts(session, ident, hosts):
    """Add several hosts at once (see :func:`add_host`)."""
    aggregate = get(session, ident)
    hosts = list(dict.fromkeys(hosts))
    for host in hosts:
        if host in aggregate.hosts:
            raise AggregateHostExists(host=host, ident=aggregate.name)
    _check_zone(session, aggregate, hosts, aggregate.availability_zone)
    if hosts:
        session.execute(sa.insert(_HOST), [
            {'aggregate_id': aggregate.id, 'host': host} for host in hosts])
    _touch(session, aggregate.id)
    return get(session, aggregate.id)


def remove_host(session, ident, host):
    """Remove a host; AggregateHostNotFound if it is not a member."""
    aggregate = get(session, ident)
    result = session.execute(sa.delete(_HOST).where(
        _HOST.c.aggregate_id == aggregate.id, _HOST.c.host == host))
    if result.rowcount == 0:
        raise AggregateHostNotFound(host=host, ident=aggregate.name)
    _touch(session, aggregate.id)
    return get(session, aggregate.id)


def update_metadata(session, ident, metadata):
    """Set keys (a value of None deletes the key), as Nova's API does.

    Setting ``availability_zone`` is refused if a host of the aggregate is
    already in another zone through another aggregate.
    """
    aggregate = get(session, ident)
    if metadata.get(AZ_KEY) is not None:
        _check_zone(session, aggregate, aggregate.hosts, metadata[AZ_KEY])
    for key, value in metadata.items():
        session.execute(sa.delete(_META).where(
            _META.c.aggregate_id == aggregate.id, _META.c.key == key))
        if value is not None:
            session.execute(sa.insert(_META).values(
                aggregate_id=aggregate.id, key=key, value=str(value)))
    _touch(session, aggregate.id)
    return get(session, aggregate.id)
