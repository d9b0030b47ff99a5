"""Messages on an RPC queue that cannot be decoded: counted, logged in
one line per queue and minute.

oslo.messaging's rabbit driver decodes each message it consumes (JSON,
as kombu reads it); one it cannot read (bytes that are not UTF-8, or
not a JSON object) is rejected and logged with the traceback of the
failed decoding, "Failed to process message ... skipping it.", once per
message: a sender stuck on a bad message floods the log, and nothing
counts the loss. :func:`install` puts a filter on the driver's logger
that takes those records and, instead:

- counts each message in ``gantt_rpc_undecodable_messages_total{queue}``
  (:mod:`scheduler.prometheus`);
- logs one ERROR line per queue at most every :data:`LOG_INTERVAL`
  seconds, naming the queue, where the message came from and why it
  could not be read, with the number dropped from that queue since the
  last such line::

    Dropped an undecodable message from queue scheduler (exchange gantt,
    routing key scheduler, content type application/json, 14 bytes):
    DecodeError: 'utf-8' codec can't decode byte 0xff in position 0:
    invalid start byte; 41 more dropped from it since the last such line

The driver still rejects the message, as before. Any other failure it
logs under that text (a decoded message its listener could not take)
goes through untouched. :func:`scheduler.rpc.init` installs the filter;
installing it again changes nothing.
"""

import logging as std_logging
import threading
import time

from kombu import exceptions as kombu_exceptions
from oslo_log import log as logging

from scheduler import prometheus

LOG = logging.getLogger(__name__)

# At most one line per queue in this many seconds.
LOG_INTERVAL = 60.0
_DRIVER_LOGGER = 'oslo.messaging._drivers.impl_rabbit'
# What the rabbit driver's consumer logs when a message fails it.
_DRIVER_MESSAGE = 'Failed to process message ... skipping it.'


def _undecodable(error, message):
    """Whether ``message`` (a kombu message) failed because it could not
    be decoded into the dict every oslo.messaging message is."""
    if isinstance(error, kombu_exceptions.DecodeError):
        return True
    if message is None:
        return False
    try:
        return not isinstance(message.payload, dict)
    except Exception:
        return True


def _consumer_frame(record):
    """The locals of the driver's consumer callback that logged
    ``record``: the first frame of its traceback."""
    traceback = record.exc_info[2] if record.exc_info else None
    return traceback.tb_frame.f_locals if traceback is not None else {}


class _Drops:
    """Per queue: when the last line was logged, and drops since."""

    def __init__(self):
        self._lock = threading.Lock()
        self._queues = {}

    def reset(self):
        with self._lock:
            self._queues.clear()

    def dropped(self, queue):
        """None if no line is due for ``queue`` now; else how many drops
        went unlogged before this one."""
        now = time.monotonic()
        with self._lock:
            logged_at, unlogged = self._queues.get(queue, (None, 0))
            if logged_at is not None and now - logged_at < LOG_INTERVAL:
                self._queues[queue] = (logged_at, unlogged + 1)
                return None
            self._queues[queue] = (now, 0)
            return unlogged


DROPS = _Drops()


def _describe(message):
    if message is None:
        return 'unknown origin'
    info = getattr(message, 'delivery_info', None) or {}
    body = getattr(message, 'body', None) or b''
    return 'exchange %s, routing key %s, content type %s, %d bytes' % (
        info.get('exchange') or '(default)', info.get('routing_key'),
        getattr(message, 'content_type', None), len(body))


class UndecodableFilter(std_logging.Filter):
    """Takes the driver's traceback of an undecodable message; counts it
    and logs the rate-limited line instead (see the module docstring)."""

    def filter(self, record):
        if record.msg != _DRIVER_MESSAGE or not record.exc_info:
            return True
        error = record.exc_info[1]
        frame = _consumer_frame(record)
        message = frame.get('message')
        if not _undecodable(error, message):
            return True
        queue = getattr(frame.get('self'), 'queue_name', None) or 'unknown'
        try:
            prometheus.undecodable_message(queue)
        except Exception:
            LOG.debug('Could not count an undecodable message', exc_info=True)
        unlogged = DROPS.dropped(queue)
        if unlogged is not None:
            LOG.error('Dropped an undecodable message from queue %s (%s): '
                      '%s: %s%s', queue, _describe(message),
                      type(error).__name__, error,
                      '; %d more dropped from it since the last such line'
                      % unlogged if unlogged else '')
        return False


_FILTER = UndecodableFilter()


def install():
    """Put the filter on the rabbit driver's logger (once)."""
    std_logging.getLogger(_DRIVER_LOGGER).addFilter(_FILTER)
