"""Prometheus metrics of the Gantt daemons.

Every daemon records its metrics as it works; none are served unless
``[metrics] prometheus_port`` is set. Then the daemon's master process
serves them in Prometheus's text format, the values of all its worker
processes added up (prometheus_client's multiprocess mode, over a directory
of the daemon's own that the master removes when it stops, or the one
``PROMETHEUS_MULTIPROC_DIR`` names)::

    [metrics]
    prometheus_port = 9464

    $ curl -s 127.0.0.1:9464/metrics | grep gantt_scheduler_requests
    gantt_scheduler_requests_total 1204.0

Each daemon exports only the metrics it owns (:data:`OWNERS`, the one
table that says which daemon owns which): the conductor's endpoint has
no scheduler figure, not even a 0, and a value not known yet is absent
(the host cache's refresh time before the first refresh, whether the
database is up before the first heartbeat). A labelled counter appears
with its first label; an owned unlabelled counter reads 0 until it
grows, which is true.

Every daemon (:data:`DAEMONS`): the master process's ``process_*``
(CPU seconds, resident memory, open file descriptors, start time),
each live worker's as ``gantt_worker_process_*{pid}``, ``python_info``,
``gantt_build_info{version, commit}`` (always 1; see
:mod:`scheduler.version`), ``gantt_broker_up`` (1 while every worker's
RPC server is connected to the broker, read every
:data:`BROKER_CHECK_INTERVAL` seconds from the connection it holds,
without a probe) and ``gantt_notifications_total`` by ``outcome`` (sent,
failed to send, dropped from a full queue). The scheduler and conductor
(not the computes, which never open the database): ``gantt_database_up``
(1 while every worker's last heartbeat wrote its services row, 0 when
one could not reach the database).

The scheduler's: ``gantt_scheduler_select_destinations_seconds``
(a histogram per ``phase``: filter, weigh, claim and the whole request),
counters of requests, instances, claims, claim retries (claims lost to a
concurrent request), group conflicts, claims released, NoValidHost by the
filter that removed the last host (``last_filter``; ``claims`` when hosts
passed but none could be claimed), RPC errors by method and exception,
``gantt_scheduler_requests_in_flight``, and of the host cache: its
``hosts`` per ``cell`` (the cell's name; ``default`` without cells), each
refresh's duration, the time of the oldest last refresh among the workers
that refreshed (``time() - gantt_host_cache_last_refresh_timestamp_seconds``
is its staleness) and failed refreshes. ``gantt_host_cache_cell_up`` is 1
for a cell the last refresh read and 0 for one left out (its database did
not answer, or it is no longer listed); a cell left out has 0 hosts,
since its hosts cannot be scheduled on::

    gantt_host_cache_hosts{cell="cell1"} 120.0
    gantt_host_cache_hosts{cell="cell2"} 0.0
    gantt_host_cache_cell_up{cell="cell2"} 0.0

The conductor's: builds by outcome, reschedules, and the claims its
reaper released. The ``Scheduler stats`` log line stays as it was.

Processes that do not serve metrics (``gantt-manage``, the all-in-one
demo, the tests) record every metric in prometheus_client's default
registry.

Call :func:`setup` in the master process after the options are parsed and
before anything records a value (the multiprocess mode is chosen when
prometheus_client is first imported), and before the workers fork.
"""

import atexit
import contextlib
import os
import shutil
import tempfile
import threading

from oslo_log import log as logging

from scheduler import conf
from scheduler import exception

CONF = conf.CONF
LOG = logging.getLogger(__name__)

ENV_DIRECTORY = 'PROMETHEUS_MULTIPROC_DIR'

# From half a millisecond (an in-process decision) to ten seconds (a
# request that waited for the database).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                   0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
REFRESH_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                   2.5, 5.0, 10.0, 30.0)

# Scheduler driver counters (Scheduler.count) with a metric of their own;
# others go to gantt_scheduler_driver_events_total{event=...}.
# no_valid_host is counted with its last filter (no_valid_host()).
DRIVER_COUNTERS = {
    'requests': 'select_destinations requests',
    'instances': 'Instances placed',
    'claims': 'Claims made in SQL',
    'claim_retries': 'Claims lost to a concurrent request (the next host '
                     'was tried)',
    'group_conflicts': 'Claims refused by a server group policy',
    'claims_released': 'Claims released after a request failed',
}

SCHEDULER = 'gantt-scheduler'
CONDUCTOR = 'gantt-conductor'
COMPUTE = 'gantt-compute'
DAEMONS = (SCHEDULER, CONDUCTOR, COMPUTE)

