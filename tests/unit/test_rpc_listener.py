"""oslo.messaging's AMQP listeners wake from LISTENER_WAKEUP_FLOOR on,
not 1 ms after each message (see scheduler.rpc); an RPC server's
connection state is read from its listener's connection."""

import logging
import types

from oslo_messaging._drivers import amqpdriver
import pytest

from scheduler import rpc
from tests.unit import inprocess


def test_init_raises_the_listeners_first_timeout(config, monkeypatch):
    monkeypatch.setattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN', 0.001)
    inprocess.use_fake_transport(config)
    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN == \
        rpc.LISTENER_WAKEUP_FLOOR
    # Still under the idle maximum, so the timeout keeps doubling.
    assert rpc.LISTENER_WAKEUP_FLOOR < \
        amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX


def test_a_higher_first_timeout_is_kept(config, monkeypatch):
    monkeypatch.setattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN', 0.5)
    assert rpc.fewer_listener_wakeups() is True
    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN == 0.5


def test_an_oslo_messaging_without_the_constant_is_named(monkeypatch,
                                                         caplog):
    monkeypatch.delattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN')
    with caplog.at_level(logging.WARNING):
        assert rpc.fewer_listener_wakeups() is False
    assert 'ACK_REQUEUE_EVERY_SECONDS_MIN' in caplog.text
    assert not hasattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN')


def connection_chain(connected):
    """An RPC server as the AMQP driver nests its kombu connection."""
    kombu = types.SimpleNamespace(connected=connected)
    pooled = types.SimpleNamespace(connection=kombu)
    context = types.SimpleNamespace(connection=pooled)
    listener = types.SimpleNamespace(conn=context)
    return types.SimpleNamespace(listener=types.SimpleNamespace(
        _poll_style_listener=listener))


@pytest.mark.parametrize('server, expected', [
    (connection_chain(True), True),
    (connection_chain(False), False),
    (connection_chain('maybe'), None),
    (types.SimpleNamespace(listener=None), None),
])
def test_the_connection_state_is_the_drivers(server, expected):
    assert rpc.server_connected(server) is expected
