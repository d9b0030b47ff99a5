"""SIGTERM and SIGHUP on a busy gantt-scheduler.

Client threads in this process keep calling ``select_destinations`` (each
call claims one tiny instance in SQL) while a scheduler is stopped or
reloaded; not one call may fail. The computes are large enough that
capacity never runs out, so any failure is the signal's fault.

The cluster (conductor, computes, MariaDB) is shared; each test starts its
own schedulers and stops them before it ends, so that no other scheduler
consumes the topic when the next test starts.
"""

import contextlib
import signal
import threading
import time

from oslo_utils import uuidutils
import pytest

from scheduler import context as gantt_context
from scheduler import exception
from scheduler.objects import request_spec
from scheduler import rpcapi
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

HOSTS = ('cmp-1', 'cmp-2', 'cmp-3')
GRACEFUL_TIMEOUT = 20
ALL_FILTERS = ('AvailabilityZoneFilter', 'ComputeFilter', 'RamFilter',
               'CoreFilter', 'DiskFilter')


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    with cluster_mod.Cluster(
            tmp_path_factory.mktemp('signals'), 'mariadb',
            extra_conf='[DEFAULT]\ngraceful_shutdown_timeout = %d\n'
            % GRACEFUL_TIMEOUT) as running:
        running.start_conductor()
        for host in HOSTS:
            running.start_compute(host, vcpus=512, memory_mb=1 << 20,
                                  local_gb=1 << 20)
        running.wait_for_computes(HOSTS)
        running.discover_hosts()
        yield running


@pytest.fixture
def api(cluster, rpc_transport):
    rpc_transport(cluster, rpc_response_timeout=20)
    return rpcapi.SchedulerAPI()


def tiny_spec(availability_zone=None):
    return request_spec.RequestSpec(
        num_instances=1, availability_zone=availability_zone,
        flavor=request_spec.Flavor(name='tiny', vcpus=1, memory_mb=1,
                                   root_gb=0))


def allocated(cluster, uuids):
    uuids = set(uuids)
    return sorted(row.consumer_uuid for row in cluster.allocations()
                  if row.consumer_uuid in uuids)


class Clients:
    """Threads calling select_destinations until told to stop (or until
    each made ``calls_each`` calls)."""

    def __init__(self, api, threads, calls_each=None):
        self.api = api
        self.calls_each = calls_each
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.succeeded = []      # instance uuids placed
        self.failures = []       # (uuid, exception)
        self.threads = [threading.Thread(target=self._run, daemon=True,
                                         name='client-%d' % index)
                        for index in range(threads)]

    def _run(self):
        ctxt = gantt_context.get_admin_context()
        made = 0
        while not self.stopping.is_set() and (
                self.calls_each is None or made < self.calls_each):
            uuid = uuidutils.generate_uuid()
            try:
                selections = self.api.select_destinations(ctxt, tiny_spec(),
                                                          [uuid])
                assert selections[0][0].claimed, selections
            except Exception as error:
                with self.lock:
                    self.failures.append((uuid, error))
            else:
                with self.lock:
                    self.succeeded.append(uuid)
            made += 1

    def done(self):
        with self.lock:
            return len(self.succeeded) + len(self.failures)

    def start(self):
        for thread in self.threads:
            thread.start()

    def join(self, timeout=120, stop=True):
        """Wait for the threads; ``stop`` tells them to stop first (else
        they make all their ``calls_each`` calls)."""
        if stop:
            self.stopping.set()
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0, deadline - time.monotonic()))

    def assert_all_succeeded(self, expected=None):
        with self.lock:
            failures = list(self.failures)
            done = len(self.succeeded) + len(failures)
        assert not failures, '%d of %d calls failed, e.g. %s' % (
            len(failures), done, failures[:3])
        assert not any(t.is_alive() for t in self.threads), 'clients hung'
        if expected is not None:
            assert done == expected


@contextlib.contextmanager
def cleaned_up(clients, *processes):
    """Stop the client threads and the processes however the test ends."""
    try:
        yield
    finally:
        clients.stopping.set()
        for process in processes:
            process.stop()


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, 'timed out waiting for ' + what
        time.sleep(0.05)


def test_sigterm_finishes_in_flight_requests(cluster, api):
    leaving = cluster.start_scheduler('sched-leaving')
    staying = cluster.start_scheduler('sched-staying')
    clients = Clients(api, threads=6, calls_each=40)
    with cleaned_up(clients, leaving, staying):
        clients.start()
        # Let both schedulers serve for a while, then stop one mid-way.
        wait_for(lambda: clients.done() >= 60, 60, '60 calls')
        stop_offset = len(leaving.log())
        signalled = time.monotonic()
        leaving.signal(signal.SIGTERM)
        returncode = leaving.popen.wait(GRACEFUL_TIMEOUT + 10)
        exit_seconds = time.monotonic() - signalled
        clients.join(timeout=180, stop=False)

        clients.assert_all_succeeded(expected=6 * 40)
        assert returncode == 0, leaving.log()[stop_offset:][-3000:]
        assert exit_seconds < GRACEFUL_TIMEOUT
        assert staying.alive()
        # Both schedulers took part: the test stopped a busy scheduler.
        for process in (leaving, staying):
            assert 'Filter DiskFilter returned' in process.log(), (
                process.name + ' served nothing')
        assert 'Traceback' not in leaving.log()[stop_offset:]
        assert allocated(cluster, clients.succeeded) == sorted(
            clients.succeeded)


def test_sighup_applies_new_filters_without_failing_requests(cluster, api):
    ctxt = gantt_context.get_admin_context()
    process = cluster.start_scheduler('sched-hup', workers=2)
    clients = Clients(api, threads=4)
    with cleaned_up(clients, process):
        with pytest.raises(exception.NoValidHost) as info:
            api.select_destinations(ctxt, tiny_spec('nowhere'),
                                    [uuidutils.generate_uuid()])
        assert 'AvailabilityZoneFilter 3 -> 0' in str(info.value)

        clients.start()
        wait_for(lambda: clients.done() >= 20, 60, '20 calls')
        with open(process.conf_path, 'a') as conf_file:
            conf_file.write('[filter_scheduler]\nenabled_filters = %s\n'
                            % ','.join(ALL_FILTERS[1:]))
        process.signal(signal.SIGHUP)

        nowhere = []
        deadline = time.monotonic() + 30
        while True:
            uuid = uuidutils.generate_uuid()
            try:
                api.select_destinations(ctxt, tiny_spec('nowhere'), [uuid])
            except exception.NoValidHost:
                assert time.monotonic() < deadline, (
                    "'nowhere' still refused 30s after SIGHUP")
                time.sleep(0.2)
                continue
            nowhere.append(uuid)
            break
        # The workers reload one after the other (a request that one of
        # them took just before its swap still sees the old filters):
        # wait for both, then every worker has the new filters.
        reloaded = 'Filters: %s;' % ', '.join(ALL_FILTERS[1:])
        wait_for(lambda: process.log().count(reloaded) >= 2, 30,
                 'both workers reloaded')
        for _ in range(8):
            uuid = uuidutils.generate_uuid()
            api.select_destinations(ctxt, tiny_spec('nowhere'), [uuid])
            nowhere.append(uuid)
        before = clients.done()
        wait_for(lambda: clients.done() >= before + 20, 60,
                 '20 calls after the reload')
        clients.join()

        clients.assert_all_succeeded()
        assert process.alive()
        placed = clients.succeeded + nowhere
        assert allocated(cluster, placed) == sorted(placed)
