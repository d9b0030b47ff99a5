"""Service registration, heartbeats, enable/disable and liveness."""

import datetime
import threading

import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import services

_SERVICE = models.Service.__table__


def alive(host='host1', binary='gantt-compute', topic='compute'):
    with db_api.writer() as session:
        return services.report_alive(session, host, binary, topic)


def get(host='host1', binary='gantt-compute'):
    with db_api.reader() as session:
        return services.get_service(session, host, binary)


def test_first_heartbeat_registers_the_service(any_database):
    before = models.utcnow()

    service = alive()

    assert (service.host, service.binary, service.topic) == (
        'host1', 'gantt-compute', 'compute')
    assert service.report_count == 1
    assert (service.disabled, service.forced_down) == (False, False)
    assert service.disabled_reason is None
    assert before <= service.last_seen_up <= models.utcnow()
    assert get() == service


def test_heartbeats_count_and_move_last_seen_up(any_database):
    first = alive()

    second = alive(topic='compute-v2')

    assert second.id == first.id
    assert second.report_count == 2
    assert second.topic == 'compute-v2'
    assert second.last_seen_up >= first.last_seen_up
    with db_api.reader() as session:
        assert len(services.list_services(session)) == 1


def test_heartbeat_every_service_of_a_binary(any_database):
    first = {host: alive(host) for host in ('host1', 'host2')}
    scheduler = alive('host1', 'gantt-scheduler', 'scheduler')

    with db_api.writer() as session:
        assert services.heartbeat_every(session, 'gantt-compute') == 2

    for host, before in first.items():
        after = get(host)
        assert after.report_count == 2
        assert after.last_seen_up > before.last_seen_up
        # As any heartbeat: the row's updated_at (what the host caches
        # read again) and its topic stay.
        assert after.updated_at == before.updated_at
        assert after.topic == 'compute'
    assert get('host1', 'gantt-scheduler') == scheduler


def test_list_services(any_database):
    alive('host2')
    alive('host1')
    alive('host1', 'gantt-scheduler', 'scheduler')
    with db_api.reader() as session:
        everything = services.list_services(session)
        computes = services.list_services(session, binary='gantt-compute')
    assert [(s.binary, s.host) for s in everything] == [
        ('gantt-compute', 'host1'), ('gantt-compute', 'host2'),
        ('gantt-scheduler', 'host1')]
    assert [s.host for s in computes] == ['host1', 'host2']


def test_set_disabled(any_database):
    alive()
    alive('host2')

    with db_api.writer() as session:
        assert services.set_disabled(session, 'host1', 'gantt-compute',
                                     True, reason='maintenance')
    assert (get().disabled, get().disabled_reason) == (True, 'maintenance')
    assert get('host2').disabled is False

    # A heartbeat does not re-enable it.
    alive()
    assert get().disabled is True

    with db_api.writer() as session:
        assert services.set_disabled(session, 'host1', 'gantt-compute',
                                     False, reason='ignored')
    assert (get().disabled, get().disabled_reason) == (False, None)


def test_set_disabled_on_unknown_service(any_database):
    with db_api.writer() as session:
        assert services.set_disabled(session, 'nowhere', 'gantt-compute',
                                     True) is False
        assert session.scalar(
            sa.select(sa.func.count()).select_from(_SERVICE)) == 0


def test_is_up_follows_service_down_time(any_database, config):
    service = alive()
    seen = service.last_seen_up

    assert services.is_up(service) is True
    assert services.is_up(service, now=seen + datetime.timedelta(
        seconds=60)) is True
    assert services.is_up(service, now=seen + datetime.timedelta(
        seconds=61)) is False

    config.config(service_down_time=120)
    assert services.is_up(service, now=seen + datetime.timedelta(
        seconds=61)) is True
    assert services.is_up(service, now=seen + datetime.timedelta(
        seconds=121)) is False


def test_is_up_false_when_forced_down(any_database):
    alive()
    with db_api.writer() as session:
        session.execute(sa.update(_SERVICE).values(forced_down=True))
    assert services.is_up(get()) is False
    assert services.is_up(None) is False


def test_never_seen_counts_from_created_at(any_database):
    """Nova's DB servicegroup driver reads last_seen_up or, if unset,
    created_at: a row made a moment ago is up, one made 5 minutes ago
    (service_down_time 60) is down."""
    alive()
    with db_api.writer() as session:
        session.execute(sa.update(_SERVICE).values(last_seen_up=None))
    assert services.is_up(get()) is True
    with db_api.writer() as session:
        session.execute(sa.update(_SERVICE).values(
            created_at=models.utcnow() - datetime.timedelta(minutes=5)))
    assert services.is_up(get()) is False


