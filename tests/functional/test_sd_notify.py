"""systemd notification (``Type=notify`` units) from a real gantt-scheduler.

The test binds the Unix datagram socket systemd would, passes it in
``NOTIFY_SOCKET``, and reads what the daemon sends: ``READY=1`` once, only
after the RPC server consumes (the log says "is ready" and a call is
answered), and ``STOPPING=1`` when SIGTERM reaches the master.
"""

import os
import re
import signal

from oslo_utils import uuidutils
import pytest

from scheduler import context as gantt_context
from scheduler.objects import request_spec
from scheduler import rpcapi
from tests.fixtures import notify_socket as notify_socket_mod
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

# A line logged at ERROR (date, time, pid, level).
ERROR_LINE = re.compile(r'^\S+ \S+ \d+ ERROR ', re.MULTILINE)

HOST = 'cmp-notify'


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    with cluster_mod.Cluster(tmp_path_factory.mktemp('notify'),
                             'postgresql') as running:
        running.start_conductor()
        running.start_compute(HOST)
        running.wait_for_computes([HOST])
        running.discover_hosts()
        yield running


@pytest.fixture
def notify_socket(tmp_path):
    path = str(tmp_path / 'notify.sock')
    sock = notify_socket_mod.bind(path)
    yield sock, path
    sock.close()


receive = notify_socket_mod.receive


@pytest.mark.parametrize('eventlet', [False, True],
                         ids=['threading', 'eventlet'])
def test_ready_once_serving_and_stopping_on_sigterm(cluster, rpc_transport,
                                                    notify_socket, eventlet):
    sock, path = notify_socket
    rpc_transport(cluster, rpc_response_timeout=20)
    cluster.eventlet = eventlet
    try:
        process = cluster.start(
            'gantt-scheduler', 'sched-notify-%s' % eventlet,
            '[DEFAULT]\nhost = sched-notify\n', env={'NOTIFY_SOCKET': path})
    finally:
        cluster.eventlet = False
    try:
        assert receive(sock, 60) == 'READY=1'
        assert 'gantt-scheduler on sched-notify is ready' in process.log()
        spec = request_spec.RequestSpec(
            num_instances=1, flavor=request_spec.Flavor(
                name='tiny', vcpus=1, memory_mb=1, root_gb=0))
        selections = rpcapi.SchedulerAPI().select_destinations(
            gantt_context.get_admin_context(), spec,
            [uuidutils.generate_uuid()])
        assert selections[0][0].service_host == HOST
        # Nothing else: the libraries' own (early) READY=1 is not sent.
        assert receive(sock, 1) is None

        process.signal(signal.SIGTERM)
        assert receive(sock, 10) == 'STOPPING=1'
        # At the start of the shutdown: the workers are still draining.
        assert process.alive()
        assert process.popen.wait(60) == 0
        assert receive(sock, 0.5) is None
    finally:
        process.stop()


def worker_pids(process):
    """The pids of the daemon's forked workers (its children)."""
    return [pid for pid, parent, _name, _cpu in cluster_mod.process_table()
            if parent == process.popen.pid]


def next_ping(sock, timeout):
    """The next message other than a worker's READY=1 (each worker sends
    its own; systemd takes the first), or None."""
    message = receive(sock, timeout)
    while message == 'READY=1':
        message = receive(sock, timeout)
    return message


@pytest.mark.parametrize('eventlet', [False, True],
                         ids=['threading', 'eventlet'])
def test_the_watchdog_pings_while_every_worker_serves(cluster,
                                                      notify_socket,
                                                      eventlet):
    """WatchdogSec=2s: the master pings every second while both workers
    report; a frozen worker (SIGSTOP: it cannot report) stops the pings,
    though the other worker still serves; thawed, the pings resume."""
    sock, path = notify_socket
    cluster.eventlet = eventlet
    try:
        name = 'sched-watchdog-%s' % eventlet
        process = cluster.start_scheduler(
            name, workers=2,
            env={'NOTIFY_SOCKET': path, 'WATCHDOG_USEC': '2000000'})
    finally:
        cluster.eventlet = False
    try:
        assert receive(sock, 60) == 'READY=1'
        cluster.wait_until(
            lambda: process.log().count(
                'gantt-scheduler on %s is ready' % name) == 2,
            60, 'both workers serving', process)
        for _ in range(3):
            assert next_ping(sock, 5) == 'WATCHDOG=1'
        workers = worker_pids(process)
        assert len(workers) == 2

        os.kill(workers[1], signal.SIGSTOP)
        try:
            # At most one ping from the frozen worker's last report,
            # then none for two WatchdogSec.
            late = 0
            while next_ping(sock, 4) is not None:
                late += 1
                assert late <= 1, 'the pings go on'
            assert '1 of 2 worker(s) reported serving' in process.log()
        finally:
            os.kill(workers[1], signal.SIGCONT)
        assert next_ping(sock, 5) == 'WATCHDOG=1'
        assert process.alive()

        # A worker killed outright is forked again by the launcher; the
        # pings resume once the replacement serves.
        os.kill(workers[0], signal.SIGKILL)
        cluster.wait_until(
            lambda: process.log().count(
                'gantt-scheduler on %s is ready' % name) == 3,
            60, 'the replacement worker serving', process)
        assert workers[0] not in worker_pids(process)
        while next_ping(sock, 0.1) is not None:
            pass    # those sent before the replacement served
        assert next_ping(sock, 5) == 'WATCHDOG=1'
        assert next_ping(sock, 5) == 'WATCHDOG=1'

        process.signal(signal.SIGTERM)
        assert process.popen.wait(60) == 0
    finally:
        process.stop()


def test_the_watchdog_of_a_single_eventlet_process(cluster, notify_socket):
    """Under eventlet one worker runs in the master itself: the master's
    watchdog and the worker's report then share that process."""
    sock, path = notify_socket
    cluster.eventlet = True
    try:
        process = cluster.start_scheduler(
            'sched-watchdog-single', workers=1,
            env={'NOTIFY_SOCKET': path, 'WATCHDOG_USEC': '2000000'})
    finally:
        cluster.eventlet = False
    try:
        assert receive(sock, 60) == 'READY=1'
        for _ in range(3):
            assert receive(sock, 5) == 'WATCHDOG=1'
        process.signal(signal.SIGTERM)
        assert next_ping(sock, 10) in ('STOPPING=1', 'WATCHDOG=1')
        assert process.popen.wait(60) == 0
        assert not ERROR_LINE.search(process.log())
    finally:
        process.stop()
