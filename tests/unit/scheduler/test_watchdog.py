"""The systemd watchdog: WATCHDOG=1 reaches a real Unix datagram socket
(bound where systemd's NOTIFY_SOCKET would be) while every worker's RPC
server consumes, and stops when one is dead; WATCHDOG_USEC and
WATCHDOG_PID are taken from the environment as sd_watchdog_enabled()
reads them."""

import logging
import os

import oslo_messaging as messaging
import pytest

from scheduler import rpc
from scheduler import sd_notify
from scheduler import service
from scheduler import watchdog
from tests.fixtures import notify_socket as notify_socket_mod
from tests.unit import inprocess

# A budget of 0.4 s: the master pings every 0.2 s, workers report every
# 0.1 s.
USEC = 400000


class _Endpoint:
    @rpc.expose
    def ping(self, ctxt):
        return 'pong'


@pytest.fixture
def notify_socket(tmp_path, monkeypatch):
    """A datagram socket bound where NOTIFY_SOCKET points, and taken
    (with a watchdog budget of USEC for this process) by sd_notify."""
    path = str(tmp_path / 'notify.sock')
    sock = notify_socket_mod.bind(path)
    environ = {'NOTIFY_SOCKET': path, 'WATCHDOG_USEC': str(USEC),
               'WATCHDOG_PID': str(os.getpid())}
    sd_notify.take_socket(environ)
    yield sock
    sd_notify.take_socket({})
    sock.close()


receive = notify_socket_mod.receive


def assert_pings(sock, count=3):
    for _ in range(count):
        assert receive(sock, 5) == 'WATCHDOG=1'


def assert_silent(sock, supervisor):
    """The pings stop: at most one more (a worker's last report may
    still be fresh at the next ping), then none for four ping intervals
    (two WatchdogSec: systemd would have restarted the unit)."""
    late = 0
    while receive(sock, 4 * supervisor.ping_interval) is not None:
        late += 1
        assert late <= 1, 'the pings go on'


@pytest.fixture
def rpc_server(config):
    """A factory of started RPC servers on the fake:// transport."""
    inprocess.use_fake_transport(config)
    servers = []

    def make(topic='watchdog-test'):
        server = rpc.get_server(messaging.Target(topic=topic, server='h1'),
                                [_Endpoint()])
        server.start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        if server._started:
            server.stop()
        server.wait()


@pytest.fixture
def supervisors():
    """A factory of supervisors; their reporters (``report(supervisor,
    server, identity)``) and they are stopped after the test."""
    made = []
    reporters = []

    def make(workers):
        supervisor = watchdog.Supervisor(sd_notify.watchdog_interval(),
                                         workers)
        made.append(supervisor)
        return supervisor

    def report(supervisor, server, identity=None):
        reporter = supervisor.reporter(server, identity=identity)
        reporters.append(reporter)
        reporter.start()
        return reporter

    make.report = report
    yield make
    for reporter in reporters:
        reporter.stop()
    for supervisor in made:
        supervisor.close()


# -- the environment -----------------------------------------------------


def test_the_budget_is_taken_out_of_the_environment():
    environ = {'NOTIFY_SOCKET': '/run/x', 'WATCHDOG_USEC': '60000000',
               'WATCHDOG_PID': '4242', 'OTHER': '1'}
    try:
        sd_notify.take_socket(environ, pid=4242)
        assert environ == {'OTHER': '1'}
        assert sd_notify.watchdog_interval() == 60000000
    finally:
        sd_notify.take_socket({})


@pytest.mark.parametrize('usec, pid, expected', [
    ('60000000', None, 60000000),        # no WATCHDOG_PID: ours
    ('60000000', '4242', 60000000),      # our pid
    ('60000000', '4243', None),          # another process's
    ('60000000', 'x', None),             # not a pid
    ('0', '4242', None),                 # disabled
    ('soon', '4242', None),              # not a number
    (None, '4242', None),                # no WatchdogSec
])
def test_the_watchdog_is_this_process_s_only_when_systemd_says(usec, pid,
                                                               expected):
    environ = {'NOTIFY_SOCKET': '/run/x'}
    if usec is not None:
        environ['WATCHDOG_USEC'] = usec
    if pid is not None:
        environ['WATCHDOG_PID'] = pid
    try:
        sd_notify.take_socket(environ, pid=4242)
        assert sd_notify.watchdog_interval() == expected
    finally:
        sd_notify.take_socket({})


def test_no_watchdog_without_a_notify_socket():
    try:
        sd_notify.take_socket({'WATCHDOG_USEC': '60000000'})
        assert sd_notify.watchdog_interval() is None
    finally:
        sd_notify.take_socket({})


def test_a_socket_nobody_reads_does_not_hang_the_sender(notify_socket,
                                                        monkeypatch):
    # notify_socket is never read here: its queue fills, and a message
    # is then given up after SEND_TIMEOUT instead of blocking forever
    # (the master sends STOPPING=1 from its SIGTERM handler).
    monkeypatch.setattr(sd_notify, 'SEND_TIMEOUT', 0.05)
    for _ in range(100000):
        if not sd_notify.watchdog():
            break
    else:
        raise AssertionError('the queue never filled')
    assert not sd_notify.stopping()


