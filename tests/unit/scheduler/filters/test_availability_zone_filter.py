import pytest

from scheduler.filters import availability_zone_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def filt():
    return availability_zone_filter.AvailabilityZoneFilter()


def test_no_zone_requested_passes_all(filt):
    states = [fakes.host_state('a', zones=['az1']),
              fakes.host_state('b')]
    assert fakes.passes(filt, states, fakes.spec()) == [True, True]


def test_only_hosts_of_the_zone(filt):
    states = [fakes.host_state('a', zones=['az1']),
              fakes.host_state('b', zones=['az2']),
              fakes.host_state('c', zones=['nova'])]
    result = fakes.passes(filt, states, fakes.spec(availability_zone='az2'))
    assert result == [False, True, False]


def test_host_in_two_zones_passes_for_both(filt):
    state = fakes.host_state('a', zones=['az1', 'az2'])
    assert state.availability_zone == 'az1,az2'
    for zone in ('az1', 'az2'):
        assert fakes.passes(filt, [state],
                            fakes.spec(availability_zone=zone)) == [True]


def test_zones_come_from_aggregates(filt, cloud, config,
                                    make_host_manager):
    config.config(default_availability_zone='plain')
    cloud.add_node('a')
    cloud.add_node('b')
    cloud.aggregate('rack1', ['a'], availability_zone='az1')
    cloud.aggregate('gpus', ['a', 'b'], gpu='yes')
    states = make_host_manager(auto_refresh=False).snapshot().states
    assert [s.availability_zone for s in states] == ['az1', 'plain']
    assert sorted(a.name for a in states[0].aggregates) == ['gpus', 'rack1']
    assert fakes.passes(filt, states,
                        fakes.spec(availability_zone='az1')) == [True, False]
    assert fakes.passes(filt, states,
                        fakes.spec(availability_zone='plain')) == [False,
                                                                    True]


def test_flags_as_nova():
    cls = availability_zone_filter.AvailabilityZoneFilter
    assert cls.run_filter_once_per_request
    assert not cls.RUN_ON_REBUILD
