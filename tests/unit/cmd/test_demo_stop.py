"""gantt-demo ended (SIGTERM) while its services start: every service it
started is stopped, the last one too, else its threads would keep the
process from ever ending. A SIGTERM ends the demo between two of its
steps, never inside one (an RPC call, a service's start)."""

import logging
import os
import signal

import pytest

from compute import manager as compute_manager
from conductor import rpcapi as conductor_rpcapi
from scheduler.cmd import deferred_signal
from scheduler.cmd import demo
from scheduler import service


@pytest.fixture
def logging_kept():
    """The demo sets up logging for its process (levels, handlers): put
    back as they were, for the tests that run after in this process
    (gantt-manage explain reads the filters' DEBUG messages)."""
    loggers = [logging.getLogger()] + [
        logger for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)]
    saved = [(logger, logger.level, list(logger.handlers), logger.propagate,
              logger.disabled) for logger in loggers]
    yield
    for logger, level, handlers, propagate, disabled in saved:
        logger.setLevel(level)
        logger.handlers[:] = handlers
        logger.propagate = propagate
        logger.disabled = disabled
    known = {id(logger) for logger in loggers}
    for logger in list(logging.Logger.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger) and id(logger) not in known:
            logger.setLevel(logging.NOTSET)
            logger.handlers[:] = []


@pytest.mark.parametrize('when', ['as its start ends', 'before it starts'])
def test_a_demo_ended_while_its_scheduler_starts_stops_every_service(
        config, monkeypatch, logging_kept, when):
    started, stopped = [], []
    real_start, real_stop = service.Service.start, service.Service.stop

    def start(self):
        if self.binary == 'gantt-scheduler' and when == 'before it starts':
            raise SystemExit(128 + signal.SIGTERM)
        real_start(self)
        started.append(self.binary)
        if self.binary == 'gantt-scheduler':
            # What the demo raises after a start a SIGTERM came in,
            # here once the scheduler's queue is declared.
            raise SystemExit(128 + signal.SIGTERM)

    def stop(self, graceful=True):
        stopped.append(self.binary)
        return real_stop(self, graceful)
    monkeypatch.setattr(service.Service, 'start', start)
    monkeypatch.setattr(service.Service, 'stop', stop)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit):
            demo.main(['gantt-demo', '--hosts', '2', '--servers', '0'])
    finally:
        signal.signal(signal.SIGTERM, previous)
    computes = [compute_manager.BINARY] * 2
    assert started[:3] == ['gantt-conductor'] + computes
    assert sorted(stopped) == sorted(
        ['gantt-conductor', 'gantt-scheduler'] + computes)


def _main_terminated(argv):
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as ended:
            demo.main(argv)
    finally:
        signal.signal(signal.SIGTERM, previous)
    return ended.value.code


def test_a_sigterm_during_a_build_call_ends_the_demo_after_that_call(
        config, monkeypatch, logging_kept, capsys):
    """The signal lands while the main thread is inside its RPC call to
    the conductor: the call runs to its answer, no other build is asked
    for, and the demo ends, its services stopped."""
    calls = []
    real = conductor_rpcapi.ComputeTaskAPI.schedule_and_build_instances
    stopped = []
    real_stop = service.Service.stop

    def build(self, ctxt, instance_uuids, request_spec):
        calls.append('asked')
        if calls.count('asked') == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        result = real(self, ctxt, instance_uuids, request_spec)
        calls.append('answered')
        return result

    def stop(self, graceful=True):
        stopped.append(self.binary)
        return real_stop(self, graceful)
    monkeypatch.setattr(conductor_rpcapi.ComputeTaskAPI,
                        'schedule_and_build_instances', build)
    monkeypatch.setattr(service.Service, 'stop', stop)
    code = _main_terminated(['gantt-demo', '--hosts', '2', '--servers',
                             '20', '--seed', '1'])
    assert code == 128 + signal.SIGTERM
    assert calls == ['asked', 'answered'] * 2
    assert 'gantt-demo: terminated (signal 15)' in capsys.readouterr().err
    assert sorted(stopped) == sorted(
        ['gantt-conductor', 'gantt-scheduler'] + [compute_manager.BINARY] * 2)


def test_a_second_signal_acts_at_once():
    acted = []

    def act(signum):
        acted.append(signum)
        raise SystemExit(128 + signum)
    handler = deferred_signal.Deferred(act)
    handler.check()
    handler(signal.SIGTERM, None)
    assert acted == [] and handler.noted
    with pytest.raises(SystemExit):
        handler(signal.SIGTERM, None)
    assert acted == [signal.SIGTERM]
    with pytest.raises(SystemExit):
        handler.check()
