from scheduler.filters import all_hosts_filter
from tests.unit.scheduler import fakes


def test_every_host_passes():
    states = [fakes.host_state('a', svc=None),
              fakes.host_state('b', memory_mb=0)]
    result = fakes.passes(all_hosts_filter.AllHostsFilter(), states,
                          fakes.spec(memory_mb=10 ** 6))
    assert result == [True, True]


def test_flags_as_nova():
    assert all_hosts_filter.AllHostsFilter.run_filter_once_per_request
    assert not all_hosts_filter.AllHostsFilter.RUN_ON_REBUILD


def test_batch_keeps_the_mask():
    hosts = fakes.table([fakes.host_state('a'), fakes.host_state('b')])
    mask = hosts.candidates.copy()
    mask[0] = False
    result = all_hosts_filter.AllHostsFilter().filter_all(
        hosts, mask, fakes.spec())
    assert list(result) == [False, True]
