from scheduler.weights import server_group_soft_affinity as soft
from tests.unit.scheduler import fakes
from tests.unit.scheduler import group_fakes as gf

U = gf.UUIDS
WEIGHER = soft.ServerGroupSoftAffinityWeigher()
OPTION = 'soft_affinity_weight_multiplier'


def hosts():
    return [gf.host('h1', [U[0]]), gf.host('h2', [U[1], U[2], U[9]]),
            gf.host('h3'), gf.host('h4', [U[8]])]


def test_raw_weight_counts_the_members_on_each_host():
    spec = gf.spec(gf.group('soft-affinity', U[:3]))
    assert fakes.raw_weights(WEIGHER, hosts(), spec) == [1, 2, 0, 0]


def test_hosts_with_more_members_win():
    spec = gf.spec(gf.group('soft-affinity', U[:3]))
    assert fakes.weigh([WEIGHER], hosts(), spec) == [0.5, 1.0, 0.0, 0.0]


def test_other_policies_and_no_group_weigh_zero():
    for policy in ('affinity', 'anti-affinity', 'soft-anti-affinity'):
        spec = gf.spec(gf.group(policy, U[:3]))
        assert fakes.raw_weights(WEIGHER, hosts(), spec) == [0] * 4
    assert fakes.weigh([WEIGHER], hosts(), gf.spec()) == [0.0] * 4


def check_multipliers(config, weigher, option, spec):
    """The option scales the weights; aggregate metadata of the same name
    overrides it per host, the smallest value winning."""
    config.config(group='filter_scheduler', **{option: 3.0})
    assert max(fakes.weigh([weigher], hosts(), spec)) == 3.0
    normalized = [w / 3.0 for w in fakes.weigh([weigher], hosts(), spec)]
    aggregates = [fakes.aggregate('a', ['h1', 'h2', 'h3', 'h4'],
                                  **{option: '2.0'}),
                  fakes.aggregate('b', ['h2', 'h3'], **{option: '0.5'})]
    states = hosts()
    for state in states:
        state.aggregates = tuple(agg for agg in aggregates
                                 if state.host in agg.hosts)
    assert [weigher.weight_multiplier(s) for s in states] == [2.0, 0.5, 0.5,
                                                              2.0]
    assert fakes.weigh([weigher], states, spec, aggregates) == [
        n * m for n, m in zip(normalized, [2.0, 0.5, 0.5, 2.0])]


def test_multiplier_option_and_aggregate_overrides(config):
    check_multipliers(config, WEIGHER, OPTION,
                      gf.spec(gf.group('soft-affinity', U[:3])))
