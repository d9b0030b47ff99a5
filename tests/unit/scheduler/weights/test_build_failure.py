import pytest

from scheduler.weights import build_failure
from scheduler.weights import ram
from tests.unit.scheduler import fakes


def _hosts():
    return [fakes.host_state(name, stats={'failed_builds': failed})
            for name, failed in zip('abc', ['0', '2', '4'])]


def test_raw_weight_is_failed_builds():
    weigher = build_failure.BuildFailureWeigher()
    assert fakes.raw_weights(weigher, _hosts()) == [0, 2, 4]
    assert fakes.raw_weights(weigher, [fakes.host_state()]) == [0]


def test_multiplier_is_negated():
    weigher = build_failure.BuildFailureWeigher()
    assert weigher.weight_multiplier(_hosts()[0]) == -1000000.0
    totals = fakes.weigh([weigher], _hosts())
    assert totals == pytest.approx([0.0, -500000.0, -1000000.0])


def test_failures_outweigh_free_ram():
    states = [fakes.host_state('a', memory_mb=64000,
                               stats={'failed_builds': 1}),
              fakes.host_state('b', memory_mb=1000)]
    totals = fakes.weigh([ram.RAMWeigher(),
                          build_failure.BuildFailureWeigher()], states)
    assert totals[1] > totals[0]


def test_aggregate_override_before_negation(config):
    aggs = [fakes.aggregate('a1', ['b'], build_failure_weight_multiplier='10'),
            fakes.aggregate('a2', ['b'], build_failure_weight_multiplier='3')]
    states = _hosts()
    states[1] = fakes.host_state('b', stats={'failed_builds': 2},
                                 aggregates=aggs)
    weigher = build_failure.BuildFailureWeigher()
    assert weigher.weight_multiplier(states[1]) == -3.0
    hosts = fakes.table(states, aggs)
    assert list(weigher.weight_multipliers(hosts, [0, 1, 2])) == [
        -1e6, -3.0, -1e6]
    assert fakes.weigh([weigher], states, aggregates=aggs) == pytest.approx(
        [0.0, -1.5, -1e6])


def test_zero_multiplier_ignores_failures(config):
    config.config(build_failure_weight_multiplier=0.0,
                  group='filter_scheduler')
    totals = fakes.weigh([build_failure.BuildFailureWeigher()], _hosts())
    assert totals == [0.0, 0.0, 0.0]
