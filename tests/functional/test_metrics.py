"""The Prometheus endpoints of real daemons: a gantt-scheduler with two
worker processes and a gantt-conductor, scraped over HTTP after builds
that fit and one that fits nowhere. The scheduler's counters are the sum
of its two workers. Each daemon exports only what it owns, with the
figures every exporter has (its processes, its build, its connections):
a broker or database of the test's own that goes away reads 0, then 1
again when it is back."""

import glob
import os
import signal
import socket
import subprocess
import time
import urllib.request

from prometheus_client import parser
import pytest

from scheduler import version
from tests.fixtures import postgresql
from tests.fixtures import rabbitmq
from tests.functional import boot_scenario
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

HOSTS = {'cmp-1': {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100},
         'cmp-2': {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100}}


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def scrape(port):
    with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                timeout=10) as answer:
        text = answer.read().decode()
    samples = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name,) + tuple(sorted(sample.labels.items()))
            samples[key] = samples.get(key, 0.0) + sample.value
    return samples


def worker_pids(process):
    """The worker processes a daemon's master forked."""
    pids = set()
    for path in glob.glob('/proc/%d/task/*/children' % process.popen.pid):
        with open(path) as children:
            pids.update(int(pid) for pid in children.read().split())
    return pids


def metrics_conf(port):
    return '[metrics]\nprometheus_port = %d\n' % port


@pytest.fixture
def cluster(tmp_path):
    with cluster_mod.Cluster(tmp_path, 'sqlite') as running:
        yield running


def test_scheduler_and_conductor_serve_their_metrics(cluster):
    scheduler_port, conductor_port = free_port(), free_port()
    cluster.start_conductor_with_conf(extra_conf=metrics_conf(
        conductor_port))
    for host, size in HOSTS.items():
        cluster.start_compute(host, **size)
    scheduler = cluster.start_scheduler(
        workers=2, extra_conf=metrics_conf(scheduler_port))
    cluster.wait_for_computes(list(HOSTS))
    cluster.discover_hosts()

    placed = boot_scenario.create(cluster, '--vcpus', '1', '--ram',
                                  '512', '--disk', '1', '--count', '4')
    assert len(placed) == 4
    (too_big,) = boot_scenario.create(
        cluster, '--vcpus', '1', '--ram', '65536', '--disk', '1',
        expect_rc=1)
    boot_scenario.assert_failed_without_claims(cluster, too_big)

    samples = scrape(scheduler_port)
    assert samples[('gantt_scheduler_requests_total',)] == 2
    assert samples[('gantt_scheduler_instances_total',)] == 4
    assert samples[('gantt_scheduler_claims_total',)] == 4
    assert samples[('gantt_scheduler_no_valid_host_total',
                    ('last_filter', 'RamFilter'))] == 1
    for phase in ('filter', 'weigh', 'claim', 'total'):
        assert samples[('gantt_scheduler_select_destinations_seconds_count',
                        ('phase', phase))] == 2, phase
    assert samples[('gantt_rpc_errors_total', ('error', 'NoValidHost'),
                    ('method', 'select_destinations'))] == 1
    assert samples[('gantt_scheduler_requests_in_flight',)] == 0
    # Both workers have both hosts; the oldest refresh is recent.
    assert samples[('gantt_host_cache_hosts', ('cell', 'default'))] == 2
    assert samples[('gantt_host_cache_cell_up', ('cell', 'default'))] == 1
    assert samples[('gantt_host_cache_refresh_seconds_count',)] >= 2

    samples = scrape(conductor_port)
    assert samples[('gantt_conductor_builds_total',
                    ('outcome', 'scheduled'))] == 4
    assert samples[('gantt_conductor_builds_total',
                    ('outcome', 'no_valid_host'))] == 1

    # A worker that goes away takes its gauges along, not its counts.
    workers = worker_pids(scheduler)
    assert len(workers) == 2
    killed = min(workers)
    os.kill(killed, signal.SIGKILL)
    cluster.wait_until(
        lambda: len(worker_pids(scheduler) - {killed}) == 2, 60,
        'the killed worker to be replaced', scheduler)
    cluster.wait_until(
        lambda: scrape(scheduler_port).get(
            ('gantt_host_cache_hosts', ('cell', 'default'))) == 2, 60,
        'the new worker to load its host cache', scheduler)
    samples = scrape(scheduler_port)
    assert samples[('gantt_scheduler_requests_total',)] == 2
    assert samples[('gantt_scheduler_claims_total',)] == 4


# Metric name prefixes of each daemon's own figures.
SCHEDULER_OWN = ('gantt_scheduler_', 'gantt_host_cache_', 'gantt_rpc_errors')
CONDUCTOR_OWN = ('gantt_conductor_',)
REFRESHED_AT = ('gantt_host_cache_last_refresh_timestamp_seconds',)
# The conductor reconnects within seconds of the broker's return.
RABBIT_RETRY_CONF = '''\
[oslo_messaging_rabbit]
rabbit_retry_interval = 1
rabbit_retry_backoff = 1
rabbit_interval_max = 2
'''


def names(samples):
    return {key[0] for key in samples}


def owned_by(samples, prefixes):
    return sorted(name for name in names(samples)
                  if name.startswith(prefixes))


def source_commit():
    return subprocess.run(
        ['git', '-C', cluster_mod.SOURCE_ROOT, 'rev-parse', 'HEAD'],
        capture_output=True, text=True, check=True).stdout.strip()


