"""The background sender: an operation never waits for the notification
broker; a full queue drops its oldest notification, loudly."""

import logging
import os
import threading

from scheduler.notifications import sender as sender_mod


class Broker:
    """Stands for the notifier: ``info`` records what it is given, and
    blocks while the broker is "down" (``up`` cleared)."""

    def __init__(self):
        self.up = threading.Event()
        self.up.set()
        self.received = []
        self.entered = threading.Event()

    def info(self, ctxt, event_type, payload):
        self.entered.set()
        self.up.wait()
        self.received.append(event_type)


def test_sends_in_order_in_the_background():
    broker = Broker()
    sender = sender_mod.Sender(max_queued=10)
    for number in range(5):
        sender.put(broker, 'info', None, 'event.%d' % number, {})
    assert sender.flush(timeout=5)
    assert broker.received == ['event.%d' % number for number in range(5)]
    assert sender.pending() == 0


def test_a_down_broker_never_blocks_put_and_the_oldest_is_dropped(caplog):
    broker = Broker()
    broker.up.clear()
    sender = sender_mod.Sender(max_queued=3)
    sender.put(broker, 'info', None, 'first', {})
    # The thread holds "first", blocked on the broker.
    assert broker.entered.wait(5)
    with caplog.at_level(logging.WARNING):
        for name in ('a', 'b', 'c', 'd', 'e'):
            sender.put(broker, 'info', None, name, {})   # returns at once
    dropped = [record.getMessage() for record in caplog.records
               if 'Dropped notification' in record.getMessage()]
    assert [message.split()[2].rstrip(':') for message in dropped] == [
        'a', 'b']
    assert sender.pending() == 4       # "first" in flight, c d e queued
    broker.up.set()
    assert sender.flush(timeout=5)
    assert broker.received == ['first', 'c', 'd', 'e']


def test_flush_gives_up_after_its_timeout_and_says_how_many(caplog):
    broker = Broker()
    broker.up.clear()
    sender = sender_mod.Sender(max_queued=10)
    for name in ('a', 'b', 'c'):
        sender.put(broker, 'info', None, name, {})
    assert broker.entered.wait(5)
    with caplog.at_level(logging.WARNING):
        assert sender.flush(timeout=0.2) is False
    assert any('3 notification(s) not sent at stop' in record.getMessage()
               for record in caplog.records)
    broker.up.set()


def test_a_failing_send_is_logged_and_the_next_goes(caplog):
    class Failing(Broker):
        def info(self, ctxt, event_type, payload):
            if event_type == 'bad':
                raise TypeError('cannot serialize')
            super().info(ctxt, event_type, payload)

    broker = Failing()
    sender = sender_mod.Sender(max_queued=10)
    with caplog.at_level(logging.ERROR):
        sender.put(broker, 'info', None, 'bad', {})
        sender.put(broker, 'info', None, 'good', {})
        assert sender.flush(timeout=5)
    assert broker.received == ['good']
    assert any('Could not send notification bad: cannot serialize'
               in record.getMessage() for record in caplog.records)


def test_a_forked_child_sends_with_a_thread_of_its_own():
    broker = Broker()
    sender = sender_mod.Sender(max_queued=10)
    sender.put(broker, 'info', None, 'parent', {})
    assert sender.flush(timeout=5)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: its own thread sends its own notification
        try:
            broker.received.clear()
            sender.put(broker, 'info', None, 'child', {})
            ok = sender.flush(timeout=5) and broker.received == ['child']
            os.write(write_end, b'1' if ok else b'0')
        finally:
            os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 1)
    os.waitpid(pid, 0)
    os.close(read_end)
    assert answer == b'1'
    assert broker.received == ['parent']
