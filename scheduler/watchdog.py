"""The systemd watchdog (``WatchdogSec=`` in the units).

systemd restarts a unit whose processes stop sending ``WATCHDOG=1`` for
``WatchdogSec``; it passes that budget in ``WATCHDOG_USEC`` (and the pid
it expects pings from in ``WATCHDOG_PID``), which
:func:`scheduler.sd_notify.take_socket` takes out of the environment in
the master, before any worker forks.

Who pings: the master alone, for all its workers. A Gantt daemon serves
in forked workers (``[scheduler] workers``...); if each worker pinged
systemd itself, one live worker would hide another whose RPC server died
or which hangs, since systemd keeps a single timer per unit. So:

* each worker runs a :class:`HealthReporter`: a thread that, every
  quarter of the budget, checks that its RPC server still consumes
  (:func:`rpc_server_problem`) and, if so, tells the master (a datagram
  on a socket pair the master made before forking);
* the master runs a :class:`Supervisor`: every half of the budget it
  sends ``WATCHDOG=1`` only if as many workers as it launched reported
  within that half. Otherwise it logs at ERROR what is missing and sends
  nothing, and systemd restarts the unit once the budget is spent. At
  start-up (systemd arms its timer at the first worker's ``READY=1``)
  one serving worker is enough until all have served once, for at most
  five ``WatchdogSec`` (:data:`STARTUP_GRACE`).

A worker whose RPC server died logs why at ERROR and stops reporting. A
worker process that exits is forked again by the launcher (cotyledon,
or oslo.service's ProcessLauncher under eventlet); the replacement
counts once it serves, so a replacement that cannot serve within about
half of ``WatchdogSec`` restarts the unit. A hung worker (its reporter
thread cannot run) stops reporting too. The broker being away is not a
death: oslo.messaging reconnects by itself, and a restart would not
bring it back (the daemon's start-up refuses to run without it).

Under eventlet with one worker the service runs in the master itself;
the same two parts then run there, as green threads.

Example::

    supervisor = watchdog.Supervisor(sd_notify.watchdog_interval(),
                                     workers=4)
    supervisor.start()            # in the master, before forking
    ...
    reporter = supervisor.reporter(rpcserver)
    reporter.start()              # in a worker, once it serves
"""

import os
import socket
import threading
import time

from oslo_log import log as logging

from scheduler import sd_notify

LOG = logging.getLogger(__name__)

# The largest report a worker sends (its identity, a decimal pid).
_MAX_REPORT = 64
# How many pings (each half of WatchdogSec) the other workers have, after
# the first serves, to serve too: five WatchdogSec in all.
STARTUP_GRACE = 10


def rpc_server_problem(server):
    """Why ``server`` (an oslo.messaging RPC server) no longer consumes,
    or None while it does: it was started and not stopped, its listener
    thread (which polls the broker) runs, and its executor (which runs
    the requests) takes work."""
    if server is None:
        return 'no RPC server'
    if not getattr(server, '_started', False):
        return 'the RPC server is not running (stopped or never started)'
    listener = getattr(server, 'listener', None)
    thread = getattr(listener, '_listen_thread', None)
    if thread is not None and not thread.is_alive():
        return 'the RPC server\'s listener thread has ended'
    executor = getattr(server, '_work_executor', None)
    if executor is not None and not getattr(executor, 'alive', True):
        return 'the RPC server\'s executor is shut down'
    return None


