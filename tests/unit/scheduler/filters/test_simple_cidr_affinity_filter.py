import pytest

from scheduler import exception
from scheduler.filters import simple_cidr_affinity_filter as cidr_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return cidr_filter.SimpleCIDRAffinityFilter()


def _spec(**hints):
    return fakes.spec(scheduler_hints={k: [v] for k, v in hints.items()})


def _states():
    return [fakes.host_state('a', host_ip='10.1.20.5'),
            fakes.host_state('b', host_ip='10.1.21.5'),
            fakes.host_state('c', host_ip='10.2.0.1'),
            fakes.host_state('d', host_ip=None),
            fakes.host_state('e', host_ip='2001:db8::5'),
            fakes.host_state('f', host_ip='bogus')]


def test_without_hint_every_host_passes(filt):
    assert fakes.passes(filt, _states(), fakes.spec()) == [True] * 6


def test_default_cidr_is_slash_24(filt):
    assert fakes.passes(filt, _states(), _spec(
        build_near_host_ip='10.1.20.200')) == [
            True, False, False, False, False, False]


def test_cidr_hint(filt):
    assert fakes.passes(filt, _states(), _spec(
        build_near_host_ip='10.1.20.200', cidr='/22')) == [
            True, True, False, False, False, False]
    assert fakes.passes(filt, _states(), _spec(
        build_near_host_ip='10.1.20.200', cidr='/0')) == [
            True, True, True, False, False, False]


def test_ipv6(filt):
    assert fakes.passes(filt, _states(), _spec(
        build_near_host_ip='2001:db8::1', cidr='/64')) == [
            False, False, False, False, True, False]


def test_bad_hint_is_refused(filt):
    for hints in ({'build_near_host_ip': 'nearby'},
                  {'build_near_host_ip': '10.0.0.1', 'cidr': '/99'}):
        with pytest.raises(exception.InvalidRequest):
            filt.host_passes(_states()[0], _spec(**hints))
        with pytest.raises(exception.InvalidRequest):
            fakes.passes(filt, _states(), _spec(**hints))


def test_flags_as_nova():
    cls = cidr_filter.SimpleCIDRAffinityFilter
    assert cls.RUN_ON_REBUILD is False
    assert cls.run_filter_once_per_request is True


def test_bad_hint_with_no_host_left_is_not_read(filt):
    hosts = fakes.table(_states())
    mask = hosts.candidates & False
    assert not filt.filter_all(hosts, mask,
                               _spec(build_near_host_ip='nearby')).any()
