import collections
import logging
import threading

import pytest

from scheduler.db import claims
from scheduler import exception
from scheduler.drivers import filter_scheduler
from scheduler.objects import request_spec
from tests.unit.scheduler import fakes


@pytest.fixture
def driver(cloud, make_driver):
    return make_driver(filter_scheduler.FilterScheduler)


def _hosts(selections):
    return [[s.service_host for s in alternatives]
            for alternatives in selections]


def test_lands_on_the_host_with_most_free_ram_and_claims_in_sql(cloud,
                                                                driver):
    cloud.add_node('small', memory_mb=8192)
    cloud.add_node('big', memory_mb=16384)
    cloud.add_node('tiny', memory_mb=4096)
    [uuid] = fakes.uuids(1)
    selections = driver.select_destinations(
        None, fakes.spec(vcpus=2, memory_mb=2048, root_gb=20), [uuid], False)
    assert _hosts(selections) == [['big']]
    chosen = selections[0][0]
    assert chosen.claimed
    assert chosen.compute_node_uuid == cloud.node_row('big').uuid
    assert chosen.requested_resources() == {'vcpus': 2, 'memory_mb': 2048,
                                            'disk_gb': 20}
    # The node reports no ratio: [DEFAULT] initial_ram_allocation_ratio.
    assert chosen.limits['memory_mb'] == 16384 * 1.0
    assert cloud.allocations(uuid) == {'big': (2, 2048, 20)}
    row = cloud.node_row('big')
    assert (row.vcpus_used, row.memory_mb_used, row.local_gb_used) == (
        2, 2048, 20)
    assert driver.stats['claims'] == 1
    assert driver.last_timings['filter_weigh'] > 0
    assert driver.last_timings['claim'] > 0


def test_a_request_reads_its_resources_from_the_spec_once(
        cloud, driver, config, monkeypatch):
    # The capacity filters, the placement stage and the claim all ask the
    # spec for its resources: the flavor and image are read once.
    config.config(enabled_filters=['ComputeFilter', 'RamFilter',
                                   'CoreFilter', 'DiskFilter'],
                  group='filter_scheduler')
    driver.reload_plugins()
    for name in ('a', 'b', 'c'):
        cloud.add_node(name)
    reads = []
    real = request_spec.RequestSpec._resources

    def counted(spec):
        reads.append(spec)
        return real(spec)
    monkeypatch.setattr(request_spec.RequestSpec, '_resources', counted)
    spec = fakes.spec(vcpus=2, memory_mb=2048, root_gb=20)
    selections = driver.select_destinations(None, spec, fakes.uuids(2),
                                            False)
    assert len(selections) == 2
    assert len(reads) == 1
    # Let go once answered: the spec reads its flavor again.
    spec.flavor.vcpus = 3
    assert spec.resources().vcpus == 3


def test_alternates_are_the_next_best_unclaimed_hosts(cloud, driver,
                                                      config):
    config.config(max_attempts=3, group='scheduler')
    for name, memory in (('a', 4096), ('b', 16384), ('c', 8192),
                         ('d', 2048)):
        cloud.add_node(name, memory_mb=memory)
    [uuid] = fakes.uuids(1)
    selections = driver.select_destinations(None, fakes.spec(), [uuid], True)
    assert _hosts(selections) == [['b', 'c', 'a']]
    assert [s.claimed for s in selections[0]] == [True, False, False]
    assert cloud.allocations(uuid) == {'b': (1, 512, 0)}


def test_several_instances_consume_before_the_next_choice(cloud, driver):
    cloud.add_node('a', memory_mb=4096, ram_allocation_ratio=1.0)
    cloud.add_node('b', memory_mb=4096, ram_allocation_ratio=1.0)
    uuids = fakes.uuids(4)
    selections = driver.select_destinations(
        None, fakes.spec(memory_mb=2048, num_instances=4), uuids, True)
    landed = collections.Counter(sel[0].service_host for sel in selections)
    assert landed == {'a': 2, 'b': 2}
    for uuid, sel in zip(uuids, selections):
        assert cloud.allocations(uuid) == {sel[0].service_host: (1, 2048, 0)}
        # Every host was claimed on: no alternates are left.
        assert len(sel) == 1
    assert cloud.node_row('a').memory_mb_used == 4096


