import pytest

from scheduler.filters import disk_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return disk_filter.DiskFilter()


def test_root_ephemeral_and_swap_count(filt):
    # 20 + 10 + ceil(1536 / 1024) = 32 GB.
    state = fakes.host_state(local_gb=100, disk_ratio=1.0,
                             local_gb_used=68)
    fits = fakes.spec(root_gb=20, ephemeral_gb=10, swap=1536)
    assert fits.resources().disk_gb == 32
    assert fakes.passes(filt, [state], fits) == [True]
    too_big = fakes.spec(root_gb=20, ephemeral_gb=10, swap=2049)
    assert fakes.passes(filt, [state], too_big) == [False]


def test_capacity_is_total_times_ratio_minus_reserved(filt):
    # 100 * 1.2 - 20 = 100 GB.
    state = fakes.host_state(local_gb=100, disk_ratio=1.2,
                             reserved_disk_gb=20)
    assert fakes.passes(filt, [state], fakes.spec(root_gb=100)) == [True]
    assert fakes.passes(filt, [state], fakes.spec(root_gb=101)) == [False]


def test_diskless_flavor_always_fits(filt):
    state = fakes.host_state(local_gb=10, local_gb_used=50)
    assert fakes.passes(filt, [state], fakes.spec(root_gb=0)) == [True]


def test_flags_as_nova():
    assert not disk_filter.DiskFilter.RUN_ON_REBUILD
