"""systemd readiness notification (``Type=notify`` units).

systemd passes a Unix datagram socket in ``NOTIFY_SOCKET``; a daemon sends
``READY=1`` there when it serves and ``STOPPING=1`` when it begins to shut
down. oslo.service (eventlet backend) and cotyledon (threading backend)
would send ``READY=1`` from the master as soon as the launcher runs, before
any worker has connected to the broker. Gantt takes the socket out of the
environment before the launcher starts (:func:`take_socket`), so that the
libraries stay silent, and sends the messages itself:

* ``READY=1`` from each process that serves, once its RPC server consumes
  (:func:`ready`, called by ``Service.start``). Under the threading backend
  that is always a forked worker, hence ``NotifyAccess=all`` in the units;
  systemd takes the first and ignores the repeats of other workers.
* ``STOPPING=1`` from the master when SIGTERM reaches it (:func:`stopping`,
  hooked into the launcher by ``service.serve``).
* ``WATCHDOG=1`` from the master, while every worker's RPC server
  consumes (:func:`watchdog`, sent by :mod:`scheduler.watchdog`), when
  the unit sets ``WatchdogSec=``. :func:`take_socket` also takes
  ``WATCHDOG_USEC`` and ``WATCHDOG_PID`` out of the environment: the
  watchdog is the master's only if ``WATCHDOG_PID`` is unset or names
  the process that takes it (as ``sd_watchdog_enabled()`` decides);
  workers, whose pids differ, never read it.

Example::

    sd_notify.take_socket()     # in the master, before forking
    ...
    sd_notify.ready()           # in a worker, once it serves

A socket that cannot be reached, or whose queue stays full for
:data:`SEND_TIMEOUT` seconds, is logged once at WARNING; the daemon goes
on serving (under systemd, the unit then times out at start, which says
why in the journal).
"""

import os
import socket

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

ENV = 'NOTIFY_SOCKET'
WATCHDOG_USEC_ENV = 'WATCHDOG_USEC'
WATCHDOG_PID_ENV = 'WATCHDOG_PID'

# How long a message may wait for room in the socket's queue: systemd
# reads it at once, but a daemon must not hang (at SIGTERM, say) on a
# reader that stopped reading.
SEND_TIMEOUT = 2.0

# The address taken from the environment (inherited by forked workers).
_address = None
_warned = False
# systemd's watchdog budget in microseconds, when it is this process's.
_watchdog_usec = None


def take_socket(environ=os.environ, pid=None):
    """Remove ``NOTIFY_SOCKET``, ``WATCHDOG_USEC`` and ``WATCHDOG_PID``
    from ``environ`` and keep them for :func:`notify` and
    :func:`watchdog_interval`; the address, or None when not run by
    systemd. ``pid``: the process taking them (default: this one)."""
    global _address, _watchdog_usec
    _address = environ.pop(ENV, None) or None
    usec = environ.pop(WATCHDOG_USEC_ENV, None)
    watchdog_pid = environ.pop(WATCHDOG_PID_ENV, None)
    _watchdog_usec = _parse_watchdog(usec, watchdog_pid,
                                     os.getpid() if pid is None else pid)
    return _address


def _parse_watchdog(usec, watchdog_pid, pid):
    if not usec:
        return None
    try:
        value = int(usec)
    except ValueError:
        LOG.warning('Ignoring %s=%r: not a number of microseconds',
                    WATCHDOG_USEC_ENV, usec)
        return None
    if value <= 0:
        return None
    if watchdog_pid:
        try:
            meant_for = int(watchdog_pid)
        except ValueError:
            LOG.warning('Ignoring the watchdog: %s=%r is not a pid',
                        WATCHDOG_PID_ENV, watchdog_pid)
            return None
        if meant_for != pid:
            LOG.info('The systemd watchdog is meant for pid %d, not this '
                     'process (%d): not sending WATCHDOG=1', meant_for, pid)
            return None
    return value


def watchdog_interval():
    """systemd's watchdog budget (``WatchdogSec``) in microseconds, or
    None when no watchdog is this process's to feed."""
    return _watchdog_usec if _address else None


def _socket_path(address):
    # '@name' is a socket in the abstract namespace.
    return '\0' + address[1:] if address.startswith('@') else address


def notify(message):
    """Send ``message`` (e.g. ``'READY=1'``); True if it was sent."""
    global _warned
    if not _address:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.settimeout(SEND_TIMEOUT)
            sock.connect(_socket_path(_address))
            sock.sendall(message.encode('utf-8'))
    except OSError as error:
        if not _warned:
            LOG.warning('Cannot notify systemd at %s (%s): %s', _address,
                        message, error)
            _warned = True
        return False
    return True


def ready():
    return notify('READY=1')


def stopping():
    return notify('STOPPING=1')


def watchdog():
    return notify('WATCHDOG=1')

