from scheduler.filters import retry_filter
from scheduler.objects import request_spec
from tests.unit.scheduler import fakes


def _spec(*pairs):
    return fakes.spec(retry=request_spec.SchedulerRetries(
        num_attempts=len(pairs), hosts=[list(pair) for pair in pairs]))


def test_first_attempt_passes_all():
    filt = retry_filter.RetryFilter()
    assert fakes.passes(filt, [fakes.host_state('a')], fakes.spec()) == [
        True]


def test_tried_nodes_fail():
    filt = retry_filter.RetryFilter()
    states = [fakes.host_state('a', nodename='a1'),
              fakes.host_state('a', nodename='a2'),
              fakes.host_state('b'),
              fakes.host_state('A', nodename='a1')]
    assert fakes.passes(filt, states, _spec(('a', 'a1'), ('b', 'b'))) == [
        False, True, False, True]


def test_flags_as_nova():
    assert retry_filter.RetryFilter.RUN_ON_REBUILD is False
    assert retry_filter.RetryFilter.run_filter_once_per_request is False
