"""Queries over ``services``: registration, heartbeats, enable/disable.

A service is up when its last heartbeat (``last_seen_up``, or
``created_at`` until it sends one) lies within ``[DEFAULT]
service_down_time`` seconds of now and it is not forced down
(:func:`is_up`, Nova's DB servicegroup rule).
"""

import datetime

from oslo_db import exception as db_exc
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from scheduler import conf
from scheduler.db import models

CONF = conf.CONF
_SERVICE = models.Service.__table__
# heartbeat_many's hosts on PostgreSQL: one array parameter, as rows.
_BEATING = sa.func.unnest(sa.bindparam(
    'hosts', type_=postgresql.ARRAY(_SERVICE.c.host.type))).table_valued(
        'host').render_derived(name='beating')


def _alive_values(now):
    # updated_at stays: it marks the row's changes for the schedulers'
    # host caches, which read liveness from last_seen_up (a heartbeat of
    # a live service changes nothing they need to read).
    return dict(last_seen_up=now, updated_at=_SERVICE.c.updated_at,
                report_count=_SERVICE.c.report_count + 1)


def _heartbeat_values(now, topic, version):
    values = _alive_values(now)
    values['topic'] = topic
    if version is not None:
        values['version'] = version
    return values


def _heartbeat(session, host, binary, topic, now, version=None):
    result = session.execute(
        sa.update(_SERVICE)
        .where(_SERVICE.c.host == host, _SERVICE.c.binary == binary)
        .values(**_heartbeat_values(now, topic, version)))
    return result.rowcount == 1


def report_alive(session, host, binary, topic, version=None):
    """Record a heartbeat, creating the service row on first report;
    ``version``: the service version it runs, when it says
    (``scheduler.version``).

    Returns the service row as it is after the heartbeat. The worker
    processes of one service heartbeat as the same row; when several
    register it at once, one inserts it and the others update it.
    """
    now = models.utcnow()
    if not _heartbeat(session, host, binary, topic, now, version):
        try:
            # A savepoint, so that losing the race does not abort the
            # caller's transaction (PostgreSQL would).
            with session.begin_nested():
                session.execute(sa.insert(_SERVICE).values(
                    host=host, binary=binary, topic=topic, disabled=False,
                    forced_down=False, last_seen_up=now, report_count=1,
                    created_at=now, updated_at=now, version=version))
        except db_exc.DBDuplicateEntry:
            _heartbeat(session, host, binary, topic, now, version)
    return get_service(session, host, binary)


def heartbeat_many(session, binary, topic, hosts, version=None):
    """Record a heartbeat of each of ``hosts``' ``binary`` service (all
    running ``version``, when known) in one UPDATE; ``{host: disabled}``
    of the rows that exist (the others must register through
    :func:`report_alive`)."""
    hosts = sorted(set(hosts))
    if not hosts:
        return {}
    values = _heartbeat_values(models.utcnow(), topic, version)
    if session.bind.dialect.name == 'postgresql':
        # One statement, the hosts one array parameter joined as rows:
        # at 1,000 hosts a batch and 100,000 services, a third of the
        # client's CPU of an IN list (a parameter per host) and a SELECT
        # after it, and two thirds of the server's (issue 53: the
        # heartbeats of 100,000 computes share the database with the
        # schedulers' claims).
        rows = session.execute(
            sa.update(_SERVICE)
            .where(_SERVICE.c.binary == binary,
                   _SERVICE.c.host == _BEATING.c.host)
            .values(**values)
            .returning(_SERVICE.c.host, _SERVICE.c.disabled),
            {'hosts': hosts})
        return {row.host: bool(row.disabled) for row in rows}
    session.execute(
        sa.update(_SERVICE)
        .where(_SERVICE.c.binary == binary, _SERVICE.c.host.in_(hosts))
        .values(**values))
    rows = session.execute(
        sa.select(_SERVICE.c.host, _SERVICE.c.disabled)
        .where(_SERVICE.c.binary == binary, _SERVICE.c.host.in_(hosts)))
    return {row.host: bool(row.disabled) for row in rows}


def heartbeat_every(session, binary):
    """Record a heartbeat of every ``binary`` service in one UPDATE, as
    :func:`heartbeat_many` would (topics and versions kept): for the
    simulator's and the benchmarks' computes, which are rows, not
    agents. Returns how many rows it wrote."""
    return session.execute(
        sa.update(_SERVICE).where(_SERVICE.c.binary == binary)
        .values(**_alive_values(models.utcnow()))).rowcount


def get_service(session, host, binary):
    return session.execute(
        sa.select(_SERVICE).where(_SERVICE.c.host == host,
                                  _SERVICE.c.binary == binary)).first()


def list_services(session, binary=None):
    query = sa.select(_SERVICE).order_by(_SERVICE.c.binary, _SERVICE.c.host)
    if binary is not None:
        query = query.where(_SERVICE.c.binary == binary)
    return session.execute(query).all()


def set_disabled(session, host, binary, disabled, reason=None):
    """Disable or enable a service; False if there is no such service."""
    result = session.execute(
        sa.update(_SERVICE)
        .where(_SERVICE.c.host == host, _SERVICE.c.binary == binary)
        .values(disabled=disabled,
                disabled_reason=reason if disabled else None,
                updated_at=models.utcnow()))
    return result.rowcount == 1


def is_up(service, now=None):
    """True if the service row heartbeated within service_down_time of
    now, either way, and is not forced down: Nova's DB servicegroup rule.
    A service that never heartbeated counts from its ``created_at``."""
    if service is None or service.forced_down:
        return False
    heartbeat = service.last_seen_up or getattr(service, 'created_at', None)
    if heartbeat is None:
        return False
    now = now or models.utcnow()
    window = datetime.timedelta(seconds=CONF.service_down_time)
    return abs(now - heartbeat) <= window
