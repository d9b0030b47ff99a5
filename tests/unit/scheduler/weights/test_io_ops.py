import pytest

from scheduler.weights import io_ops
from tests.unit.scheduler import fakes


def _hosts():
    return [fakes.host_state(name, io_workload=load)
            for name, load in zip('abcd', [0, 2, 8, 4])]


def test_raw_weight_is_io_workload():
    assert fakes.raw_weights(io_ops.IoOpsWeigher(), _hosts()) == [
        0, 2, 8, 4]


def test_default_prefers_the_least_busy():
    totals = fakes.weigh([io_ops.IoOpsWeigher()], _hosts())
    assert totals == pytest.approx([0.0, -0.25, -1.0, -0.5])


def test_positive_multiplier_prefers_busy_hosts(config):
    config.config(io_ops_weight_multiplier=2.0, group='filter_scheduler')
    totals = fakes.weigh([io_ops.IoOpsWeigher()], _hosts())
    assert totals == pytest.approx([0.0, 0.5, 2.0, 1.0])


def test_aggregate_overrides_with_several_values():
    aggs = [fakes.aggregate('one', ['a', 'c'], io_ops_weight_multiplier='3'),
            fakes.aggregate('two', ['c'], io_ops_weight_multiplier='0.5')]
    states = _hosts()
    states[0] = fakes.host_state('a', io_workload=0, aggregates=aggs[:1])
    states[2] = fakes.host_state('c', io_workload=8, aggregates=aggs)
    weigher = io_ops.IoOpsWeigher()
    assert [weigher.weight_multiplier(s) for s in states] == [
        3.0, -1.0, 0.5, -1.0]
    totals = fakes.weigh([weigher], states, aggregates=aggs)
    assert totals == pytest.approx([0.0, -0.25, 0.5, -0.5])


def test_all_equal_weigh_the_same():
    # minval is 0, as in Nova: equal loads weigh load / load, not 0.
    states = [fakes.host_state(n, io_workload=3) for n in 'ab']
    assert fakes.weigh([io_ops.IoOpsWeigher()], states) == [-1.0, -1.0]
    states = [fakes.host_state(n, io_workload=0) for n in 'ab']
    assert fakes.weigh([io_ops.IoOpsWeigher()], states) == [0.0, 0.0]