class HealthReporter:
    """In a worker: tells the master, every ``interval`` seconds, that
    ``server`` still consumes; stops (and logs why at ERROR) once it
    does not."""

    def __init__(self, server, send, interval, identity=None):
        self.server = server
        self._send = send
        self.interval = interval
        self.identity = identity or str(os.getpid())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run,
                                        name='watchdog-report', daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        """Stop reporting (a deliberate stop: nothing is logged)."""
        self._stop.set()
        if self._thread.is_alive() and \
                self._thread is not threading.current_thread():
            self._thread.join(self.interval + 1.0)

    def _run(self):
        while not self._stop.is_set():
            problem = rpc_server_problem(self.server)
            if self._stop.is_set():
                return
            if problem is not None:
                LOG.error('Watchdog: worker %s stops reporting to the '
                          'master, systemd will restart the unit: %s',
                          self.identity, problem)
                return
            try:
                self._send(self.identity.encode('ascii'))
            except BlockingIOError:
                # The master reads no more (it stopped, or hangs): there
                # is nothing a worker can do about it.
                pass
            except OSError as error:
                LOG.warning('Watchdog: worker %s cannot report to the '
                            'master: %s', self.identity, error)
            self._stop.wait(self.interval)


class Supervisor:
    """In the master: sends ``WATCHDOG=1`` every ``usec / 2`` while
    ``workers`` workers reported within that time.

    ``usec`` is systemd's budget in microseconds
    (:func:`scheduler.sd_notify.watchdog_interval`).
    """

    def __init__(self, usec, workers):
        if usec <= 0 or workers < 1:
            raise ValueError('a watchdog needs a positive budget and '
                             'workers (got %r us, %r workers)'
                             % (usec, workers))
        self.workers = workers
        self.ping_interval = usec / 2e6
        self.report_interval = usec / 4e6
        self._receiver, self._sender = socket.socketpair(
            socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sender.setblocking(False)
        self._owner = os.getpid()
        self._last_report = {}
        self._missing_logged = False
        # Until every worker has served once, one serving worker is
        # enough (for at most STARTUP_GRACE pings): READY=1, which arms
        # systemd's timer, comes from the first worker that serves.
        self._all_served = False
        self._startup_pings = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run,
                                        name='watchdog', daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        """Stop pinging (the unit is stopping). The socket stays open
        for the workers, which still report while they drain."""
        self._stop.set()

    def close(self):
        """Stop, wait for the thread, close the socket pair."""
        self.stop()
        if self._thread.is_alive():
            self._thread.join(self.ping_interval + 1.0)
        self._receiver.close()
        self._sender.close()

    def reporter(self, server, identity=None):
        """A :class:`HealthReporter` for ``server`` that reports here."""
        return HealthReporter(server, self._sender.send,
                              self.report_interval, identity=identity)

    def _run(self):
        next_ping = time.monotonic() + self.ping_interval
        while not self._stop.is_set() and os.getpid() == self._owner:
            self._receive_until(next_ping)
            if self._stop.is_set() or os.getpid() != self._owner:
                return
            self._ping_if_healthy(time.monotonic())
            next_ping += self.ping_interval

    def _receive_until(self, deadline):
        while not self._stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._receiver.settimeout(remaining)
            try:
                report = self._receiver.recv(_MAX_REPORT)
            except (socket.timeout, BlockingIOError):
                return
            self._last_report[report.decode('ascii', 'replace')] = \
                time.monotonic()

    def _ping_if_healthy(self, now):
        oldest = now - self.ping_interval
        # Workers that stopped reporting are forgotten (a replacement
        # reports under its own pid).
        self._last_report = {identity: when for identity, when
                             in self._last_report.items() if when >= oldest}
        healthy = len(self._last_report)
        if not self._all_served and self._startup_pings == 0 and \
                healthy == 0:
            # Nothing serves yet: systemd's timer is not armed.
            return
        if not self._all_served and healthy >= 1 and \
                self._startup_pings < STARTUP_GRACE:
            self._all_served = healthy >= self.workers
            self._startup_pings += 1
            sd_notify.watchdog()
            return
        if healthy >= self.workers:
            self._all_served = True
            if self._missing_logged:
                LOG.info('Watchdog: all %d worker(s) serve again',
                         self.workers)
                self._missing_logged = False
            sd_notify.watchdog()
            return
        LOG.error('Watchdog: %d of %d worker(s) reported serving in the '
                  'last %.1fs; not pinging systemd, which restarts the '
                  'unit unless they come back', healthy, self.workers,
                  self.ping_interval)
        self._missing_logged = True
