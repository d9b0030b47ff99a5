"""Bytes that are not a message, on the scheduler's queue of a real
broker: counted, logged in one line per queue and interval (with the
number dropped since), no traceback; the server goes on serving."""

import logging
import time

import kombu
import oslo_messaging as messaging
import prometheus_client
import pytest

from scheduler import config as gantt_config
from scheduler import context as gantt_context
from scheduler import rpc
from scheduler import rpcapi as scheduler_rpcapi
from scheduler import undecodable_messages
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

TOPIC = scheduler_rpcapi.RPC_TOPIC
GARBAGE = b'\xff\xfe garbage'
METRIC = 'gantt_rpc_undecodable_messages_total'


class _Endpoint:
    target = messaging.Target(version='1.0')

    @rpc.expose
    def ping(self, ctxt):
        return 'pong'


@pytest.fixture
def serving(config):
    """A client of an RPC server on the scheduler topic, on a vhost of
    its own; yields ``(client, kombu URL)``."""
    with cluster_mod.vhost() as url:
        gantt_config.register_opts()
        config.config(control_exchange='gantt')
        rpc.cleanup()
        rpc.init(config.conf, url=url)
        server = rpc.get_server(messaging.Target(topic=TOPIC, server='h'),
                                [_Endpoint()])
        server.start()
        try:
            client = rpc.get_client(messaging.Target(
                topic=TOPIC, version='1.0')).prepare(timeout=30)
            # The queues exist once a call went through.
            assert client.call(gantt_context.get_admin_context(),
                               'ping') == 'pong'
            yield client, url.replace('rabbit://', 'amqp://', 1)
        finally:
            server.stop()
            server.wait()
            rpc.cleanup()
            undecodable_messages.DROPS.reset()


def _publish(url, count, content_type='application/json'):
    with kombu.Connection(url) as connection:
        producer = connection.Producer()
        for _ in range(count):
            producer.publish(GARBAGE, exchange='gantt', routing_key=TOPIC,
                             content_type=content_type,
                             content_encoding='binary')


def _dropped():
    return prometheus_client.REGISTRY.get_sample_value(
        METRIC, {'queue': TOPIC}) or 0.0


def _wait_for_drops(expected, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _dropped() < expected:
        time.sleep(0.05)
    assert _dropped() == expected


def _lines(caplog):
    return [record for record in caplog.records
            if record.levelno >= logging.WARNING
            and record.name.startswith(('scheduler', 'oslo'))]


def test_undecodable_messages_are_counted_and_logged_once_per_interval(
        serving, caplog, monkeypatch):
    client, url = serving
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(undecodable_messages, 'LOG_INTERVAL', 2.0)
    before = _dropped()
    _publish(url, 3)
    _wait_for_drops(before + 3)
    lines = _lines(caplog)
    assert [record.getMessage() for record in lines] == [
        'Dropped an undecodable message from queue scheduler (exchange '
        'gantt, routing key scheduler, content type application/json, %d '
        "bytes): DecodeError: 'utf-8' codec can't decode byte 0xff in "
        'position 0: invalid start byte' % len(GARBAGE)], lines
    assert all(record.exc_info is None for record in lines)
    # Raw bytes without a JSON content type are no message either.
    _publish(url, 1, content_type='application/data')
    _wait_for_drops(before + 4)
    assert len(_lines(caplog)) == 1
    time.sleep(2.0)
    _publish(url, 1)
    _wait_for_drops(before + 5)
    lines = _lines(caplog)
    assert len(lines) == 2, lines
    assert lines[1].getMessage().endswith(
        '; 3 more dropped from it since the last such line'), lines
    assert 'Traceback' not in caplog.text
    # The server still serves.
    assert client.call(gantt_context.get_admin_context(), 'ping') == 'pong'