def assert_process_figures(samples, started, now, workers):
    """The master's process_* and each worker's, plausible."""
    assert started - 1 <= samples[('process_start_time_seconds',)] <= now
    assert samples[('process_resident_memory_bytes',)] > 0
    assert samples[('process_open_fds',)] > 0
    assert samples[('process_cpu_seconds_total',)] > 0
    labelled = {dict(key[1:])['pid'] for key in samples
                if key[0] == 'gantt_worker_process_start_time_seconds'}
    assert labelled == {str(pid) for pid in workers}
    for pid in labelled:
        worker = ('pid', pid)
        assert samples[('gantt_worker_process_start_time_seconds',
                        worker)] >= \
            samples[('process_start_time_seconds',)] - 1
        assert samples[('gantt_worker_process_resident_memory_bytes',
                        worker)] > 0
        assert samples[('gantt_worker_process_open_fds', worker)] > 0
        assert ('gantt_worker_process_cpu_seconds_total', worker) in samples


def assert_build_and_platform(samples):
    (build,) = [key for key in samples if key[0] == 'gantt_build_info']
    labels = dict(build[1:])
    assert samples[build] == 1
    assert labels['version'] == version.release() != 'unknown'
    if not os.environ.get(version.COMMIT_ENV):
        assert labels['commit'] == source_commit()
    assert any(key[0] == 'python_info' for key in samples)


def test_each_daemon_exports_what_it_owns(cluster):
    started = time.time()
    scheduler_port, conductor_port, compute_port = (free_port(), free_port(),
                                                    free_port())
    conductor = cluster.start_conductor_with_conf(extra_conf=metrics_conf(
        conductor_port))
    compute = cluster.start_compute('cmp-1',
                                    extra_conf=metrics_conf(compute_port))
    scheduler = cluster.start_scheduler(
        workers=2, extra_conf=metrics_conf(scheduler_port))
    cluster.wait_for_computes(['cmp-1'])
    cluster.discover_hosts()
    cluster.wait_until(
        lambda: scrape(scheduler_port).get(
            ('gantt_host_cache_hosts', ('cell', 'default'))) == 1, 60,
        'the scheduler workers to cache the host', scheduler)
    # Both daemons record something of theirs (the conductor used to
    # export the scheduler's figures as zeros from then on).
    placed = boot_scenario.create(cluster, '--vcpus', '1', '--ram', '512',
                                  '--disk', '1')
    assert len(placed) == 1

    scheduler_samples = scrape(scheduler_port)
    conductor_samples = scrape(conductor_port)
    compute_samples = scrape(compute_port)
    now = time.time()

    # Only the owner exports a figure: no zeros for the others'.
    assert owned_by(conductor_samples, SCHEDULER_OWN) == []
    assert owned_by(scheduler_samples, CONDUCTOR_OWN) == []
    assert owned_by(compute_samples, SCHEDULER_OWN + CONDUCTOR_OWN) == []
    assert REFRESHED_AT not in conductor_samples
    assert started < scheduler_samples[REFRESHED_AT] <= now
    assert scheduler_samples[('gantt_scheduler_requests_total',)] == 1
    assert conductor_samples[('gantt_conductor_builds_total',
                              ('outcome', 'scheduled'))] == 1
    # An unlabelled counter the daemon owns is known: 0.
    assert conductor_samples[('gantt_conductor_reschedules_total',)] == 0

    # Each worker's connections are up; the computes have no database.
    for samples in (scheduler_samples, conductor_samples, compute_samples):
        assert samples[('gantt_broker_up',)] == 1
        assert_build_and_platform(samples)
    assert scheduler_samples[('gantt_database_up',)] == 1
    assert conductor_samples[('gantt_database_up',)] == 1
    assert 'gantt_database_up' not in names(compute_samples)

    assert_process_figures(scheduler_samples, started, now,
                           worker_pids(scheduler))
    assert len(worker_pids(scheduler)) == 2
    assert_process_figures(conductor_samples, started, now,
                           worker_pids(conductor))
    assert_process_figures(compute_samples, started, now,
                           worker_pids(compute))


def test_a_port_in_use_stops_the_daemon_with_one_line(cluster):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        exited = cluster.run_to_exit(
            'gantt-scheduler', 'scheduler',
            '[DEFAULT]\nhost = scheduler\n' + metrics_conf(port))
    assert exited.returncode == 1
    errors = exited.stderr.strip().splitlines()
    assert errors == ['gantt-scheduler: error: cannot serve Prometheus '
                      'metrics on 127.0.0.1:%d: Address already in use'
                      % port], exited.stderr


def test_a_broker_and_a_database_that_go_away_read_0(tmp_path):
    # A broker and a database of the test's own, taken away and back.
    port = free_port()
    with postgresql.PostgresCluster() as pg, \
            rabbitmq.node(tmp_path / 'rabbit') as node, \
            cluster_mod.Cluster(tmp_path, db_url=pg.create_database(),
                                transport_url=node.url,
                                extra_conf=RABBIT_RETRY_CONF) as running:
        conductor = running.start_conductor_with_conf(
            extra_conf=metrics_conf(port))

        def reads(name, value):
            running.wait_until(
                lambda: scrape(port).get((name,)) == value, 60,
                '%s to read %s' % (name, value), conductor)

        reads('gantt_broker_up', 1)
        reads('gantt_database_up', 1)
        pg.stop()
        reads('gantt_database_up', 0)
        pg.start()
        reads('gantt_database_up', 1)
        node.stop()
        reads('gantt_broker_up', 0)
        node.start()
        reads('gantt_broker_up', 1)
