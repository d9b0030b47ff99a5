"""Service: what every Gantt daemon runs.

A Service wraps a manager (the RPC endpoint object) and gives it:

* an RPC server on ``topic`` (and ``topic.<host>``), with the manager and its
  ``additional_endpoints`` as endpoints;
* a heartbeat every ``[DEFAULT] report_interval`` seconds, through a
  ``reporter`` callable (the scheduler and conductor write their services
  row themselves; compute agents report through the conductor);
* the manager's periodic tasks, each with a spacing read when the service
  starts (never at import time);
* a graceful stop: SIGTERM stops consuming, lets in-flight requests finish,
  then exits; ``reset()`` (SIGHUP) asks the manager to re-read its mutable
  options;
* the state of its connections on the Prometheus endpoint, when one is
  served (:mod:`scheduler.prometheus`): the broker's, read from the RPC
  server every few seconds, and the database's, from each heartbeat that
  writes the services row;
* systemd notification (``scheduler.sd_notify``): ``READY=1`` once the RPC
  server consumes, ``STOPPING=1`` from the master when SIGTERM reaches it,
  and, under ``WatchdogSec=``, ``WATCHDOG=1`` from the master while every
  worker's RPC server consumes (``scheduler.watchdog``).

Example::

    server = service.Service(CONF.host, 'gantt-scheduler', 'scheduler',
                             manager.SchedulerManager())
    service.serve(server, workers=CONF.scheduler.workers)
    service.wait()
"""

import threading
import time

import oslo_messaging as messaging
from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_service import backend as service_backend
from oslo_service import service as oslo_service

from scheduler import conf
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import services as db_services
from scheduler import notifications
from scheduler.notifications import service as service_notes
from scheduler import prometheus
from scheduler import rpc
from scheduler import sd_notify
from scheduler import version
from scheduler import watchdog

CONF = conf.CONF
LOG = logging.getLogger(__name__)

_launcher = None
# The master's watchdog.Supervisor, when systemd asked for a watchdog;
# forked workers inherit it and report to it.
_watchdog = None

# How long stop() waits in all for periodic tasks caught mid-run.
LOOP_STOP_TIMEOUT = 5.0


class PeriodicTask:
    """A callable run every ``spacing`` seconds in its own thread."""

    def __init__(self, name, spacing, func, run_immediately=False):
        self.name = name
        self.spacing = spacing
        self.func = func
        self.run_immediately = run_immediately


class _Loop:
    """Run ``func`` every ``interval`` seconds until stopped."""

    def __init__(self, name, interval, func, run_immediately=False):
        self.name = name
        self.interval = interval
        self.func = func
        self.run_immediately = run_immediately
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name,
                                        daemon=True)

    def start(self):
        self._thread.start()

    def _run(self):
        if not self.run_immediately and self._stop.wait(self.interval):
            return
        while not self._stop.is_set():
            try:
                self.func()
            except Exception:
                LOG.exception('Periodic task %s failed', self.name)
            if self._stop.wait(self.interval):
                return

    def stop(self):
        self._stop.set()

    def wait(self, timeout=None):
        if self._thread.is_alive() and \
                self._thread is not threading.current_thread():
            self._thread.join(timeout)


def db_reporter(host, binary, topic):
    """A reporter that writes the heartbeat to the services table."""
    def report():
        try:
            with db_api.writer() as session:
                row = db_services.report_alive(session, host, binary, topic,
                                               version.SERVICE_VERSION)
        except db_exc.DBConnectionError:
            prometheus.database_up(False)
            raise
        prometheus.database_up(True)
        if row.report_count == 1:
            service_notes.service_action(None, 'create', row, binary, host)
    return report