# The daemons that export each metric (by the name it is declared with:
# a counter without its _total), and each collector of the endpoint:
# ``process`` (process_* and gantt_worker_process_*), ``python_info``.
OWNERS = {
    **{'gantt_scheduler_%s' % name: (SCHEDULER,)
       for name in DRIVER_COUNTERS},
    'gantt_scheduler_driver_events': (SCHEDULER,),
    'gantt_scheduler_no_valid_host': (SCHEDULER,),
    'gantt_scheduler_select_destinations_seconds': (SCHEDULER,),
    'gantt_scheduler_requests_in_flight': (SCHEDULER,),
    'gantt_rpc_errors': (SCHEDULER,),
    'gantt_host_cache_hosts': (SCHEDULER,),
    'gantt_host_cache_cell_up': (SCHEDULER,),
    'gantt_host_cache_last_refresh_timestamp_seconds': (SCHEDULER,),
    'gantt_host_cache_refresh_seconds': (SCHEDULER,),
    'gantt_host_cache_refresh_failures': (SCHEDULER,),
    'gantt_conductor_builds': (CONDUCTOR,),
    'gantt_conductor_reschedules': (CONDUCTOR,),
    'gantt_conductor_reaper_releases': (CONDUCTOR,),
    # Each daemon sends notifications of its own (scheduler.notifications).
    'gantt_notifications': DAEMONS,
    'gantt_rpc_undecodable_messages': DAEMONS,
    'gantt_broker_up': DAEMONS,
    'gantt_database_up': (SCHEDULER, CONDUCTOR),
    'gantt_build_info': DAEMONS,
    'process': DAEMONS,
    'python_info': DAEMONS,
}

# Seconds between two reads of a worker's broker connection state.
BROKER_CHECK_INTERVAL = 5.0

_lock = threading.Lock()
_metrics = None
# The daemon whose metrics are served (setup()); None records them all.
_binary = None


def owns(binary, name):
    """Whether ``binary`` exports metric ``name`` (None: every metric)."""
    return binary is None or binary in OWNERS[name]


def serving():
    """Whether this process's daemon serves its metrics (setup() did)."""
    return _binary is not None


class SetupError(exception.GanttException):
    msg_fmt = 'cannot serve Prometheus metrics on %(where)s: %(reason)s'


def setup(binary):
    """Serve the metrics if ``[metrics] prometheus_port`` asks for it.

    Returns the address served, or None. Raises SetupError (one line)
    when the port cannot be bound.
    """
    global _binary
    port = CONF.metrics.prometheus_port
    if not port:
        return None
    if _metrics is not None:
        raise RuntimeError('setup() after a metric was recorded')
    directory = os.environ.get(ENV_DIRECTORY)
    if not directory:
        directory = tempfile.mkdtemp(prefix='%s-metrics-' % binary)
        os.environ[ENV_DIRECTORY] = directory
        atexit.register(shutil.rmtree, directory, True)
    import prometheus_client
    from prometheus_client import values

    if values.ValueClass is values.MutexValue:
        # prometheus_client was imported before the directory was set
        # (nothing was recorded yet): values must go to the directory.
        values.ValueClass = values.MultiProcessValue()
    registry = _endpoint_registry(binary, directory)
    host = CONF.metrics.prometheus_host
    where = '%s:%d' % (host, port)
    try:
        prometheus_client.start_http_server(port, addr=host,
                                            registry=registry)
    except OSError as error:
        raise SetupError(where=where, reason=error.strerror or error)
    _binary = binary
    LOG.info('%s serves Prometheus metrics at http://%s/metrics', binary,
             where)
    return where


def _endpoint_registry(binary, directory):
    """The registry the endpoint serves: what the processes recorded
    (only what ``binary`` owns, see _Metrics) and the collectors it
    owns."""
    import prometheus_client
    from prometheus_client import platform_collector
    from prometheus_client import process_collector

    from scheduler import prometheus_collectors as collectors

    registry = prometheus_client.CollectorRegistry()
    registry.register(collectors.LiveWorkersCollector(directory))
    if owns(binary, 'process'):
        process_collector.ProcessCollector(registry=registry)
        registry.register(collectors.WorkerProcessCollector())
    if owns(binary, 'python_info'):
        platform_collector.PlatformCollector(registry=registry)
    if owns(binary, 'gantt_build_info'):
        registry.register(collectors.BuildInfoCollector())
    return registry


