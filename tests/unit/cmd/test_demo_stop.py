"""gantt-demo ended (SIGTERM) while its services start: every service it
started is stopped, the last one too, else its threads would keep the
process from ever ending."""

import logging
import signal

import pytest

from compute import manager as compute_manager
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
            # What the demo's SIGTERM handler raises, here once the
            # scheduler's queue is declared.
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
