import pytest

from scheduler.filters import core_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return core_filter.CoreFilter()


def test_capacity_is_total_times_ratio_minus_reserved(filt):
    # 4 * 2.0 - 1 = 7 vCPUs of room.
    state = fakes.host_state(vcpus=4, cpu_ratio=2.0, reserved_vcpus=1)
    assert fakes.passes(filt, [state], fakes.spec(vcpus=7)) == [True]
    assert fakes.passes(filt, [state], fakes.spec(vcpus=8)) == [False]


def test_used_vcpus_count(filt):
    state = fakes.host_state(vcpus=4, cpu_ratio=1.0, vcpus_used=3)
    assert fakes.passes(filt, [state], fakes.spec(vcpus=1)) == [True]
    assert fakes.passes(filt, [state], fakes.spec(vcpus=2)) == [False]


def test_host_without_cpus_fails(filt):
    # Nova passed such hosts "to be safe"; here the claim would fail.
    state = fakes.host_state(vcpus=0)
    assert fakes.passes(filt, [state], fakes.spec(vcpus=1)) == [False]


def test_fractional_ratio(filt):
    state = fakes.host_state(vcpus=3, cpu_ratio=1.5)   # 4.5 vCPUs
    assert fakes.passes(filt, [state], fakes.spec(vcpus=4)) == [True]
    assert fakes.passes(filt, [state], fakes.spec(vcpus=5)) == [False]


def test_flags_as_nova():
    assert not core_filter.CoreFilter.RUN_ON_REBUILD
