"""Gantt's refusals as the exceptions Nova's conductor catches.

oslo.messaging sends a remote exception as its class's module and name,
its ``args`` and ``kwargs``; the caller rebuilds it only when the module
is one it allows, and Nova allows ``nova.exception``. The classes here
carry that module and Nova's names, so that Nova's conductor gets
``nova.exception.NoValidHost`` (built as ``NoValidHost(message,
reason=...)``) and handles it as it handles its own scheduler's: the
instance goes to ERROR with the reason as its fault, a move is given up
and the server left as it was. Anything else would reach it as a
``RemoteError``, which no conductor path expects.

Nova's scheduler answers NoValidHost when Placement is away, and its
conductor knows no other refusal, so every expected error of Gantt goes
as one, its message kept::

    try:
        ...
    except exception.GanttException as error:
        raise errors.for_nova(error)
"""

from scheduler import exception

NOVA_MODULE = 'nova.exception'


class NoValidHost(exception.NoValidHost):
    """``nova.exception.NoValidHost`` on Nova's side."""

    __module__ = NOVA_MODULE


class MaxRetriesExceeded(NoValidHost):
    """``nova.exception.MaxRetriesExceeded`` (a NoValidHost) on Nova's
    side."""

    __module__ = NOVA_MODULE


class AllocationUpdateFailed(exception.GanttException):
    """``nova.exception.AllocationUpdateFailed`` on Nova's side: another
    writer changed the instance's allocations in Placement while the
    scheduler claimed for it (Nova's scheduler gives the request up
    then, as this does)."""
    __module__ = NOVA_MODULE
    msg_fmt = ('Failed to update allocations for consumer '
               '%(consumer_uuid)s. Error: %(error)s')


def for_nova(error):
    """The Nova-named exception to send for Gantt's ``error``: its
    message kept, ``reason`` the message without NoValidHost's prefix."""
    cls = (MaxRetriesExceeded
           if isinstance(error, exception.MaxRetriesExceeded)
           else NoValidHost)
    message = str(error)
    reason = error.kwargs.get('reason') if isinstance(
        getattr(error, 'kwargs', None), dict) else None
    if not isinstance(reason, str) or not isinstance(
            error, exception.NoValidHost):
        reason = message
    return cls(message, reason=reason)
