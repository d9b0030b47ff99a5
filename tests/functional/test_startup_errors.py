"""Daemons that cannot start say why in one line and exit non-zero, fast;
a scheduler that starts without a worker count says what it chose.

Each case runs the real console script against a cluster's broker and
database with one option broken, and reads what it printed. Passwords of
the URLs involved must not appear anywhere in the output.
"""

import re

import pytest

from scheduler.cmd import scheduler as scheduler_cmd
from scheduler import config as gantt_config
from tests.fixtures import databases
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

# "Quickly": well under the time a supervisor would wait, and much less
# than oslo.messaging's or SQLAlchemy's own retry loops would take.
QUICKLY = 20

SECRET = 's3cret'
UNREACHABLE_DB = 'postgresql+psycopg2://gantt:%s@127.0.0.1:1/gantt' % SECRET
UNREACHABLE_BROKER = 'rabbit://guest:%s@127.0.0.1:1/' % SECRET

DAEMONS = ('gantt-scheduler', 'gantt-conductor')


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    """A broker vhost and a migrated database; no daemon runs."""
    with cluster_mod.Cluster(tmp_path_factory.mktemp('startup'),
                             'sqlite') as running:
        yield running


def run(cluster, binary, name, extra_conf):
    """Run ``binary`` with ``extra_conf`` after the cluster's config."""
    return cluster.run_to_exit(binary, name, extra_conf,
                               timeout=2 * QUICKLY)


WARNING_START = re.compile(r'^\S+:\d+: \w*Warning: ')


def without_python_warnings(text):
    """``text`` without the blocks Python's warnings module printed (its
    ``file:line: Category: message`` line(s) and the indented source line);
    test_no_eventlet_warning_on_threads checks those separately."""
    kept, in_warning = [], False
    for line in text.splitlines():
        if WARNING_START.match(line):
            in_warning = True
        elif in_warning and line.startswith('  '):
            in_warning = False
        elif not in_warning:
            kept.append(line)
    return [line for line in kept if line.strip()]


def error_line(binary, exited):
    """The one line on stderr, ``<binary>: error: ...``; checks the exit."""
    output = exited.stdout + exited.stderr
    assert exited.returncode not in (0, None), output
    assert exited.seconds < QUICKLY, 'took %.1fs' % exited.seconds
    assert 'Traceback' not in output, output
    lines = without_python_warnings(exited.stderr)
    assert len(lines) == 1, exited.stderr
    assert lines[0].startswith('%s: error: ' % binary), lines[0]
    return lines[0]


def test_no_eventlet_warning_on_threads(cluster):
    """Daemons on native threads say nothing about eventlet (libraries
    import it when it is installed, and it warns that it is deprecated)."""
    exited = run(cluster, 'gantt-scheduler', 'warning-driver',
                 '[scheduler]\ndriver = nope\n')
    assert error_line('gantt-scheduler', exited)
    assert 'Eventlet is deprecated' not in exited.stdout + exited.stderr


def test_unknown_driver(cluster):
    exited = run(cluster, 'gantt-scheduler', 'bad-driver',
                 '[scheduler]\ndriver = nope\n')
    line = error_line('gantt-scheduler', exited)
    assert "'nope'" in line, line
    for driver in ('filter_scheduler', 'caching_scheduler',
                   'chance_scheduler'):
        assert driver in line, line


def test_nova_backend_needs_novas_exchange(cluster):
    exited = run(cluster, 'gantt-scheduler', 'nova-exchange',
                 '[scheduler]\nbackend = nova\n')
    line = error_line('gantt-scheduler', exited)
    assert 'control_exchange = nova' in line, line
    assert "'gantt'" in line, line


def test_unknown_filter(cluster):
    exited = run(cluster, 'gantt-scheduler', 'bad-filter',
                 '[filter_scheduler]\n'
                 'enabled_filters = ComputeFilter,NopeFilter,RamFilter\n')
    line = error_line('gantt-scheduler', exited)
    assert "'NopeFilter'" in line, line
    for name in ('AvailabilityZoneFilter', 'ComputeFilter', 'CoreFilter',
                 'DiskFilter', 'RamFilter'):
        assert name in line, line


def test_nova_weigher_gantt_lacks(cluster):
    """A nova.conf's path to a Nova class Gantt has no class for."""
    path = 'nova.scheduler.weights.affinity.NopeWeigher'
    exited = run(cluster, 'gantt-scheduler', 'bad-nova-weigher',
                 '[filter_scheduler]\nweight_classes = '
                 'nova.scheduler.weights.ram.RAMWeigher,%s\n' % path)
    line = error_line('gantt-scheduler', exited)
    assert "Unknown weigher '%s'" % path in line, line
    assert 'RAMWeigher' in line, line


def test_unknown_host_manager(cluster):
    exited = run(cluster, 'gantt-scheduler', 'bad-host-manager',
                 '[scheduler]\nhost_manager = baremetal_host_manager\n')
    line = error_line('gantt-scheduler', exited)
    assert 'option host_manager' in line, line
    assert 'bad-host-manager.conf' in line, line
    assert ("Valid values are [host_manager, ironic_host_manager], but "
            "found 'baremetal_host_manager'") in line, line