class _NotOwned:
    """What a metric the daemon does not own records into: nothing."""

    def labels(self, *args, **kwargs):
        return self

    def inc(self, amount=1):
        pass

    def observe(self, amount):
        pass

    def set(self, value):
        pass

    def track_inprogress(self):
        return contextlib.nullcontext()


NOT_OWNED = _NotOwned()


class _GaugeOnceKnown:
    """An unlabelled gauge that exists from its first value on: until
    then it is absent from the endpoint rather than 0 (in multiprocess
    mode a gauge is written to its process's file, as 0, as soon as it
    is made)."""

    def __init__(self, make):
        self._make = make
        self._gauge = None

    def set(self, value):
        if self._gauge is None:
            with _lock:
                if self._gauge is None:
                    self._gauge = self._make()
        self._gauge.set(value)


class _Metrics:
    """The metric objects of one daemon: those it owns, and
    :data:`NOT_OWNED` for the others (``binary`` None owns all)."""

    def __init__(self, binary=None, registry=None):
        import prometheus_client as prom

        self._binary = binary
        self._registry = registry or prom.REGISTRY
        self._scheduler_metrics(prom)
        self._host_cache_metrics(prom)
        self._conductor_metrics(prom)
        self._service_metrics(prom)
        # {(id of the metric, label value): child} of the one-label
        # metrics every request records (labels() costs more than the
        # record; the metrics live as long as this object).
        self._children = {}

    def _owned(self, kind, name, *args, **kwargs):
        """``kind(name, ...)`` if the daemon owns ``name``."""
        if not owns(self._binary, name):
            return NOT_OWNED
        return kind(name, *args, registry=self._registry, **kwargs)

    def _once_known(self, prom, name, text, mode):
        """An unlabelled gauge, absent until its first value."""
        if not owns(self._binary, name):
            return NOT_OWNED
        return _GaugeOnceKnown(lambda: prom.Gauge(
            name, text, multiprocess_mode=mode, registry=self._registry))

    def _scheduler_metrics(self, prom):
        self.driver = {
            name: self._owned(prom.Counter, 'gantt_scheduler_%s' % name,
                              text)
            for name, text in DRIVER_COUNTERS.items()}
        self.driver_events = self._owned(
            prom.Counter, 'gantt_scheduler_driver_events',
            'Other counters of the scheduler driver', ['event'])
        self.no_valid_host = self._owned(
            prom.Counter, 'gantt_scheduler_no_valid_host',
            'Requests that found no valid host, by the filter that removed '
            'the last one', ['last_filter'])
        self.latency = self._owned(
            prom.Histogram, 'gantt_scheduler_select_destinations_seconds',
            'Time of select_destinations, per phase (filter, weigh, claim, '
            'and the whole request: total)', ['phase'],
            buckets=LATENCY_BUCKETS)
        self.rpc_errors = self._owned(
            prom.Counter, 'gantt_rpc_errors', 'RPC calls that ended in an '
            'error, by method and exception', ['method', 'error'])
        self.in_flight = self._owned(
            prom.Gauge, 'gantt_scheduler_requests_in_flight',
            'select_destinations requests being served',
            multiprocess_mode='livesum')

    def _host_cache_metrics(self, prom):
        self.cache_hosts = self._owned(
            prom.Gauge, 'gantt_host_cache_hosts', 'Compute nodes in the '
            'host cache, per cell', ['cell'], multiprocess_mode='livemax')
        # livemin: a cell is up only if every worker could read it.
        self.cache_cell_up = self._owned(
            prom.Gauge, 'gantt_host_cache_cell_up', 'Whether the last host '
            'cache refresh read the cell (1) or left it out (0)', ['cell'],
            multiprocess_mode='livemin')
        # The cells reported so far: one no longer listed reads 0.
        self.cells_seen = set()
        self.cache_refreshed_at = self._once_known(
            prom, 'gantt_host_cache_last_refresh_timestamp_seconds',
            'When the host cache was last refreshed (the oldest of the '
            'workers that refreshed)', 'livemin')
        self.cache_refresh = self._owned(
            prom.Histogram, 'gantt_host_cache_refresh_seconds',
            'Time of one host cache refresh from SQL',
            buckets=REFRESH_BUCKETS)
        self.cache_refresh_failures = self._owned(
            prom.Counter, 'gantt_host_cache_refresh_failures',
            'Host cache refreshes that failed (the database was away)')

    def _conductor_metrics(self, prom):
        self.builds = self._owned(
            prom.Counter, 'gantt_conductor_builds', 'Instances whose '
            'scheduling ended, by outcome', ['outcome'])
        self.reschedules = self._owned(
            prom.Counter, 'gantt_conductor_reschedules',
            'Builds that failed on a compute and were tried elsewhere')
        self.reaped = self._owned(
            prom.Counter, 'gantt_conductor_reaper_releases',
            'Instances or claims the reaper ended, by kind', ['kind'])

    def _service_metrics(self, prom):
        self.notifications = self._owned(
            prom.Counter, 'gantt_notifications', 'Notifications sent, '
            'failed to send, or dropped from a full queue, by outcome',
            ['outcome'])
        self.undecodable_messages = self._owned(
            prom.Counter, 'gantt_rpc_undecodable_messages', 'Messages '
            'dropped from an RPC queue because they could not be decoded, '
            'by queue', ['queue'])
        # livemin: up only if every worker is connected.
        self.broker_up = self._once_known(
            prom, 'gantt_broker_up', 'Whether the RPC servers are '
            'connected to the broker (1) or not (0)', 'livemin')
        self.database_up = self._once_known(
            prom, 'gantt_database_up', 'Whether the last heartbeats '
            'reached the database (1) or not (0)', 'livemin')

    def child(self, metric, value):
        """``metric.labels(value)``, looked up once per value."""
        key = (id(metric), value)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(value)
        return found


