"""An RPC server and a client on the real broker: their listeners do not
wake every few milliseconds after a message (scheduler.rpc's
LISTENER_WAKEUP_FLOOR), and a message still wakes them at once."""

import collections
import threading
import time

import oslo_messaging as messaging
from oslo_messaging._drivers import amqpdriver
from oslo_messaging._drivers import impl_rabbit
import pytest

from scheduler import context as gantt_context
from scheduler import rpc
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

TOPIC = 'listener-test'


class _Endpoint:
    target = messaging.Target(version='1.0')

    @rpc.expose
    def ping(self, ctxt):
        return 'pong'


@pytest.fixture
def serving(tmp_path, rpc_transport, monkeypatch):
    """``(client, consumes)``: a server and a client on a vhost of their
    own; ``consumes`` counts each thread's calls of the connection's
    consume (one per wake-up of a listener)."""
    consumes = collections.Counter()
    consume = impl_rabbit.Connection.consume

    def counted(self, *args, **kwargs):
        consumes[threading.current_thread().name] += 1
        return consume(self, *args, **kwargs)
    monkeypatch.setattr(impl_rabbit.Connection, 'consume', counted)
    # As the process starts: oslo.messaging's own first timeout.
    monkeypatch.setattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN', 0.001)
    with cluster_mod.Cluster(tmp_path, 'sqlite') as cluster:
        rpc_transport(cluster)
        server = rpc.get_server(messaging.Target(topic=TOPIC, server='h'),
                                [_Endpoint()])
        server.start()
        try:
            client = rpc.get_client(messaging.Target(
                topic=TOPIC, version='1.0')).prepare(timeout=30)
            yield client, consumes
        finally:
            server.stop()
            server.wait()


def test_listeners_stay_asleep_after_a_message(serving):
    client, consumes = serving
    ctxt = gantt_context.get_admin_context()
    assert client.call(ctxt, 'ping') == 'pong'
    consumes.clear()
    time.sleep(0.5)
    # The server's listener and the client's reply waiter: from 1 ms
    # doubling, each would wake 9 times in these 0.5 s; from the floor,
    # at most 3 times.
    assert len(consumes) >= 1, consumes
    assert all(count <= 3 for count in consumes.values()), consumes


def test_a_message_wakes_a_sleeping_listener_at_once(serving, monkeypatch):
    client, consumes = serving
    ctxt = gantt_context.get_admin_context()
    assert client.call(ctxt, 'ping') == 'pong'
    # Both listeners now wait 2 s, then 4 s... between wake-ups.
    monkeypatch.setattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN', 2.0)
    assert client.call(ctxt, 'ping') == 'pong'
    time.sleep(0.3)
    started = time.monotonic()
    assert client.call(ctxt, 'ping') == 'pong'
    assert time.monotonic() - started < 1.5
