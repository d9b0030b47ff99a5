import pytest

from scheduler.weights import ram
from tests.unit.scheduler import fakes


def _hosts():
    return [fakes.host_state('a', memory_mb=1024),
            fakes.host_state('b', memory_mb=2048),
            fakes.host_state('c', memory_mb=3072, reserved_memory_mb=1024,
                             memory_mb_used=1024),
            fakes.host_state('d', memory_mb=8192)]


def test_raw_weight_is_free_ram_without_overcommit():
    assert fakes.raw_weights(ram.RAMWeigher(), _hosts()) == [1024, 2048,
                                                             1024, 8192]


def test_spreads_by_default():
    totals = fakes.weigh([ram.RAMWeigher()], _hosts())
    # minval is 0, as in Nova: weights are free RAM / the most free RAM.
    assert totals == pytest.approx([0.125, 0.25, 0.125, 1.0])


def test_negative_multiplier_stacks(config):
    config.config(ram_weight_multiplier=-2.0, group='filter_scheduler')
    totals = fakes.weigh([ram.RAMWeigher()], _hosts())
    assert totals == pytest.approx([-0.25, -0.5, -0.25, -2.0])
    assert max(range(4), key=totals.__getitem__) in (0, 2)


def test_overcommitted_host_counts_as_zero():
    states = [fakes.host_state('a', memory_mb=1024, memory_mb_used=1536),
              fakes.host_state('b', memory_mb=1024)]
    assert fakes.raw_weights(ram.RAMWeigher(), states) == [-512, 1024]
    assert fakes.weigh([ram.RAMWeigher()], states) == [0.0, 1.0]


def test_aggregate_overrides_multiplier(config):
    states = _hosts()
    aggs = [fakes.aggregate('stack', ['d'], ram_weight_multiplier='-1')]
    states[3] = fakes.host_state('d', memory_mb=8192, aggregates=aggs)
    totals = fakes.weigh([ram.RAMWeigher()], states, aggregates=aggs)
    assert totals == pytest.approx([0.125, 0.25, 0.125, -1.0])
    assert ram.RAMWeigher().weight_multiplier(states[3]) == -1.0
    assert ram.RAMWeigher().weight_multiplier(states[0]) == 1.0