def test_no_valid_host_names_the_filter_and_writes_nothing(cloud, driver):
    for name in ('a', 'b', 'c'):
        cloud.add_node(name, memory_mb=1024)
    cloud.disable('c')
    [uuid] = fakes.uuids(1)
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, fakes.spec(memory_mb=4096), [uuid])
    message = str(error.value)
    assert 'There are not enough hosts available' in message
    assert ('0/3 hosts available: AvailabilityZoneFilter 3 -> 3, '
            'ComputeFilter 3 -> 2, RamFilter 2 -> 0 (removed the last 2)'
            in message)
    assert cloud.allocations(uuid) == {}
    assert driver.stats['no_valid_host'] == 1


def test_failure_of_a_later_instance_releases_earlier_claims(cloud, driver):
    cloud.add_node('a', memory_mb=4096, ram_allocation_ratio=1.0)
    uuids = fakes.uuids(3)
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(
            None, fakes.spec(memory_mb=2048, num_instances=3), uuids)
    assert 'Instance 3 of 3' in str(error.value)
    assert 'RamFilter 1 -> 0' in str(error.value)
    assert all(cloud.allocations(uuid) == {} for uuid in uuids)
    assert cloud.node_row('a').memory_mb_used == 0
    assert driver.stats['claims_released'] == 2
    # The cache forgot the released claims too.
    state = driver.host_manager.snapshot().states[0]
    assert state.memory_mb_used == 0


def test_lost_claim_race_moves_to_the_next_host(cloud, driver, config):
    config.config(host_state_refresh_interval=3600, group='scheduler')
    cloud.add_node('best', memory_mb=16384, ram_allocation_ratio=1.0)
    cloud.add_node('second', memory_mb=8192, ram_allocation_ratio=1.0)
    driver.start()
    # Another scheduler fills 'best' behind this one's cache.
    cloud.take('best', (1, 16000, 0))
    [uuid] = fakes.uuids(1)
    selections = driver.select_destinations(
        None, fakes.spec(memory_mb=1024), [uuid], True)
    assert _hosts(selections) == [['second']]
    assert driver.stats['claim_retries'] == 1
    assert cloud.allocations(uuid) == {'second': (1, 1024, 0)}
    # The lost host was re-read and is no longer offered as an alternate.
    best = driver.host_manager.snapshot().states[0]
    assert best.memory_mb_used == 16000


def test_all_claims_lost_is_no_valid_host(cloud, driver, config):
    config.config(host_state_refresh_interval=3600, group='scheduler')
    cloud.add_node('a', memory_mb=2048, ram_allocation_ratio=1.0)
    driver.start()
    cloud.take('a', (1, 2048, 0))
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, fakes.spec(memory_mb=1024),
                                   fakes.uuids(1))
    assert 'passed the filters but none could be claimed' in str(error.value)
    assert driver.stats['claim_retries'] == 1


def test_force_hosts_skips_the_filters(cloud, driver):
    cloud.add_node('a')
    cloud.add_node('forced', memory_mb=1024)
    cloud.disable('forced')
    spec = fakes.spec(memory_mb=512, force_hosts=['FORCED'])
    [uuid] = fakes.uuids(1)
    assert _hosts(driver.select_destinations(None, spec, [uuid])) == [
        ['forced']]
    assert cloud.allocations(uuid) == {'forced': (1, 512, 0)}


def test_force_nodes_still_claims(cloud, driver):
    cloud.add_node('a', nodename='n1', memory_mb=1024,
                   ram_allocation_ratio=1.0)
    cloud.add_node('a', nodename='n2')
    spec = fakes.spec(memory_mb=2048, force_nodes=['n1'])
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, spec, fakes.uuids(1))
    assert 'force_nodes 2 -> 1' in str(error.value)


