import pytest

from scheduler.filters import ram_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return ram_filter.RamFilter()


def test_capacity_is_total_times_ratio_minus_reserved(filt):
    # 1024 * 1.5 - 512 = 1024 MB of room.
    state = fakes.host_state(memory_mb=1024, ram_ratio=1.5,
                             reserved_memory_mb=512)
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=1024)) == [True]
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=1025)) == [False]


def test_used_memory_counts(filt):
    state = fakes.host_state(memory_mb=2048, ram_ratio=1.0,
                             memory_mb_used=1536)
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=512)) == [True]
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=513)) == [False]


def test_oversubscribed_host_takes_zero_memory(filt):
    state = fakes.host_state(memory_mb=1024, ram_ratio=1.0,
                             memory_mb_used=4096)
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=0)) == [True]
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=1)) == [False]


def test_node_ratio_else_option(filt, config, cloud, make_host_manager):
    config.config(ram_allocation_ratio=2.0)
    cloud.add_node('own', memory_mb=1000, ram_allocation_ratio=1.0)
    cloud.add_node('default', memory_mb=1000)
    states = make_host_manager(auto_refresh=False).snapshot().states
    assert [s.ram_allocation_ratio for s in states] == [1.0, 2.0]
    result = fakes.passes(filt, states, fakes.spec(memory_mb=1500))
    assert result == [False, True]


def test_flags_as_nova():
    assert not ram_filter.RamFilter.RUN_ON_REBUILD
    assert not ram_filter.RamFilter.run_filter_once_per_request
