"""What a Service tells the Prometheus endpoint about its connections:
the broker's state read from its RPC server every few seconds while the
metrics are served, the database's from each heartbeat."""

import time

from oslo_db import exception as db_exc
import prometheus_client
import pytest

from scheduler.db import services as db_services
from scheduler import prometheus
from scheduler import rpc
from scheduler import service
from tests.unit import inprocess


@pytest.fixture
def served(monkeypatch):
    """This process serves the scheduler's metrics, into a registry of
    its own (returned)."""
    registry = prometheus_client.CollectorRegistry()
    monkeypatch.setattr(prometheus, '_binary', prometheus.SCHEDULER)
    monkeypatch.setattr(prometheus, '_metrics', prometheus._Metrics(
        prometheus.SCHEDULER, registry))
    return registry


class _Manager(service.Manager):
    pass


def wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError('not within %ss' % timeout)


def test_the_broker_state_is_read_while_metrics_are_served(
        config, served, monkeypatch):
    inprocess.use_fake_transport(config)
    state = {'connected': True}
    monkeypatch.setattr(rpc, 'server_connected',
                        lambda server: state['connected'])
    monkeypatch.setattr(prometheus, 'BROKER_CHECK_INTERVAL', 0.05)
    server = service.Service('host1', 'gantt-scheduler', 'test-topic',
                             _Manager())
    server.start()
    try:
        assert served.get_sample_value('gantt_broker_up') == 1
        state['connected'] = False
        wait_for(lambda: served.get_sample_value('gantt_broker_up') == 0)
    finally:
        server.stop()


def test_a_driver_that_does_not_say_leaves_the_broker_state_absent(
        config, served):
    # fake:// keeps no connection state.
    inprocess.use_fake_transport(config)
    server = service.Service('host1', 'gantt-scheduler', 'test-topic',
                             _Manager())
    server.start()
    try:
        assert rpc.server_connected(server.rpcserver) is None
        assert served.get_sample_value('gantt_broker_up') is None
    finally:
        server.stop()


def test_without_an_endpoint_the_broker_state_is_not_read(config,
                                                           monkeypatch):
    inprocess.use_fake_transport(config)
    monkeypatch.setattr(prometheus, '_binary', None)
    read = []
    monkeypatch.setattr(rpc, 'server_connected', read.append)
    server = service.Service('host1', 'gantt-scheduler', 'test-topic',
                             _Manager())
    server.start()
    try:
        assert [loop.name for loop in server._loops] == []
    finally:
        server.stop()
    assert read == []


def test_the_heartbeat_says_whether_the_database_answered(
        database, served, monkeypatch):
    report = service.db_reporter('host1', 'gantt-scheduler', 'scheduler')
    report()
    assert served.get_sample_value('gantt_database_up') == 1

    def unreachable(*args, **kwargs):
        raise db_exc.DBConnectionError('gone')

    monkeypatch.setattr(db_services, 'report_alive', unreachable)
    with pytest.raises(db_exc.DBConnectionError):
        report()
    assert served.get_sample_value('gantt_database_up') == 0
