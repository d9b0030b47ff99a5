"""oslo.messaging's AMQP listeners wake from LISTENER_WAKEUP_FLOOR on,
not 1 ms after each message (see scheduler.rpc)."""

import logging

from oslo_messaging._drivers import amqpdriver

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
