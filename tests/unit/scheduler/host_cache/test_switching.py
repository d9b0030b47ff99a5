"""The scheduler daemon's short switch interval (switching.py): a
refresh thread running Python code gives the interpreter back to
requests within SWITCH_INTERVAL."""

import sys

import pytest

from scheduler.cmd import common
from scheduler.cmd import scheduler as scheduler_cmd
from scheduler import host_cache
from scheduler.host_cache import collector
from scheduler.host_cache import switching


@pytest.fixture
def interval():
    """The test process's switch interval, put back afterwards."""
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_the_default_interval_is_shortened(interval):
    sys.setswitchinterval(0.005)
    assert host_cache.shorten_switch_interval() == 0.005
    assert sys.getswitchinterval() == pytest.approx(
        switching.SWITCH_INTERVAL)
    assert switching.SWITCH_INTERVAL < 0.005


def test_a_shorter_interval_is_kept(interval):
    sys.setswitchinterval(0.0001)
    host_cache.shorten_switch_interval()
    assert sys.getswitchinterval() == pytest.approx(0.0001)


def test_the_scheduler_daemon_runs_with_the_short_interval(interval,
                                                           monkeypatch):
    sys.setswitchinterval(0.005)
    monkeypatch.setattr(collector, '_freezing', collector._freezing)
    started = []
    monkeypatch.setattr(common, 'run_daemon',
                        lambda *args, **kwargs: started.append(
                            sys.getswitchinterval()))
    scheduler_cmd.main()
    assert started == [pytest.approx(switching.SWITCH_INTERVAL)]
