from scheduler.filters import same_host_filter
from tests.unit.scheduler import fakes
from tests.unit.scheduler import group_fakes as gf

FILTER = same_host_filter.SameHostFilter()
U = gf.UUIDS
HOSTS = [gf.host('h1', [U[0]]), gf.host('h2', [U[1], U[2]]), gf.host('h3')]


def _spec(*uuids):
    return gf.spec(scheduler_hints={'same_host': list(uuids)})


def test_hosts_running_one_of_the_instances_pass():
    assert fakes.passes(FILTER, HOSTS, _spec(U[0])) == [True, False, False]
    assert fakes.passes(FILTER, HOSTS, _spec(U[0], U[2])) == [
        True, True, False]


def test_unknown_instances_leave_no_host():
    assert fakes.passes(FILTER, HOSTS, _spec(U[7])) == [False] * 3


def test_no_hint_passes_every_host():
    assert fakes.passes(FILTER, HOSTS, gf.spec()) == [True] * 3


def test_flags_as_nova():
    assert FILTER.run_filter_once_per_request is True
    assert FILTER.RUN_ON_REBUILD is False
