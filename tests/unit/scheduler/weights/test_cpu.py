import pytest

from scheduler.weights import cpu
from tests.unit.scheduler import fakes


def _hosts():
    return [fakes.host_state('a', vcpus=4, cpu_ratio=1.0),
            fakes.host_state('b', vcpus=4, cpu_ratio=2.0, vcpus_used=2),
            fakes.host_state('c', vcpus=8, cpu_ratio=1.0, reserved_vcpus=2,
                             vcpus_used=6)]


def test_raw_weight_is_vcpus_a_claim_could_take():
    # 4, 4 * 2 - 2 = 6, 8 - 2 - 6 = 0
    assert fakes.raw_weights(cpu.CPUWeigher(), _hosts()) == [4.0, 6.0, 0.0]


def test_spreads_by_default():
    totals = fakes.weigh([cpu.CPUWeigher()], _hosts())
    assert totals == pytest.approx([4 / 6, 1.0, 0.0])


def test_negative_multiplier_stacks(config):
    config.config(cpu_weight_multiplier=-1.0, group='filter_scheduler')
    totals = fakes.weigh([cpu.CPUWeigher()], _hosts())
    assert totals == pytest.approx([-4 / 6, -1.0, 0.0])


def test_zero_multiplier_ignores_cpus(config):
    config.config(cpu_weight_multiplier=0.0, group='filter_scheduler')
    assert fakes.weigh([cpu.CPUWeigher()], _hosts()) == [0.0, 0.0, 0.0]
