import pytest

from scheduler.weights import num_instances
from tests.unit.scheduler import fakes


def _hosts():
    return [fakes.host_state(name, num_instances=count)
            for name, count in zip('abc', [0, 5, 10])]


def test_off_by_default():
    weigher = num_instances.NumInstancesWeigher()
    assert fakes.raw_weights(weigher, _hosts()) == [0, 5, 10]
    assert fakes.weigh([weigher], _hosts()) == [0.0, 0.0, 0.0]


def test_negative_multiplier_spreads(config):
    config.config(num_instances_weight_multiplier=-1.0,
                  group='filter_scheduler')
    totals = fakes.weigh([num_instances.NumInstancesWeigher()], _hosts())
    assert totals == pytest.approx([0.0, -0.5, -1.0])


def test_normalised_from_the_fewest_not_from_zero(config):
    """Nova's NumInstancesWeigher has no minval: 5, 10 and 20 instances
    normalise over 5..20 to 0, 5/15 and 1, so with multiplier -1 they weigh
    0, -1/3 and -1 (a floor of 0 would give -0.25, -0.5 and -1)."""
    config.config(num_instances_weight_multiplier=-1.0,
                  group='filter_scheduler')
    states = [fakes.host_state(name, num_instances=count)
              for name, count in zip('abc', [5, 10, 20])]
    totals = fakes.weigh([num_instances.NumInstancesWeigher()], states)
    assert totals == pytest.approx([0.0, -1 / 3, -1.0])


def test_positive_multiplier_packs(config):
    config.config(num_instances_weight_multiplier=1.0,
                  group='filter_scheduler')
    totals = fakes.weigh([num_instances.NumInstancesWeigher()], _hosts())
    assert max(range(3), key=totals.__getitem__) == 2


def test_aggregate_override():
    agg = fakes.aggregate('pack', ['b'], num_instances_weight_multiplier='2')
    states = _hosts()
    states[1] = fakes.host_state('b', num_instances=5, aggregates=[agg])
    assert fakes.weigh([num_instances.NumInstancesWeigher()], states,
                       aggregates=[agg]) == pytest.approx([0.0, 1.0, 0.0])
