"""A signal noted where it lands and acted on where the main thread says.

Python runs a signal handler in the main thread between two bytecodes,
wherever that thread is: inside a transaction, inside an RPC call whose
frame is half written to a pooled AMQP connection, between a lock's
acquire and the ``try`` that releases it. An exception raised there
leaves that state behind for every other thread of the process. So the
one-process commands (gantt-demo, gantt-sim) only note the signal in
their handler, and act on it at :meth:`Deferred.check`, which their main
thread calls between two of its steps. A second signal acts at once:
the user insists.
"""


class Deferred:
    """A signal handler that notes the signal; ``act(signum)``, which is
    expected to raise, runs at the next :meth:`check` (or at once, for
    the second signal)."""

    def __init__(self, act):
        self._act = act
        self.signum = None

    def __call__(self, signum, frame):
        if self.signum is not None:
            self._act(signum)
        self.signum = signum

    @property
    def noted(self):
        return self.signum is not None

    def check(self):
        """Act on the signal if one came since the handler was set."""
        if self.signum is not None:
            self._act(self.signum)