def test_a_heartbeat_far_in_the_future_is_down(any_database):
    """Nova compares abs(now - heartbeat) with service_down_time."""
    alive()
    seen = get().last_seen_up
    assert services.is_up(get(), now=seen - datetime.timedelta(
        seconds=59)) is True
    assert services.is_up(get(), now=seen - datetime.timedelta(
        seconds=61)) is False


def test_is_up_with_stale_heartbeat_in_the_database(any_database):
    alive()
    with db_api.writer() as session:
        session.execute(sa.update(_SERVICE).values(
            last_seen_up=models.utcnow() - datetime.timedelta(minutes=5)))
    assert services.is_up(get()) is False
    alive()
    assert services.is_up(get()) is True


def test_concurrent_first_heartbeats_register_once(any_database):
    # Every worker process of a scheduler heartbeats as the same service.
    workers = 8
    barrier = threading.Barrier(workers)
    errors = []

    def heartbeat():
        try:
            barrier.wait(timeout=30)
            alive('host1', 'gantt-scheduler', 'scheduler')
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=heartbeat) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    with db_api.reader() as session:
        rows = services.list_services(session)
    assert [(row.host, row.report_count) for row in rows] == [
        ('host1', workers)]


def test_the_version_a_heartbeat_reports_is_kept_until_another_says(
        any_database):
    with db_api.writer() as session:
        row = services.report_alive(session, 'h1', 'gantt-compute',
                                    'compute', 1)
        assert row.version == 1
        # A heartbeat that says nothing (a compute capped below conductor
        # API 1.2) leaves the version recorded.
        assert services.report_alive(session, 'h1', 'gantt-compute',
                                     'compute').version == 1
        services.report_alive(session, 'h2', 'gantt-compute', 'compute')
        services.heartbeat_many(session, 'gantt-compute', 'compute',
                                ['h1', 'h2'], 2)
        assert {row.host: row.version for row in services.list_services(
            session)} == {'h1': 2, 'h2': 2}
        services.heartbeat_many(session, 'gantt-compute', 'compute',
                                ['h1', 'h2'])
        assert {row.host: row.version for row in services.list_services(
            session)} == {'h1': 2, 'h2': 2}


def test_a_batch_of_heartbeats_answers_for_the_rows_it_found(any_database):
    """heartbeat_many moves each existing row's last_seen_up and count
    (not its updated_at, which marks changes for the host caches) and
    answers ``{host: disabled}`` for those rows only: a host with no
    row, or with a row of another binary, is left for report_alive."""
    alive('up')
    alive('off')
    alive('other', binary='gantt-scheduler', topic='scheduler')
    with db_api.writer() as session:
        services.set_disabled(session, 'off', 'gantt-compute', True,
                              'maintenance')
    with db_api.reader() as session:
        before = {row.host: row for row in services.list_services(session)}

    with db_api.writer() as session:
        answers = services.heartbeat_many(
            session, 'gantt-compute', 'compute',
            ['up', 'off', 'other', 'new', 'up'])

    assert answers == {'up': False, 'off': True}
    with db_api.reader() as session:
        after = {row.host: row for row in services.list_services(session)}
    assert set(after) == {'up', 'off', 'other'}
    for host in ('up', 'off'):
        assert after[host].report_count == before[host].report_count + 1
        assert after[host].last_seen_up > before[host].last_seen_up
        assert after[host].updated_at == before[host].updated_at
    assert after['other'] == before['other']


def test_a_batch_of_heartbeats_is_one_statement_on_postgresql(
        postgresql_database):
    """On PostgreSQL a batch is one round trip: the UPDATE takes the
    hosts as one array parameter and returns the rows' disabled flags.
    (An IN list rendered a parameter per host, twice, for the UPDATE and
    a SELECT after it: at 1,000 hosts a batch, about three times the
    client's CPU and half as much again of the server's, measured at
    100,000 services.)"""
    hosts = ['h%03d' % index for index in range(300)]
    for host in hosts[::3]:
        alive(host)
    sent = []

    def note(conn, cursor, statement, parameters, context, executemany):
        sent.append((statement, parameters))

    sa.event.listen(db_api.get_engine(), 'before_cursor_execute', note)
    try:
        with db_api.writer() as session:
            answers = services.heartbeat_many(session, 'gantt-compute',
                                              'compute', hosts)
    finally:
        sa.event.remove(db_api.get_engine(), 'before_cursor_execute', note)

    assert answers == dict.fromkeys(hosts[::3], False)
    statements = [(statement, parameters) for statement, parameters in sent
                  if 'services' in statement]
    assert len(statements) == 1, statements
    statement, parameters = statements[0]
    assert statement.startswith('UPDATE services'), statement
    assert len(parameters) < 10, parameters
    assert sorted(hosts) in parameters.values(), parameters
