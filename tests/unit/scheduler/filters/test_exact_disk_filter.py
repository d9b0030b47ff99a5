import pytest

from scheduler.filters import exact_disk_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return exact_disk_filter.ExactDiskFilter()


def test_root_ephemeral_and_swap_must_make_the_free_disk(filt):
    # Free disk: 200 GB = 204800 MB; 200 - 10 reserved = 194560 MB.
    states = [fakes.host_state(local_gb=200),
              fakes.host_state(local_gb=200, reserved_disk_gb=10)]
    assert fakes.passes(filt, states, fakes.spec(root_gb=200)) == [
        True, False]
    # 199 GB + 1024 MB of swap = 204800 MB.
    assert fakes.passes(filt, states, fakes.spec(root_gb=199, swap=1024)) \
        == [True, False]
    assert fakes.passes(filt, states,
                        fakes.spec(root_gb=150, ephemeral_gb=40)) == [
        False, True]
    # 199 GB + 512 MB of swap: the disk filters would round it to 200 GB;
    # the exact one counts MB.
    assert fakes.passes(filt, states, fakes.spec(root_gb=199, swap=512)) \
        == [False, False]


def test_a_used_node_passes_only_a_diskless_flavor(filt):
    state = fakes.host_state(local_gb=200, local_gb_used=200)
    assert fakes.passes(filt, [state], fakes.spec(root_gb=1)) == [False]
    assert fakes.passes(filt, [state], fakes.spec(root_gb=0)) == [True]


def test_flags_as_nova():
    assert not exact_disk_filter.ExactDiskFilter.RUN_ON_REBUILD
    assert not exact_disk_filter.ExactDiskFilter.run_filter_once_per_request
