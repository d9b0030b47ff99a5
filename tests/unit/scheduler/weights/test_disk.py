import pytest

from scheduler.weights import disk
from tests.unit.scheduler import fakes


def _hosts():
    return [fakes.host_state('a', local_gb=100),
            fakes.host_state('b', local_gb=200, local_gb_used=50,
                             reserved_disk_gb=10),
            fakes.host_state('c', local_gb=400, disk_ratio=2.0)]


def test_raw_weight_is_free_disk_mb_without_overcommit():
    assert fakes.raw_weights(disk.DiskWeigher(), _hosts()) == [
        100 * 1024, 140 * 1024, 400 * 1024]


def test_spreads_by_default():
    totals = fakes.weigh([disk.DiskWeigher()], _hosts())
    assert totals == pytest.approx([0.25, 0.35, 1.0])


def test_negative_multiplier_stacks(config):
    config.config(disk_weight_multiplier=-0.5, group='filter_scheduler')
    totals = fakes.weigh([disk.DiskWeigher()], _hosts())
    assert totals == pytest.approx([-0.125, -0.175, -0.5])
