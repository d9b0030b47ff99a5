import pytest

from scheduler.filters import num_instances_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return num_instances_filter.NumInstancesFilter()


def test_default_limit_is_fifty(filt):
    states = [fakes.host_state('a', num_instances=49),
              fakes.host_state('b', num_instances=50)]
    assert fakes.passes(filt, states, fakes.spec()) == [True, False]


def test_option(filt, config):
    config.config(max_instances_per_host=2, group='filter_scheduler')
    states = [fakes.host_state('a', num_instances=1),
              fakes.host_state('b', num_instances=2)]
    assert fakes.passes(filt, states, fakes.spec()) == [True, False]


def test_flags_as_nova():
    cls = num_instances_filter.NumInstancesFilter
    assert cls.RUN_ON_REBUILD is False
    assert cls.run_filter_once_per_request is False
