"""Guru Meditation Reports and the option dump on real daemons.

SIGUSR2 to a scheduler's master writes its report and passes the signal
to both workers, which write theirs (with the host cache and the
requests in flight); nothing stops, and the scheduler answers the next
call. The same under eventlet. With --debug every daemon logs its
options at start and on SIGHUP, passwords masked.
"""

import re
import signal
import time

from oslo_utils import uuidutils
import pytest

from scheduler import context as gantt_context
from scheduler.objects import request_spec
from scheduler import rpcapi
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

REPORT = 'Guru Meditation'


def tiny_spec():
    return request_spec.RequestSpec(
        num_instances=1,
        flavor=request_spec.Flavor(name='tiny', vcpus=1, memory_mb=1,
                                   root_gb=0))


def start_cloud(cluster, workers, extra_conf=''):
    cluster.start_conductor()
    cluster.start_compute('cmp-1')
    cluster.wait_for_computes(['cmp-1'])
    cluster.discover_hosts()
    return cluster.start_scheduler(workers=workers, extra_conf=extra_conf)


def reports_in(log):
    """{pid: report text} of the reports in a daemon's log."""
    found = {}
    for chunk in re.split(r'====\s+Gantt\s+====', log)[1:]:
        pid = None
        for line in chunk.splitlines():
            if line.startswith('process = '):
                pid = int(line.split('=')[1])
                break
        found[pid] = chunk
    return found


def place_one(cluster, rpc_transport):
    rpc_transport(cluster, rpc_response_timeout=30)
    selections = rpcapi.SchedulerAPI().select_destinations(
        gantt_context.get_admin_context(), tiny_spec(),
        [uuidutils.generate_uuid()])
    assert selections[0][0].service_host == 'cmp-1'


def wait_for_reports(cluster, process, count):
    cluster.wait_until(lambda: len(reports_in(process.log())) >= count, 30,
                       '%d report(s)' % count, process)
    return reports_in(process.log())


def test_sigusr2_reports_from_the_master_and_each_worker(tmp_path,
                                                         rpc_transport):
    with cluster_mod.Cluster(tmp_path, 'sqlite') as cluster:
        scheduler = start_cloud(cluster, workers=2)
        place_one(cluster, rpc_transport)
        scheduler.signal(signal.SIGUSR2)
        reports = wait_for_reports(cluster, scheduler, 3)
        assert scheduler.popen.pid in reports
        master = reports[scheduler.popen.pid]
        workers = [report for pid, report in reports.items()
                   if pid != scheduler.popen.pid]
        assert len(workers) == 2
        assert 'workers (each writes its own report)' in master
        for report in workers:
            assert 'hosts = 1' in report, report
            assert 'requests in flight = 0' in report, report
        log = scheduler.log()
        for section in ('Package', 'Threads', 'Configuration'):
            assert re.search(r'====\s+%s\s+====' % section, log), section
        # Still serving, in every process.
        time.sleep(0.5)
        assert scheduler.alive()
        place_one(cluster, rpc_transport)
        assert scheduler.stop() == 0


@pytest.mark.eventlet
def test_sigusr2_under_eventlet(tmp_path, rpc_transport):
    with cluster_mod.Cluster(tmp_path, 'sqlite', eventlet=True) as cluster:
        scheduler = start_cloud(cluster, workers=1)
        place_one(cluster, rpc_transport)
        scheduler.signal(signal.SIGUSR2)
        reports = wait_for_reports(cluster, scheduler, 1)
        assert any('hosts = 1' in report for report in reports.values()), \
            reports
        assert scheduler.alive()
        place_one(cluster, rpc_transport)


def test_a_missing_file_event_handler_stops_the_start(tmp_path):
    with cluster_mod.Cluster(tmp_path, 'sqlite') as cluster:
        missing = str(tmp_path / 'no-such-file')
        exited = cluster.run_to_exit(
            'gantt-scheduler', 'scheduler',
            '[DEFAULT]\nhost = scheduler\n[oslo_reports]\n'
            'file_event_handler = %s\n' % missing)
    assert exited.returncode == 1
    assert exited.stderr.strip().splitlines() == [
        'gantt-scheduler: error: Configuration error: [oslo_reports] '
        'file_event_handler %s is not a file' % missing]


def test_options_are_logged_at_start_and_on_sighup_with_secrets_masked(
        tmp_path):
    with cluster_mod.Cluster(tmp_path, 'sqlite') as cluster:
        scheduler = start_cloud(cluster, workers=1,
                                extra_conf='[DEFAULT]\ndebug = true\n')
        url = cluster.transport_url
        password = url.split('//')[1].split('@')[0].split(':')[1]
        log = scheduler.log()
        assert log.count('enabled_filters') >= 1
        assert 'transport_url' in log and '****' in log
        assert ':%s@' % password not in log
        before = log.count('enabled_filters')
        scheduler.signal(signal.SIGHUP)
        cluster.wait_until(
            lambda: scheduler.log().count('enabled_filters') > before, 30,
            'the options logged again after SIGHUP', scheduler)
        assert ':%s@' % password not in scheduler.log()
