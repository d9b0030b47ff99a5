"""The RPC server's ``on_idle``: called once a reply is on its way and no
other message is being handled (the scheduler ranks ahead then)."""

import threading
import time

import oslo_messaging as messaging

from scheduler import context as gantt_context
from scheduler import rpc
from tests.unit import inprocess


class _Endpoint:
    target = messaging.Target(version='1.0')

    def __init__(self):
        self.release = threading.Event()

    @rpc.expose
    def ping(self, ctxt, wait=False):
        if wait:
            self.release.wait(10)
        return 'pong'


def _serve(endpoint, on_idle):
    server = rpc.get_server(messaging.Target(topic='idle-test', server='h'),
                            [endpoint], on_idle=on_idle)
    server.start()
    client = rpc.get_client(messaging.Target(
        topic='idle-test', version='1.0')).prepare(timeout=10)
    return server, client


def _stop(server):
    server.stop()
    server.wait()


def test_on_idle_runs_after_the_reply_reached_the_caller(config):
    inprocess.use_fake_transport(config)
    answered = threading.Event()
    seen = []

    def on_idle():
        # If this ran before the reply, the caller would not get its
        # answer until it returned: it would wait here in vain.
        seen.append(answered.wait(5))
    server, client = _serve(_Endpoint(), on_idle)
    try:
        assert client.call(gantt_context.get_admin_context(),
                           'ping') == 'pong'
        answered.set()
        deadline = time.monotonic() + 10
        while not seen:
            assert time.monotonic() < deadline, 'on_idle was not called'
            time.sleep(0.01)
    finally:
        _stop(server)
    assert seen == [True]


def test_on_idle_waits_for_the_last_message_in_flight(config):
    inprocess.use_fake_transport(config)
    endpoint = _Endpoint()
    idle = []
    server, client = _serve(endpoint, lambda: idle.append(time.monotonic()))
    ctxt = gantt_context.get_admin_context()
    try:
        slow = threading.Thread(
            target=lambda: client.call(ctxt, 'ping', wait=True))
        slow.start()
        time.sleep(0.2)
        assert client.call(ctxt, 'ping') == 'pong'
        time.sleep(0.2)
        # The quick call ended while the slow one was in flight.
        assert idle == []
        released = time.monotonic()
        endpoint.release.set()
        slow.join(10)
        deadline = time.monotonic() + 10
        while not idle:
            assert time.monotonic() < deadline, 'on_idle was not called'
            time.sleep(0.01)
    finally:
        endpoint.release.set()
        _stop(server)
    assert len(idle) == 1 and idle[0] >= released


def test_a_failing_on_idle_is_logged_and_the_server_goes_on(config, caplog):
    inprocess.use_fake_transport(config)

    def on_idle():
        raise RuntimeError('idle work broke')
    server, client = _serve(_Endpoint(), on_idle)
    ctxt = gantt_context.get_admin_context()
    try:
        assert client.call(ctxt, 'ping') == 'pong'
        assert client.call(ctxt, 'ping') == 'pong'
    finally:
        _stop(server)
    assert 'Idle work after a reply failed' in caplog.text
    assert 'idle work broke' in caplog.text