def test_forcing_with_check_type_hint_runs_the_filters(cloud, driver):
    cloud.add_node('forced')
    cloud.disable('forced')
    spec = fakes.spec(force_hosts=['forced'],
                      scheduler_hints={'_nova_check_type': ['rebuild']})
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, spec, fakes.uuids(1))
    assert 'ComputeFilter 1 -> 0' in str(error.value)


def test_ignore_hosts_excludes(cloud, driver):
    cloud.add_node('best', memory_mb=16384)
    cloud.add_node('other', memory_mb=4096)
    spec = fakes.spec(ignore_hosts=['best'])
    assert _hosts(driver.select_destinations(None, spec,
                                             fakes.uuids(1))) == [['other']]
    spec = fakes.spec(ignore_hosts=['best', 'other'])
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, spec, fakes.uuids(1))
    assert '0/2 hosts available: ignore_hosts 2 -> 0' in str(error.value)


def test_requested_destination_restricts_but_filters_run(cloud, driver):
    cloud.add_node('a', memory_mb=16384)
    cloud.add_node('b', memory_mb=4096)
    dest = request_spec.Destination(host='b')
    spec = fakes.spec(requested_destination=dest)
    assert _hosts(driver.select_destinations(None, spec,
                                             fakes.uuids(1))) == [['b']]
    cloud.disable('b')
    driver.host_manager.refresh()
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, spec, fakes.uuids(1))
    assert ('requested_destination 2 -> 1' in str(error.value)
            and 'ComputeFilter 1 -> 0' in str(error.value))


def test_availability_zone(cloud, driver):
    cloud.add_node('a', memory_mb=16384)
    cloud.add_node('b', memory_mb=4096)
    cloud.aggregate('zone', ['b'], availability_zone='az1')
    spec = fakes.spec(availability_zone='az1')
    assert _hosts(driver.select_destinations(None, spec,
                                             fakes.uuids(1))) == [['b']]


def test_only_mapped_nodes_with_live_services(cloud, driver, config):
    config.config(service_down_time=60)
    cloud.add_node('unmapped', memory_mb=65536, mapped=False)
    cloud.add_node('stale', memory_mb=65536)
    cloud.set_last_seen('stale', 120)
    cloud.add_node('plain', memory_mb=1024)
    for _ in range(3):
        assert _hosts(driver.select_destinations(
            None, fakes.spec(memory_mb=128), fakes.uuids(1))) == [['plain']]


def test_without_instance_uuids_nothing_is_claimed(cloud, driver):
    cloud.add_node('a')
    selections = driver.select_destinations(None, fakes.spec(num_instances=2),
                                            None)
    assert _hosts(selections) == [['a'], ['a']]
    assert not any(sel[0].claimed for sel in selections)
    assert cloud.node_row('a').vcpus_used == 0


def test_rebuild_runs_no_capacity_filter_and_claims_nothing(cloud, driver):
    cloud.add_node('full', memory_mb=1024)
    spec = fakes.spec(memory_mb=4096, is_rebuild=True,
                      requested_destination=request_spec.Destination(
                          host='full'))
    [uuid] = fakes.uuids(1)
    selections = driver.select_destinations(None, spec, [uuid])
    assert _hosts(selections) == [['full']]
    assert not selections[0][0].claimed
    assert cloud.allocations(uuid) == {}


def test_host_subset_size_picks_among_the_best(cloud, driver, config):
    config.config(host_subset_size=2, group='filter_scheduler')
    for name, memory in (('a', 16384), ('b', 15000), ('c', 1024)):
        cloud.add_node(name, memory_mb=memory)
    picked = collections.Counter(
        driver.select_destinations(None, fakes.spec(), None)[0][0]
        .service_host for _ in range(60))
    assert set(picked) == {'a', 'b'}


