import pytest

from scheduler.filters import exact_ram_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return exact_ram_filter.ExactRamFilter()


def test_only_the_exact_free_ram_passes(filt):
    # Free RAM: 16384 - 0 - 0, 16384 - 512 reserved, 16384 - 16384 used.
    states = [fakes.host_state(memory_mb=16384),
              fakes.host_state(memory_mb=16384, reserved_memory_mb=512),
              fakes.host_state(memory_mb=16384, memory_mb_used=16384)]
    assert fakes.passes(filt, states, fakes.spec(memory_mb=16384)) == [
        True, False, False]
    assert fakes.passes(filt, states, fakes.spec(memory_mb=15872)) == [
        False, True, False]
    assert fakes.passes(filt, states, fakes.spec(memory_mb=16383)) == [
        False, False, False]
    assert fakes.passes(filt, states, fakes.spec(memory_mb=0)) == [
        False, False, True]


def test_the_allocation_ratio_does_not_count(filt):
    # RamFilter would take 24576 MB here (ratio 1.5); the exact filter
    # wants the 16384 MB the machine has.
    state = fakes.host_state(memory_mb=16384, ram_ratio=1.5)
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=24576)) == [
        False]
    assert fakes.passes(filt, [state], fakes.spec(memory_mb=16384)) == [
        True]


def test_flags_as_nova():
    assert not exact_ram_filter.ExactRamFilter.RUN_ON_REBUILD
    assert not exact_ram_filter.ExactRamFilter.run_filter_once_per_request
