from scheduler.filters import server_group_affinity_filter
from tests.unit.scheduler import fakes
from tests.unit.scheduler import group_fakes as gf

FILTER = server_group_affinity_filter.ServerGroupAffinityFilter()
HOSTS = [gf.host('h1'), gf.host('h2'), gf.host('H1')]


def test_only_the_group_hosts_pass():
    spec = gf.spec(gf.group('affinity', gf.UUIDS[:2], ['h1']))
    assert fakes.passes(FILTER, HOSTS, spec) == [True, False, False]


def test_a_group_without_hosts_yet_passes_every_host():
    spec = gf.spec(gf.group('affinity', gf.UUIDS[:1]))
    assert fakes.passes(FILTER, HOSTS, spec) == [True, True, True]


def test_other_policies_and_no_group_pass_every_host():
    for policy in ('anti-affinity', 'soft-affinity', 'soft-anti-affinity'):
        spec = gf.spec(gf.group(policy, gf.UUIDS[:1], ['h1']))
        assert fakes.passes(FILTER, HOSTS, spec) == [True, True, True]
    assert fakes.passes(FILTER, HOSTS, gf.spec()) == [True, True, True]


def test_flags_as_nova():
    assert FILTER.RUN_ON_REBUILD is False
    assert FILTER.run_filter_once_per_request is False
