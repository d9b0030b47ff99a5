from scheduler.filters import different_host_filter
from tests.unit.scheduler import fakes
from tests.unit.scheduler import group_fakes as gf

FILTER = different_host_filter.DifferentHostFilter()
U = gf.UUIDS
HOSTS = [gf.host('h1', [U[0]]), gf.host('h2', [U[1], U[2]]), gf.host('h3')]


def _spec(*uuids):
    return gf.spec(scheduler_hints={'different_host': list(uuids)})


def test_hosts_running_one_of_the_instances_fail():
    assert fakes.passes(FILTER, HOSTS, _spec(U[0])) == [False, True, True]
    assert fakes.passes(FILTER, HOSTS, _spec(U[0], U[2])) == [
        False, False, True]


def test_unknown_instances_and_no_hint_pass_every_host():
    assert fakes.passes(FILTER, HOSTS, _spec(U[7])) == [True] * 3
    assert fakes.passes(FILTER, HOSTS, gf.spec()) == [True] * 3


def test_flags_as_nova():
    assert FILTER.run_filter_once_per_request is True
    assert FILTER.RUN_ON_REBUILD is False
