import pytest

from scheduler.filters import server_group_anti_affinity_filter as anti
from tests.unit.scheduler import fakes
from tests.unit.scheduler import group_fakes as gf

FILTER = anti.ServerGroupAntiAffinityFilter()
U = gf.UUIDS


def _hosts():
    return [gf.host('h1', [U[0]]), gf.host('h2', [U[1], U[2], U[9]]),
            gf.host('h3', [U[8]]), gf.host('h4')]


def test_hosts_with_a_member_fail():
    spec = gf.spec(gf.group('anti-affinity', U[:3]))
    assert fakes.passes(FILTER, _hosts(), spec) == [False, False, True, True]


@pytest.mark.parametrize('limit, expected', [
    ('1', [False, False, True, True]),
    ('2', [True, False, True, True]),
    ('3', [True, True, True, True]),
])
def test_max_server_per_host(limit, expected):
    spec = gf.spec(gf.group('anti-affinity', U[:3],
                            rules={'max_server_per_host': limit}))
    assert fakes.passes(FILTER, _hosts(), spec) == expected


def test_the_instance_itself_may_stay_where_it_is():
    spec = gf.spec(gf.group('anti-affinity', U[:3]), instance_uuid=U[1])
    assert fakes.passes(FILTER, _hosts(), spec) == [False, True, True, True]


def test_other_policies_and_no_group_pass_every_host():
    for policy in ('affinity', 'soft-anti-affinity'):
        spec = gf.spec(gf.group(policy, U[:3]))
        assert fakes.passes(FILTER, _hosts(), spec) == [True] * 4
    assert fakes.passes(FILTER, _hosts(), gf.spec()) == [True] * 4


def test_an_invalid_rule_counts_as_one(caplog):
    spec = gf.spec(gf.group('anti-affinity', U[:3],
                            rules={'max_server_per_host': 'many'}))
    assert fakes.passes(FILTER, _hosts(), spec) == [False, False, True, True]
    assert 'invalid max_server_per_host rule' in caplog.text


def test_flags_as_nova():
    assert FILTER.RUN_ON_REBUILD is False
    assert FILTER.run_filter_once_per_request is False
