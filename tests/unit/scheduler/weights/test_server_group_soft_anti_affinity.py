from scheduler.weights import server_group_soft_anti_affinity as soft_anti
from tests.unit.scheduler import fakes
from tests.unit.scheduler import group_fakes as gf
from tests.unit.scheduler.weights import test_server_group_soft_affinity

U = gf.UUIDS
WEIGHER = soft_anti.ServerGroupSoftAntiAffinityWeigher()
OPTION = 'soft_anti_affinity_weight_multiplier'
hosts = test_server_group_soft_affinity.hosts


def test_raw_weight_is_minus_the_members_on_each_host():
    spec = gf.spec(gf.group('soft-anti-affinity', U[:3]))
    assert fakes.raw_weights(WEIGHER, hosts(), spec) == [-1, -2, 0, 0]


def test_hosts_with_fewer_members_win():
    spec = gf.spec(gf.group('soft-anti-affinity', U[:3]))
    assert fakes.weigh([WEIGHER], hosts(), spec) == [0.5, 0.0, 1.0, 1.0]


def test_other_policies_and_no_group_weigh_zero():
    for policy in ('affinity', 'anti-affinity', 'soft-affinity'):
        spec = gf.spec(gf.group(policy, U[:3]))
        assert fakes.raw_weights(WEIGHER, hosts(), spec) == [0] * 4
    assert fakes.weigh([WEIGHER], hosts(), gf.spec()) == [0.0] * 4


def test_multiplier_option_and_aggregate_overrides(config):
    test_server_group_soft_affinity.check_multipliers(
        config, WEIGHER, OPTION,
        gf.spec(gf.group('soft-anti-affinity', U[:3])))