def test_a_supervisor_needs_a_budget_and_workers():
    with pytest.raises(ValueError, match='positive budget'):
        watchdog.Supervisor(0, 1)
    with pytest.raises(ValueError, match='workers'):
        watchdog.Supervisor(USEC, 0)


# -- what a worker checks ---------------------------------------------------


def test_a_consuming_server_has_no_problem(rpc_server):
    assert watchdog.rpc_server_problem(rpc_server()) is None


def test_a_stopped_server_is_not_running(rpc_server):
    server = rpc_server()
    server.stop()
    assert 'not running' in watchdog.rpc_server_problem(server)


def test_a_server_whose_executor_is_shut_down_is_dead(rpc_server):
    server = rpc_server()
    server._work_executor.shutdown(wait=True)
    assert 'executor is shut down' in watchdog.rpc_server_problem(server)


def test_a_server_whose_listener_thread_ended_is_dead(rpc_server):
    server = rpc_server()
    # The listener thread ends as it does when it returns from polling.
    server.listener._started = False
    server.listener._poll_style_listener.stop()
    server.listener._listen_thread.join(5)
    assert 'listener thread has ended' in \
        watchdog.rpc_server_problem(server)


# -- master and workers -------------------------------------------------------


def test_pings_arrive_while_the_server_serves_and_stop_when_it_is_dead(
        notify_socket, rpc_server, supervisors, caplog):
    server = rpc_server()
    supervisor = supervisors(workers=1)
    supervisor.start()
    supervisors.report(supervisor, server)
    assert_pings(notify_socket)

    caplog.set_level(logging.ERROR, logger='scheduler.watchdog')
    server._work_executor.shutdown(wait=True)
    assert_silent(notify_socket, supervisor)
    messages = [record.getMessage() for record in caplog.records]
    assert any('stops reporting' in message
               and 'executor is shut down' in message
               for message in messages), messages
    assert any('0 of 1 worker(s)' in message for message in messages), \
        messages


def test_a_dead_worker_is_not_masked_by_a_live_one(
        notify_socket, rpc_server, supervisors, caplog):
    supervisor = supervisors(workers=2)
    supervisor.start()
    first, second = rpc_server('first'), rpc_server('second')
    for identity, server in (('101', first), ('102', second)):
        supervisors.report(supervisor, server, identity)
    assert_pings(notify_socket)

    caplog.set_level(logging.ERROR, logger='scheduler.watchdog')
    second.stop()
    assert_silent(notify_socket, supervisor)
    assert watchdog.rpc_server_problem(first) is None
    assert any('1 of 2 worker(s)' in record.getMessage()
               for record in caplog.records)


def test_a_replacement_worker_brings_the_pings_back(
        notify_socket, rpc_server, supervisors):
    supervisor = supervisors(workers=2)
    supervisor.start()
    first = rpc_server('first')
    supervisors.report(supervisor, first, '101')
    dead = supervisors.report(supervisor, rpc_server('second'), '102')
    assert_pings(notify_socket)
    dead.stop()     # its process is gone
    assert_silent(notify_socket, supervisor)

    # The launcher forked a replacement, which serves under its own pid.
    supervisors.report(supervisor, rpc_server('third'), '103')
    assert_pings(notify_socket)


def test_nothing_is_sent_before_a_worker_serves(notify_socket, supervisors,
                                                caplog):
    caplog.set_level(logging.ERROR, logger='scheduler.watchdog')
    supervisor = supervisors(workers=2)
    supervisor.start()
    assert receive(notify_socket, 4 * supervisor.ping_interval) is None
    assert caplog.records == []


def test_at_start_up_one_serving_worker_is_enough_for_a_while(
        notify_socket, rpc_server, supervisors, monkeypatch):
    monkeypatch.setattr(watchdog, 'STARTUP_GRACE', 3)
    supervisor = supervisors(workers=2)
    supervisor.start()
    supervisors.report(supervisor, rpc_server(), '101')
    # The other worker never serves: the grace's pings, then none.
    assert_pings(notify_socket, count=3)
    assert_silent(notify_socket, supervisor)


def test_a_service_reports_while_it_serves_and_not_after_its_stop(
        config, notify_socket, supervisors, monkeypatch, caplog):
    inprocess.use_fake_transport(config)
    supervisor = supervisors(workers=1)
    monkeypatch.setattr(service, '_watchdog', supervisor)
    supervisor.start()
    server = service.Service('host1', 'gantt-scheduler', 'watchdog-svc',
                             service.Manager())
    server.start()
    try:
        assert receive(notify_socket, 5) == 'READY=1'
        assert_pings(notify_socket)
    finally:
        caplog.set_level(logging.ERROR, logger='scheduler.watchdog')
        server.stop()
    # A deliberate stop is no death: the worker says nothing at ERROR.
    assert not any('stops reporting' in record.getMessage()
                   for record in caplog.records)
