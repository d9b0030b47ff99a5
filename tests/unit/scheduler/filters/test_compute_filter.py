import pytest

from scheduler.drivers import explain
from scheduler.filters import compute_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return compute_filter.ComputeFilter()


def test_up_and_enabled_passes(filt):
    assert fakes.passes(filt, [fakes.host_state('a')], fakes.spec()) == [True]


def test_disabled_fails(filt):
    svc = fakes.service('a', disabled=True, reason='broken disk')
    state = fakes.host_state('a', svc=svc)
    assert state.disabled_reason == 'broken disk'
    assert fakes.passes(filt, [state], fakes.spec()) == [False]


def test_forced_down_fails(filt):
    state = fakes.host_state('a', svc=fakes.service('a', forced_down=True))
    assert fakes.passes(filt, [state], fakes.spec()) == [False]


def test_no_heartbeat_or_no_service_fails(filt):
    never = fakes.host_state('a', svc=fakes.service('a', seen_ago=None))
    orphan = fakes.host_state('b', svc=None)
    assert fakes.passes(filt, [never, orphan], fakes.spec()) == [False, False]


def test_never_heartbeated_counts_from_created_at(filt, config):
    """Nova's DB servicegroup driver falls back to created_at: with 60s,
    a service created 20s ago that never heartbeated is up, one created
    90s ago is down; a heartbeat 90s in the future is down too."""
    config.config(service_down_time=60)
    new = fakes.host_state('a', svc=fakes.service('a', seen_ago=None,
                                                  created_ago=20))
    old = fakes.host_state('b', svc=fakes.service('b', seen_ago=None,
                                                  created_ago=90))
    ahead = fakes.host_state('c', svc=fakes.service('c', seen_ago=-90))
    assert fakes.passes(filt, [new, old, ahead], fakes.spec()) == [
        True, False, False]


def test_service_down_time_decides(filt, config):
    config.config(service_down_time=60)
    recent = fakes.host_state('a', svc=fakes.service('a', seen_ago=50))
    stale = fakes.host_state('b', svc=fakes.service('b', seen_ago=70))
    assert fakes.passes(filt, [recent, stale], fakes.spec()) == [True, False]
    config.config(service_down_time=80)
    assert fakes.passes(filt, [recent, stale], fakes.spec()) == [True, True]


def test_flags_as_nova():
    assert compute_filter.ComputeFilter.run_filter_once_per_request
    assert not compute_filter.ComputeFilter.RUN_ON_REBUILD


def test_reason_says_when_the_host_was_last_heard_from(filt, config):
    config.config(service_down_time=60)
    old = fakes.host_state('b', svc=fakes.service('b', seen_ago=None,
                                                  created_ago=90))
    stale = fakes.host_state('c', svc=fakes.service('c', seen_ago=70))
    reason = explain.reject_reason(filt, old, fakes.spec())
    assert 'has not been heard from in a while' in reason
    assert 'never heartbeated; created %s' % old.service.created_at in reason
    assert 'last heartbeat %s' % stale.service.last_seen_up in (
        explain.reject_reason(filt, stale, fakes.spec()))
