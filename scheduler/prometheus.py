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

The scheduler's metrics: ``gantt_scheduler_select_destinations_seconds``
(a histogram per ``phase``: filter, weigh, claim and the whole request),
counters of requests, instances, claims, claim retries (claims lost to a
concurrent request), group conflicts, claims released, NoValidHost by the
filter that removed the last host (``last_filter``; ``claims`` when hosts
passed but none could be claimed), RPC errors by method and exception,
``gantt_scheduler_requests_in_flight``, and of the host cache: its
``hosts`` per ``cell`` (the cell's name; ``default`` without cells), each
refresh's duration, the time of the oldest worker's last refresh
(``time() - gantt_host_cache_last_refresh_timestamp_seconds`` is its
staleness) and failed refreshes. ``gantt_host_cache_cell_up`` is 1 for a
cell the last refresh read and 0 for one left out (its database did not
answer, or it is no longer listed); a cell left out has 0 hosts, since
its hosts cannot be scheduled on::

    gantt_host_cache_hosts{cell="cell1"} 120.0
    gantt_host_cache_hosts{cell="cell2"} 0.0
    gantt_host_cache_cell_up{cell="cell2"} 0.0
 The conductor's: builds by outcome,
reschedules, and the claims its reaper released. The ``Scheduler stats``
log line stays as it was.

Call :func:`setup` in the master process after the options are parsed and
before anything records a value (the multiprocess mode is chosen when
prometheus_client is first imported), and before the workers fork.
"""

import atexit
import glob
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

_lock = threading.Lock()
_metrics = None


class SetupError(exception.GanttException):
    msg_fmt = 'cannot serve Prometheus metrics on %(where)s: %(reason)s'


def setup(binary):
    """Serve the metrics if ``[metrics] prometheus_port`` asks for it.

    Returns the address served, or None. Raises SetupError (one line)
    when the port cannot be bound.
    """
    port = CONF.metrics.prometheus_port
    if not port:
        return None
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
    registry = prometheus_client.CollectorRegistry()
    registry.register(_LiveWorkersCollector(directory))
    host = CONF.metrics.prometheus_host
    where = '%s:%d' % (host, port)
    try:
        prometheus_client.start_http_server(port, addr=host,
                                            registry=registry)
    except OSError as error:
        raise SetupError(where=where, reason=error.strerror or error)
    LOG.info('%s serves Prometheus metrics at http://%s/metrics', binary,
             where)
    return where


class _LiveWorkersCollector:
    """prometheus_client's multiprocess collector, which first forgets
    the gauges of worker processes that are gone (counters and
    histograms keep their totals)."""

    def __init__(self, directory):
        from prometheus_client import multiprocess

        self._directory = directory
        self._collector = multiprocess.MultiProcessCollector(
            None, path=directory)

    def collect(self):
        from prometheus_client import multiprocess

        for pid in _pids_of_live_gauges(self._directory):
            if not _alive(pid):
                multiprocess.mark_process_dead(pid, self._directory)
        return self._collector.collect()


def _pids_of_live_gauges(directory):
    pids = set()
    for path in glob.glob(os.path.join(directory, 'gauge_live*_*.db')):
        pid = os.path.basename(path)[:-3].rsplit('_', 1)[-1]
        if pid.isdigit():
            pids.add(int(pid))
    return pids


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Metrics:
    def __init__(self):
        import prometheus_client as prom

        self.driver = {
            name: prom.Counter('gantt_scheduler_%s' % name, text)
            for name, text in DRIVER_COUNTERS.items()}
        self.driver_events = prom.Counter(
            'gantt_scheduler_driver_events',
            'Other counters of the scheduler driver', ['event'])
        self.no_valid_host = prom.Counter(
            'gantt_scheduler_no_valid_host',
            'Requests that found no valid host, by the filter that removed '
            'the last one', ['last_filter'])
        self.latency = prom.Histogram(
            'gantt_scheduler_select_destinations_seconds',
            'Time of select_destinations, per phase (filter, weigh, claim, '
            'and the whole request: total)', ['phase'],
            buckets=LATENCY_BUCKETS)
        self.rpc_errors = prom.Counter(
            'gantt_rpc_errors', 'RPC calls that ended in an error, by '
            'method and exception', ['method', 'error'])
        self.in_flight = prom.Gauge(
            'gantt_scheduler_requests_in_flight',
            'select_destinations requests being served',
            multiprocess_mode='livesum')
        self.cache_hosts = prom.Gauge(
            'gantt_host_cache_hosts', 'Compute nodes in the host cache, '
            'per cell', ['cell'], multiprocess_mode='livemax')
        # livemin: a cell is up only if every worker could read it.
        self.cache_cell_up = prom.Gauge(
            'gantt_host_cache_cell_up', 'Whether the last host cache '
            'refresh read the cell (1) or left it out (0)', ['cell'],
            multiprocess_mode='livemin')
        # The cells reported so far: one no longer listed reads 0.
        self.cells_seen = set()
        self.cache_refreshed_at = prom.Gauge(
            'gantt_host_cache_last_refresh_timestamp_seconds',
            'When the host cache was last refreshed (the oldest of the '
            'workers)', multiprocess_mode='livemin')
        self.cache_refresh = prom.Histogram(
            'gantt_host_cache_refresh_seconds',
            'Time of one host cache refresh from SQL',
            buckets=REFRESH_BUCKETS)
        self.cache_refresh_failures = prom.Counter(
            'gantt_host_cache_refresh_failures',
            'Host cache refreshes that failed (the database was away)')
        self.builds = prom.Counter(
            'gantt_conductor_builds', 'Instances whose scheduling ended, '
            'by outcome', ['outcome'])
        self.reschedules = prom.Counter(
            'gantt_conductor_reschedules',
            'Builds that failed on a compute and were tried elsewhere')
        self.reaped = prom.Counter(
            'gantt_conductor_reaper_releases',
            'Instances or claims the reaper ended, by kind', ['kind'])
        self.notifications = prom.Counter(
            'gantt_notifications', 'Notifications sent, failed to send, or '
            'dropped from a full queue, by outcome', ['outcome'])
        self.undecodable_messages = prom.Counter(
            'gantt_rpc_undecodable_messages', 'Messages dropped from an '
            'RPC queue because they could not be decoded, by queue',
            ['queue'])
        # {(id of the metric, label value): child} of the one-label
        # metrics every request records (labels() costs more than the
        # record; the metrics live as long as this object).
        self._children = {}

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
                _metrics = _Metrics()
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


def undecodable_message(queue):
    """A message of ``queue`` could not be decoded and was dropped
    (``gantt_rpc_undecodable_messages_total{queue}``, every daemon)."""
    metrics().undecodable_messages.labels(queue=queue).inc()