def test_unknown_baremetal_filter(cluster):
    exited = run(cluster, 'gantt-scheduler', 'bad-baremetal-filter',
                 '[scheduler]\nhost_manager = ironic_host_manager\n'
                 '[filter_scheduler]\nuse_baremetal_filters = true\n'
                 'baremetal_enabled_filters = ExactRamFilter,'
                 'ExactNopeFilter\n')
    line = error_line('gantt-scheduler', exited)
    assert "'ExactNopeFilter'" in line, line
    assert 'baremetal_enabled_filters' in line, line


@pytest.mark.parametrize('binary', DAEMONS)
def test_unreachable_database(cluster, binary):
    # A daemon waits for its database at start ([database] max_retries
    # times retry_interval, 100 s by default), then gives up.
    exited = run(cluster, binary, 'no-db-' + binary,
                 '[database]\nconnection = %s\nmax_retries = 2\n'
                 'retry_interval = 1\n' % UNREACHABLE_DB)
    line = error_line(binary, exited)
    assert 'postgresql+psycopg2://gantt:***@127.0.0.1:1/gantt' in line, line
    assert SECRET not in exited.stdout + exited.stderr


@pytest.mark.parametrize('binary', DAEMONS)
def test_unreachable_broker(cluster, binary):
    exited = run(cluster, binary, 'no-broker-' + binary,
                 '[DEFAULT]\ntransport_url = %s\n' % UNREACHABLE_BROKER)
    line = error_line(binary, exited)
    assert 'rabbit://guest:***@127.0.0.1:1/' in line, line
    assert SECRET not in exited.stdout + exited.stderr


@pytest.mark.parametrize('url, words', [
    # A driver takes the query as its options: 'password' is none of them.
    ('rabbit://guest@127.0.0.1:1/?password=%s' % SECRET,
     ["[DEFAULT] transport_url rabbit://guest@127.0.0.1:1/?password=***: "
      "'password' in its query is no option of [oslo_messaging_rabbit]",
      "reads a password from the URL's user info only"]),
    # A raw '/' ends urllib's host part: the port would be 'pa'.
    ('rabbit://guest:pa/%s@127.0.0.1:1/' % SECRET,
     ["[DEFAULT] transport_url rabbit://guest:***@127.0.0.1:1/: the "
      "password holds a raw '/'", "percent-encode it ('/' as %2F)"]),
])
def test_transport_url_oslo_messaging_would_misread(cluster, url, words):
    exited = run(cluster, 'gantt-scheduler', 'misread-url',
                 '[DEFAULT]\ntransport_url = %s\n' % url)
    line = error_line('gantt-scheduler', exited)
    assert line.startswith('gantt-scheduler: error: Configuration error: '), \
        line
    for expected in words:
        assert expected in line, line
    assert 'NoSuchOptError' not in exited.stdout + exited.stderr
    assert SECRET not in exited.stdout + exited.stderr


@pytest.mark.parametrize('binary', DAEMONS)
@pytest.mark.parametrize('backend', databases.BACKENDS)
def test_database_not_migrated(cluster, backend, binary):
    url = databases.create_database(backend)
    try:
        exited = run(cluster, binary, 'empty-db-%s-%s' % (backend, binary),
                     '[database]\nconnection = %s\n' % url)
    finally:
        databases.drop_database(url)
    line = error_line(binary, exited)
    assert "run 'gantt-manage db sync'" in line, line
    # The database is named, so the operator knows which one to migrate.
    assert gantt_config.redact_database_url(url) in line, line


def test_quorum_queues_over_classic_ones(tmp_path):
    """Classic queues of the scheduler's topic exist (the services ran
    before rabbit_quorum_queue was set): the scheduler says so and exits,
    instead of restarting its worker forever."""
    with cluster_mod.Cluster(tmp_path, 'sqlite') as own:
        classic = own.start_scheduler('quorum-host')
        classic.stop()
        exited = run(own, 'gantt-scheduler', 'quorum-host',
                     '[DEFAULT]\nhost = quorum-host\n'
                     '[oslo_messaging_rabbit]\nrabbit_quorum_queue = true\n')
    line = error_line('gantt-scheduler', exited)
    assert line.startswith(
        "gantt-scheduler: error: Configuration error: [oslo_messaging_rabbit]"
        " rabbit_quorum_queue is on, but queue 'scheduler' on "
        "rabbit://guest:***@127.0.0.1:5672/%s is a classic queue ("
        % own.vhost), line
    assert "inequivalent arg" in line, line
    assert ('rabbitmqctl delete_queue --vhost %s scheduler' % own.vhost
            in line), line


def test_scheduler_workers_unset_run_the_default_count(cluster):
    """``workers = 0`` (unset, as in Nova): one worker per CPU, but one on
    a host of two CPUs or fewer, which the log says with the reason."""
    process = cluster.start_scheduler('default-workers', workers=0)
    try:
        cpus = scheduler_cmd.usable_cpus()
        expected = scheduler_cmd.default_workers(cpus)
        cluster.wait_until(
            lambda: process.log().count(
                'gantt-scheduler on default-workers is ready') == expected,
            60, 'every worker serving', process)
        log = process.log()
        assert ('gantt-scheduler serving topic scheduler with %d worker(s)'
                % expected) in log
        said = ('[scheduler] workers is unset: 1 worker on this host of %d '
                'CPU(s)' % cpus)
        # Said only where the default is fewer than one per CPU.
        assert (said in log) == (expected < cpus)
    finally:
        process.stop()
