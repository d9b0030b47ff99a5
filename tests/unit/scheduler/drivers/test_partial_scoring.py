"""[filter_scheduler] hosts_to_score_percent: partial scoring."""

import numpy as np

from scheduler.drivers import filter_scheduler
from scheduler import filters
from scheduler.filters import ram_filter
from tests.unit.scheduler import fakes


def _place(driver, cloud, count):
    """Place ``count`` requests of 1 GB with two alternates each; the
    hosts of each answer, and the claims to release."""
    answers, claimed = [], []
    for number, uuid in enumerate(fakes.uuids(count)):
        [selection] = driver.select_destinations(
            None, fakes.spec(memory_mb=1024 * (1 + number % 3)), [uuid],
            True)
        answers.append([s.service_host for s in selection])
        claimed.append((uuid, cloud.nodes[selection[0].service_host]))
    return answers, claimed


def test_100_percent_places_exactly_as_full_scoring(cloud, make_driver,
                                                    make_host_manager,
                                                    config):
    # Twelve hosts of different sizes; the RAM weigher spreads, so each
    # request goes to the host with most free RAM, then the next ones.
    config.config(max_attempts=3, group='scheduler')
    for number in range(12):
        cloud.add_node('h%02d' % number,
                       memory_mb=4096 * (1 + (7 * number) % 12))
    # No background refresh: one landing between two placements of one
    # run and not the other would make the runs start from different
    # host states (the instances the cache counts for IoOpsWeigher).
    driver = make_driver(filter_scheduler.FilterScheduler,
                         host_manager=make_host_manager(auto_refresh=False))
    full, claimed = _place(driver, cloud, 30)
    # Worked out by hand: h05 has 48 GB, h10 44 GB, h03 40 GB.
    assert full[0] == ['h05', 'h10', 'h03']
    driver.release(claimed)
    config.config(hosts_to_score_percent=100, group='filter_scheduler')
    partial, _claimed = _place(driver, cloud, 30)
    assert partial == full
    # And a small percentage does not: it ranks a window of hosts.
    driver.release(_claimed)
    config.config(hosts_to_score_percent=10, group='filter_scheduler')
    sampled, _claimed = _place(driver, cloud, 30)
    assert sampled != full


def test_a_small_percentage_filters_a_rotating_window():
    # Ten equal hosts, 20%: two must pass; the first window holds four
    # (FIRST_WINDOW_FACTOR x 2) and all pass, so four are weighed.
    states = [fakes.host_state('h%d' % n, memory_mb=8192)
              for n in range(10)]
    table = fakes.table(states)
    handler = filters.HostFilterHandler()
    enabled = [ram_filter.RamFilter()]
    first = handler.run_filters(enabled, table, table.candidates,
                                fakes.spec(memory_mb=1024), wanted=2)
    assert list(np.flatnonzero(first.mask)) == [0, 1, 2, 3]
    assert first.steps[0] == filters.Step('hosts_to_score_percent', 10, 4)
    second = handler.run_filters(enabled, table, table.candidates,
                                 fakes.spec(memory_mb=1024), wanted=2)
    assert list(np.flatnonzero(second.mask)) == [4, 5, 6, 7]
    third = handler.run_filters(enabled, table, table.candidates,
                                fakes.spec(memory_mb=1024), wanted=2)
    # Wraps around: 8, 9, then 0, 1.
    assert list(np.flatnonzero(third.mask)) == [0, 1, 8, 9]


def test_the_window_grows_until_enough_hosts_pass():
    # Only the last two of eight hosts have room: windows of 2, 4 then
    # the last 2 are filtered before two hosts pass.
    states = [fakes.host_state('h%d' % n, memory_mb=1024)
              for n in range(6)]
    states += [fakes.host_state('big%d' % n, memory_mb=8192)
               for n in range(2)]
    table = fakes.table(states)
    result = filters.HostFilterHandler().run_filters(
        [ram_filter.RamFilter()], table, table.candidates,
        fakes.spec(memory_mb=4096), wanted=1)
    assert list(np.flatnonzero(result.mask)) == [6, 7]
    # Every host was looked at: no partial step, the counts of a full run.
    assert result.steps == [filters.Step('RamFilter', 8, 2)]


def test_wanted_hosts_follows_the_percentage_and_the_minimum(config):
    assert filter_scheduler.hosts_to_score(1000, 3) is None
    config.config(hosts_to_score_percent=10, group='filter_scheduler')
    assert filter_scheduler.hosts_to_score(1000, 3) == 100
    assert filter_scheduler.hosts_to_score(20, 3) == 3
    assert filter_scheduler.hosts_to_score(25, 1) == 3