class Service(oslo_service.Service):
    """An RPC server, heartbeat and periodic tasks around one manager."""

    def __init__(self, host, binary, topic, manager, reporter=None):
        super().__init__()
        self.host = host
        self.binary = binary
        self.topic = topic
        self.manager = manager
        self.reporter = reporter
        self.rpcserver = None
        self._health_reporter = None
        self._loops = []
        self._stopped = threading.Event()

    def start(self):
        LOG.info('Starting %s on %s (topic %s)', self.binary, self.host,
                 self.topic)
        self._stopped.clear()
        self.manager.init_host()
        target = messaging.Target(topic=self.topic, server=self.host)
        endpoints = [self.manager] + list(
            getattr(self.manager, 'additional_endpoints', []))
        # A manager of another wire (Nova mode's) brings its serializer.
        self.rpcserver = rpc.get_server(
            target, endpoints, on_idle=getattr(self.manager, 'idle', None),
            serializer=getattr(self.manager, 'rpc_serializer', None))
        self.rpcserver.start()
        if prometheus.serving():
            self._record_broker_state()
            self._add_loop('broker_state', prometheus.BROKER_CHECK_INTERVAL,
                           self._record_broker_state)
        if self.reporter is not None:
            self._report_safely()
            self._add_loop('heartbeat', CONF.report_interval,
                           self._report_safely)
        admin = gantt_context.get_admin_context()
        for task in self.manager.periodic_tasks():
            if task.spacing and task.spacing > 0:
                self._add_loop(task.name, task.spacing,
                               lambda t=task: t.func(admin),
                               run_immediately=task.run_immediately)
        LOG.info('%s on %s is ready', self.binary, self.host)
        sd_notify.ready()
        if _watchdog is not None:
            self._health_reporter = _watchdog.reporter(self.rpcserver)
            self._health_reporter.start()

    def _add_loop(self, name, interval, func, run_immediately=False):
        loop = _Loop(name, interval, func, run_immediately)
        loop.start()
        self._loops.append(loop)

    def _record_broker_state(self):
        connected = rpc.server_connected(self.rpcserver)
        if connected is not None:
            prometheus.broker_up(connected)

    def _report_safely(self):
        try:
            self.reporter()
        except Exception as error:
            # A lost heartbeat is not fatal: the next one may get through,
            # and service_down_time tolerates several misses.
            LOG.warning('Heartbeat of %s on %s failed: %s', self.binary,
                        self.host, error)

    def stop(self, graceful=True):
        """Stop consuming, let in-flight requests finish, stop the loops."""
        LOG.info('Stopping %s on %s', self.binary, self.host)
        if self._health_reporter is not None:
            # A deliberate stop: the reporter must not take it for a death.
            self._health_reporter.stop()
            self._health_reporter = None
        if self.rpcserver is not None:
            try:
                self.rpcserver.stop()
                self.rpcserver.wait()
            except Exception:
                LOG.exception('Error stopping the RPC server')
        for loop in self._loops:
            loop.stop()
        deadline = time.monotonic() + LOOP_STOP_TIMEOUT
        for loop in self._loops:
            loop.wait(timeout=max(0.0, deadline - time.monotonic()))
        self._loops = []
        self.manager.cleanup_host()
        notifications.flush()
        self._stopped.set()

    def wait(self):
        self._stopped.wait()

    def reset(self):
        """SIGHUP: the config files were re-read; apply mutable options."""
        LOG.info('Reloading mutable options of %s', self.binary)
        CONF.log_opt_values(LOG, logging.DEBUG)
        self.manager.reset()


def stop_all(servers):
    """Stop in-process services in parallel (each takes a moment to drain
    its RPC server); used where one process runs several, as the demo."""
    threads = [threading.Thread(target=server.stop) for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _reload_worker_in_place(wrapper):
    """SIGHUP in a worker of the threading backend: re-read the config
    files and apply the mutable options in the running process, as the
    eventlet backend (and Nova) does.

    oslo.service's threading backend would end the worker and let
    cotyledon fork a new one; its respawn bookkeeping races with the
    reload (``pop from empty list`` in its supervisor thread, after which
    no worker is ever respawned), and every request in flight would see
    its worker go away.
    """
    CONF.mutate_config_files()
    wrapper.service_instance.reset()


def serve(server, workers=None):
    """Launch ``server`` in ``workers`` processes under oslo.service."""
    global _launcher, _watchdog
    if _launcher is not None:
        raise RuntimeError('serve() can only be called once')
    usec = sd_notify.watchdog_interval()
    if usec:
        # Before the launcher forks: the workers report to it.
        _watchdog = watchdog.Supervisor(usec, workers or 1)
        _watchdog.start()
        LOG.info('systemd watchdog: WATCHDOG=1 every %.1fs while %d '
                 'worker(s) serve', _watchdog.ping_interval, workers or 1)
    if service_backend.get_backend_type() == \
            service_backend.BackendType.THREADING:
        from oslo_service.backend._threading import service as threading
        threading.ServiceWrapper.reload = _reload_worker_in_place
    _launcher = oslo_service.launch(CONF, server, workers=workers or 1,
                                    restart_method='mutate')
    _notify_stopping_on_sigterm(_launcher)


def _notify_stopping_on_sigterm(launcher):
    """Send systemd ``STOPPING=1`` from the master when SIGTERM starts
    the shutdown (neither oslo.service nor cotyledon sends it).

    Under the threading backend the master is a cotyledon ServiceManager,
    which runs its ``on_terminate`` hooks at SIGTERM; under eventlet the
    launcher's ``stop()`` runs at SIGTERM (a SIGHUP restarts the services,
    it does not stop the launcher).
    """
    manager = getattr(launcher, '_manager', None)
    if manager is not None and hasattr(manager, 'register_hooks'):
        manager.register_hooks(on_terminate=_stopping)
        return
    stop = launcher.stop

    def stop_and_notify(*args, **kwargs):
        _stopping()
        return stop(*args, **kwargs)

    launcher.stop = stop_and_notify


def _stopping():
    # The workers stop serving on purpose: no more pings, no ERROR.
    if _watchdog is not None:
        _watchdog.stop()
    sd_notify.stopping()


def wait():
    _launcher.wait()


class Manager:
    """Base of the RPC endpoint objects a Service runs.

    Subclasses override the hooks they need; ``periodic_tasks()`` returns
    :class:`PeriodicTask` objects built from options read at start-up.
    """

    additional_endpoints = ()

    def init_host(self):
        """Called in the worker process before the RPC server starts."""

    def cleanup_host(self):
        """Called after the RPC server stopped."""

    def periodic_tasks(self):
        return []

    def reset(self):
        """Re-read mutable options (SIGHUP)."""
