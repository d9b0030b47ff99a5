"""The conductor writes concurrent heartbeats in few transactions, each
caller getting its own service's answer."""

import threading

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from conductor import heartbeats
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import services as db_services

_SERVICE = models.Service.__table__


def service_rows():
    with db_api.reader() as session:
        return {(row.host, row.binary): row for row in session.execute(
            sa.select(_SERVICE))}


def test_one_heartbeat_registers_then_updates(any_database):
    batcher = heartbeats.HeartbeatBatcher()
    assert batcher.report('cmp-1', 'gantt-compute', 'compute') is False
    first = service_rows()[('cmp-1', 'gantt-compute')]
    assert first.report_count == 1 and first.last_seen_up is not None
    with db_api.writer() as session:
        db_services.set_disabled(session, 'cmp-1', 'gantt-compute', True,
                                 'maintenance')
    changed = service_rows()[('cmp-1', 'gantt-compute')].updated_at
    assert batcher.report('cmp-1', 'gantt-compute', 'compute') is True
    second = service_rows()[('cmp-1', 'gantt-compute')]
    assert second.report_count == 2
    assert second.last_seen_up >= first.last_seen_up
    # A heartbeat is not a change of the row (the host caches read
    # liveness from last_seen_up).
    assert second.updated_at == changed
    assert batcher.stats == {'heartbeats': 2, 'transactions': 2}


def test_concurrent_heartbeats_share_transactions(any_database,
                                                  monkeypatch):
    hosts = ['cmp-%02d' % index for index in range(40)]
    batcher = heartbeats.HeartbeatBatcher()
    for host in hosts:
        batcher.report(host, 'gantt-compute', 'compute')
    with db_api.writer() as session:
        for host in hosts[::4]:
            db_services.set_disabled(session, host, 'gantt-compute', True)
    # Hold the first writer until every caller is waiting, so that the
    # others queue behind it as they would under load.
    release = threading.Event()
    real = db_services.heartbeat_many
    first = []

    def slow_heartbeat_many(session, binary, topic, batch_hosts,
                            version=None):
        if not first:
            first.append(len(batch_hosts))
            release.wait(10)
        return real(session, binary, topic, batch_hosts, version)

    monkeypatch.setattr(db_services, 'heartbeat_many', slow_heartbeat_many)
    answers = {}
    before = dict(batcher.stats)

    def beat(host):
        answers[host] = batcher.report(host, 'gantt-compute', 'compute')

    threads = [threading.Thread(target=beat, args=(host,))
               for host in hosts]
    for thread in threads:
        thread.start()
    # Every caller has queued once the pending queue holds all but the
    # first writer's batch.
    for _ in range(1000):
        if first and len(batcher._pending) == len(hosts) - first[0]:
            break
        threading.Event().wait(0.01)
    else:
        pytest.fail('the callers did not queue behind the first writer')
    release.set()
    for thread in threads:
        thread.join(30)

    assert answers == {host: host in hosts[::4] for host in hosts}
    transactions = batcher.stats['transactions'] - before['transactions']
    assert batcher.stats['heartbeats'] - before['heartbeats'] == len(hosts)
    # The first writer's batch, then all that queued behind it.
    assert transactions == 2
    assert {row.report_count for row in service_rows().values()} == {2}


def test_a_failed_transaction_fails_its_heartbeats_only(any_database,
                                                        monkeypatch):
    batcher = heartbeats.HeartbeatBatcher()
    batcher.report('cmp-1', 'gantt-compute', 'compute')

    def lost(*args):
        raise db_exc.DBConnectionError('database gone')

    monkeypatch.setattr(db_services, 'heartbeat_many', lost)
    with pytest.raises(db_exc.DBConnectionError):
        batcher.report('cmp-1', 'gantt-compute', 'compute')
    monkeypatch.undo()
    # The next heartbeat is written: the batcher is not left busy.
    assert batcher.report('cmp-1', 'gantt-compute', 'compute') is False
    assert service_rows()[('cmp-1', 'gantt-compute')].report_count == 2
