import pytest

from scheduler.filters import io_ops_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return io_ops_filter.IoOpsFilter()


def test_default_limit_is_eight(filt):
    states = [fakes.host_state('a', io_workload=7),
              fakes.host_state('b', io_workload=8),
              fakes.host_state('c', io_workload=9)]
    assert fakes.passes(filt, states, fakes.spec()) == [True, False, False]


def test_option(filt, config):
    config.config(max_io_ops_per_host=0, group='filter_scheduler')
    assert fakes.passes(filt, [fakes.host_state(io_workload=0)],
                        fakes.spec()) == [False]


def test_flags_as_nova():
    assert io_ops_filter.IoOpsFilter.RUN_ON_REBUILD is False
    assert io_ops_filter.IoOpsFilter.run_filter_once_per_request is False
