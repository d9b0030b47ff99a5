"""Sending notifications without making an operation wait for the broker.

oslo.messaging's notifier blocks its caller for as long as it retries
(``[oslo_messaging_notifications] retry``, forever by default), so a build
or a ``select_destinations`` would hang while the notification broker is
down. Gantt hands each notification to a :class:`Sender` instead: a
bounded queue and one background thread per process, started at the first
notification (after a daemon's workers fork, each has its own). When the
queue is full the oldest notification is dropped, with a WARNING naming
it; :meth:`Sender.flush` at a clean stop sends what is left, within a
time limit, and logs what it could not send. Delivery is at most once:
a notification the broker refuses outright (it is down) is logged by
oslo.messaging's driver, with its payload, and not retried, as in Nova::

    sender = Sender(max_queued=1000)
    sender.put(notifier.prepare(publisher_id='gantt-scheduler:host1'),
               'info', ctxt, 'scheduler.select_destinations.start', payload)
    ...
    sender.flush(timeout=5)
"""

import collections
import os
import threading
import time

from oslo_log import log as logging

from scheduler import prometheus

LOG = logging.getLogger(__name__)

_Item = collections.namedtuple(
    '_Item', 'notifier priority ctxt event_type payload')


class Sender:
    """A bounded queue of notifications and the thread that sends them."""

    def __init__(self, max_queued):
        self.max_queued = max_queued
        self._queue = collections.deque()
        self._cond = threading.Condition()
        self._thread = None
        self._pid = None
        self._busy = False
        self._stopping = False

    def put(self, notifier, priority, ctxt, event_type, payload):
        """Queue one notification; ``priority`` names the notifier's
        method (``info``, ``error``...). Never blocks."""
        item = _Item(notifier, priority, ctxt, event_type, payload)
        with self._cond:
            if self._pid != os.getpid():
                # A forked child inherits the parent's queue but not its
                # thread: what the parent queued is the parent's to send.
                self._queue.clear()
                self._thread = None
                self._pid = os.getpid()
            if len(self._queue) >= self.max_queued:
                dropped = self._queue.popleft()
                LOG.warning('Dropped notification %s: %d notifications are '
                            'waiting for the notification broker '
                            '([notifications] max_queued)',
                            dropped.event_type, self.max_queued)
                prometheus.notification('dropped')
            self._queue.append(item)
            if self._thread is None:
                self._stopping = False
                self._thread = threading.Thread(
                    target=self._run, name='gantt-notifications',
                    daemon=True)
                self._thread.start()
            self._cond.notify()

    def pending(self):
        """Notifications queued or being sent."""
        with self._cond:
            return len(self._queue) + (1 if self._busy else 0)

    def _run(self):
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if not self._queue:
                    return
                item = self._queue.popleft()
                self._busy = True
            try:
                _send(item)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def flush(self, timeout):
        """Send what is queued, waiting at most ``timeout`` seconds, and
        stop the thread; True if nothing was left unsent."""
        deadline = time.monotonic() + timeout
        with self._cond:
            thread = self._thread if self._pid == os.getpid() else None
            self._stopping = True
            self._cond.notify_all()
            while thread is not None and (self._queue or self._busy):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            unsent = len(self._queue) + (1 if self._busy else 0)
            if unsent:
                LOG.warning('%d notification(s) not sent at stop: the '
                            'notification broker did not take them within '
                            '%s s', unsent, timeout)
                self._queue.clear()
            self._thread = None
        return unsent == 0


def _send(item):
    try:
        getattr(item.notifier, item.priority)(item.ctxt, item.event_type,
                                              item.payload)
    except Exception as error:
        # oslo.messaging logs the payload itself when a driver fails; this
        # catches what fails before it (a payload it cannot serialize).
        LOG.error('Could not send notification %s: %s', item.event_type,
                  error)
        prometheus.notification('failed')
        return
    prometheus.notification('sent')