def metrics():
    """The process's metric objects (built at first use)."""
    global _metrics
    if _metrics is None:
        with _lock:
            if _metrics is None:
                _metrics = _Metrics(_binary)
    return _metrics


# -- recording --------------------------------------------------------------

def count(name, amount=1):
    """A scheduler driver counter grew (see Scheduler.count)."""
    if name == 'no_valid_host' or amount <= 0:
        return
    recorded = metrics()
    found = recorded.driver.get(name)
    if found is None:
        found = recorded.child(recorded.driver_events, name)
    found.inc(amount)


def no_valid_host(last_filter):
    metrics().no_valid_host.labels(last_filter=last_filter or 'none').inc()


def request_timed(timings, total):
    """``timings``: seconds per phase (filter, weigh, claim)."""
    recorded = metrics()
    for phase, seconds in timings.items():
        recorded.child(recorded.latency, phase).observe(seconds)
    recorded.child(recorded.latency, 'total').observe(total)


def rpc_error(method, error):
    metrics().rpc_errors.labels(method=method,
                                error=type(error).__name__).inc()


def in_flight():
    """A context manager around one request."""
    return metrics().in_flight.track_inprogress()


def cache_refreshed(seconds, hosts, cells_up, when):
    """A host cache refresh ended.

    ``hosts``: ``{cell name: hosts cached}``; ``cells_up``: ``{cell
    name: read or not}`` of the cells the refresh listed (a cell left out
    has no hosts in the cache). A cell reported before and missing from
    both reads 0 hosts and down. (Gauges are set
    to 0 rather than removed: in multiprocess mode a removed series
    would still be read from the worker's file.)
    """
    found = metrics()
    found.cache_refresh.observe(seconds)
    with _lock:
        names = found.cells_seen | set(hosts) | set(cells_up)
        found.cells_seen = names
    for name in sorted(names):
        found.cache_hosts.labels(cell=name).set(hosts.get(name, 0))
        found.cache_cell_up.labels(cell=name).set(
            1 if cells_up.get(name) else 0)
    found.cache_refreshed_at.set(when)


def cache_refresh_failed():
    metrics().cache_refresh_failures.inc()


def build_ended(outcome, amount=1):
    """``outcome``: scheduled, no_valid_host, refused, failed."""
    metrics().builds.labels(outcome=outcome).inc(amount)


def rescheduled():
    metrics().reschedules.inc()


def reaped(kind, amount=1):
    if amount > 0:
        metrics().reaped.labels(kind=kind).inc(amount)


def notification(outcome):
    """``outcome``: sent, failed, dropped."""
    metrics().notifications.labels(outcome=outcome).inc()


def broker_up(connected):
    """Whether this worker's RPC server is connected to the broker."""
    metrics().broker_up.set(1 if connected else 0)


def database_up(reached):
    """Whether this worker's last use of the database reached it."""
    metrics().database_up.set(1 if reached else 0)


def undecodable_message(queue):
    """A message of ``queue`` could not be decoded and was dropped
    (``gantt_rpc_undecodable_messages_total{queue}``, every daemon)."""
    metrics().undecodable_messages.labels(queue=queue).inc()