def test_shuffle_best_same_weighed_hosts(cloud, driver, config):
    for name in 'abcd':
        cloud.add_node(name)
    picked = {driver.select_destinations(None, fakes.spec(), None)[0][0]
              .service_host for _ in range(20)}
    # Without shuffling, one process always breaks the tie the same way.
    assert len(picked) == 1
    config.config(shuffle_best_same_weighed_hosts=True,
                  group='filter_scheduler')
    picked = {driver.select_destinations(None, fakes.spec(), None)[0][0]
              .service_host for _ in range(60)}
    assert len(picked) > 1


def test_concurrent_requests_never_overfill(cloud, driver):
    cloud.add_node('a', vcpus=4, cpu_allocation_ratio=1.0)
    cloud.add_node('b', vcpus=2, cpu_allocation_ratio=1.0)
    placed, refused = [], []

    def one_request():
        try:
            sel = driver.select_destinations(None, fakes.spec(vcpus=1),
                                             fakes.uuids(1))
            placed.append(sel[0][0].service_host)
        except exception.NoValidHost:
            refused.append(1)

    threads = [threading.Thread(target=one_request) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert collections.Counter(placed) == {'a': 4, 'b': 2}
    assert len(refused) == 4
    assert cloud.node_row('a').vcpus_used == 4
    assert cloud.node_row('b').vcpus_used == 2


def test_a_claim_reserves_in_the_cache_before_its_sql_runs(
        cloud, driver, config, monkeypatch):
    # While one request's SQL claim runs, another request of the process
    # ranks hosts: it must see the room taken (and the instance there).
    config.config(host_state_refresh_interval=3600, group='scheduler')
    cloud.add_node('a', memory_mb=16384)
    cloud.add_node('b', memory_mb=16384)
    driver.start()
    real_claim = claims.claim_in_sql
    seen = {}

    def observing_claim(node_id, consumer_uuid, *args, **kwargs):
        table = driver.host_manager.snapshot()
        state = table.states[table.row_by_id[node_id]]
        seen[consumer_uuid] = (state.memory_mb_used,
                               consumer_uuid in state.instances)
        if len(seen) == 1:
            # The second request chooses while the first claims.
            second = driver.select_destinations(
                None, fakes.spec(memory_mb=4096), ['second-uuid'], False)
            seen['second chose'] = second[0][0].service_host
        return real_claim(node_id, consumer_uuid, *args, **kwargs)

    monkeypatch.setattr(claims, 'claim_in_sql', observing_claim)
    first = driver.select_destinations(None, fakes.spec(memory_mb=4096),
                                       ['first-uuid'], False)
    assert seen['first-uuid'] == (4096, True)
    # Equal hosts: without the reservation both would pick the same one.
    assert seen['second chose'] != first[0][0].service_host
    assert cloud.allocations('first-uuid') == {
        first[0][0].service_host: (1, 4096, 0)}


def test_requests_rank_in_turn_while_a_reservation_waits(cloud, driver,
                                                         config):
    # The first request ranked and waits to reserve (the host cache's lock
    # is busy, as during a refresh): a second request of the process must
    # not rank on the same rows meanwhile, or both take the same host.
    config.config(host_state_refresh_interval=3600, group='scheduler')
    cloud.add_node('a', memory_mb=16384)
    cloud.add_node('b', memory_mb=16384)
    driver.start()
    chosen = {}

    def place(uuid):
        selections = driver.select_destinations(
            None, fakes.spec(memory_mb=4096), [uuid], False)
        chosen[uuid] = selections[0][0].service_host

    with driver.host_manager._lock:
        threads = [threading.Thread(target=place, args=(uuid,))
                   for uuid in ('first-uuid', 'second-uuid')]
        threads[0].start()
        threads[0].join(0.3)
        threads[1].start()
        threads[1].join(0.3)
        # Both wait: the first to reserve, the second for its turn.
        assert all(thread.is_alive() for thread in threads)
    for thread in threads:
        thread.join(30)
    assert sorted(chosen.values()) == ['a', 'b']


def test_a_claim_that_loses_rolls_its_reservation_back(cloud, driver,
                                                       config):
    config.config(host_state_refresh_interval=3600, group='scheduler')
    cloud.add_node('a', memory_mb=2048, ram_allocation_ratio=1.0)
    driver.start()
    cloud.take('a', (1, 1536, 0))
    with pytest.raises(exception.NoValidHost):
        driver.select_destinations(None, fakes.spec(memory_mb=1024),
                                   ['lost-uuid'])
    state = driver.host_manager.snapshot().states[0]
    # What SQL holds, not SQL plus the reservation; no instance left.
    assert state.memory_mb_used == 1536
    assert 'lost-uuid' not in state.instances


def test_a_claim_that_raises_rolls_its_reservation_back(cloud, driver,
                                                        config, monkeypatch):
    config.config(host_state_refresh_interval=3600, group='scheduler')
    cloud.add_node('a', memory_mb=2048)
    driver.start()

    def failing_claim(*args, **kwargs):
        raise exception.DatabaseUnavailable(url='db', reason='gone')

    monkeypatch.setattr(claims, 'claim_in_sql', failing_claim)
    with pytest.raises(exception.DatabaseUnavailable):
        driver.select_destinations(None, fakes.spec(memory_mb=1024),
                                   ['failed-uuid'])
    state = driver.host_manager.snapshot().states[0]
    assert state.memory_mb_used == 0
    assert 'failed-uuid' not in state.instances


def test_unknown_filter_or_weigher_fails_construction(database, config):
    config.config(enabled_filters=['RamFilter', 'NoSuchFilter'],
                  group='filter_scheduler')
    with pytest.raises(exception.PluginNotFound) as error:
        filter_scheduler.FilterScheduler()
    assert "'NoSuchFilter'" in str(error.value)
    assert 'RamFilter' in str(error.value).split('Available')[1]
    config.config(enabled_filters=['RamFilter'], weight_classes=['Nope'],
                  group='filter_scheduler')
    with pytest.raises(exception.PluginNotFound) as error:
        filter_scheduler.FilterScheduler()
    assert 'RAMWeigher' in str(error.value)


def test_reload_plugins(cloud, driver, config, caplog):
    caplog.set_level(logging.INFO)
    assert [type(f).__name__ for f in driver.enabled_filters] == [
        'AvailabilityZoneFilter', 'ComputeFilter', 'RamFilter', 'CoreFilter',
        'DiskFilter', 'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
        'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter']
    config.config(enabled_filters=['RamFilter', 'Typo'],
                  group='filter_scheduler')
    assert driver.reload_plugins() is False
    assert "'Typo'" in caplog.text
    assert len(driver.enabled_filters) == 9
    config.config(enabled_filters=['AllHostsFilter'],
                  weight_classes=['CPUWeigher'], group='filter_scheduler')
    assert driver.reload_plugins() is True
    assert [type(f).__name__ for f in driver.enabled_filters] == [
        'AllHostsFilter']
    assert [type(w).__name__ for w in driver.weighers] == ['CPUWeigher']
    cloud.add_node('down')
    cloud.disable('down')
    # ComputeFilter is gone: the disabled host is chosen.
    assert _hosts(driver.select_destinations(None, fakes.spec(),
                                             fakes.uuids(1))) == [['down']]


def test_invalid_spec_is_refused_before_anything(cloud, driver):
    cloud.add_node('a')
    spec = fakes.spec(num_instances=0)
    with pytest.raises(exception.InvalidRequest):
        driver.select_destinations(None, spec, [])
    assert driver.stats['requests'] == 0


def test_empty_cloud(cloud, driver):
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, fakes.spec(), fakes.uuids(1))
    assert str(error.value).endswith('0/0 hosts available')
