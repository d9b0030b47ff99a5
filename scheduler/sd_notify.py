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

Example::

    sd_notify.take_socket()     # in the master, before forking
    ...
    sd_notify.ready()           # in a worker, once it serves

A socket that cannot be reached is logged once at WARNING; the daemon goes
on serving (under systemd, the unit then times out at start, which says
why in the journal).
"""

import os
import socket

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

ENV = 'NOTIFY_SOCKET'

# The address taken from the environment (inherited by forked workers).
_address = None
_warned = False


def take_socket(environ=os.environ):
    """Remove ``NOTIFY_SOCKET`` from ``environ`` and keep it for
    :func:`notify`; the address, or None when not run by systemd."""
    global _address
    _address = environ.pop(ENV, None) or None
    return _address


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

