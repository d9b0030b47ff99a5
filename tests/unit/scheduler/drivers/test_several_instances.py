"""Requests for several instances on a private table (issue 53): the same
answers as on a full copy of the host table rebuilt per instance (what
the driver did before), with nothing leaking into or out of it."""

import random

import pytest

from scheduler import exception
from scheduler import host_cache
from scheduler import placement_types
from scheduler.drivers import filter_scheduler
from scheduler.drivers import ranking
from tests.unit.scheduler import fakes
from tests.unit.scheduler import group_fakes as gf

FILTERS = ['ComputeFilter', 'RamFilter', 'DiskFilter',
           'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter']


class _CopiedTable:
    """The reference: a copy of every column per request, and a new
    table per instance placed."""

    reusable = False

    def __init__(self, shared):
        self.table = shared.detached()

    def put(self, new_states, claim_only=False):
        self.table = self.table.replace(new_states)


class _CopiedTables:
    def take(self, shared):
        return _CopiedTable(shared)

    def give_back(self, private):
        pass


def _drivers(make_driver):
    """``(driver, reference)``: alike, but for the reference's tables;
    the same ties broken the same way."""
    driver = make_driver(filter_scheduler.FilterScheduler,
                         tie_breaks=random.Random(5))
    reference = make_driver(filter_scheduler.FilterScheduler,
                            tie_breaks=random.Random(5))
    reference.private_tables = _CopiedTables()
    return driver, reference


def _answer(driver, spec, uuids=None):
    """Hosts chosen with their alternates, or the NoValidHost reason."""
    try:
        selections = driver.select_destinations(None, spec, uuids, True)
    except exception.NoValidHost as error:
        return str(error)
    return [[s.service_host for s in alternatives]
            for alternatives in selections]


@pytest.fixture
def options(config):
    # Free RAM alone decides (the figures below are worked out by hand).
    gf.several_instances_options(config, FILTERS)


def test_a_later_instance_sees_the_room_an_earlier_one_took(
        cloud, make_driver, options):
    # 'big' fits one instance: the second goes to 'small'.
    cloud.add_node('big', memory_mb=3072, ram_allocation_ratio=1.0)
    cloud.add_node('small', memory_mb=2048, ram_allocation_ratio=1.0)
    cloud.add_node('tiny', memory_mb=1024, ram_allocation_ratio=1.0)
    driver, reference = _drivers(make_driver)
    spec = fakes.spec(memory_mb=2048, num_instances=2)
    # Nothing claimed: the request's own accounting is all there is.
    assert _answer(driver, spec) == [['big'], ['small']]
    assert _answer(driver, spec) == _answer(reference, spec)
    # Nor is it left behind for the next request.
    assert _answer(driver, spec) == [['big'], ['small']]
    third = fakes.spec(memory_mb=2048, num_instances=3)
    assert 'Instance 3 of 3' in _answer(driver, third)
    assert _answer(driver, third) == _answer(reference, third)


def test_claimed_instances_are_counted_once(cloud, make_driver, options):
    cloud.add_node('big', memory_mb=8192, ram_allocation_ratio=1.0)
    cloud.add_node('small', memory_mb=5120, ram_allocation_ratio=1.0)
    driver, _reference = _drivers(make_driver)
    uuids = fakes.uuids(4)
    landed = _answer(driver, fakes.spec(memory_mb=2048, num_instances=4),
                     uuids)
    # Each claim lands in the shared table too: counted twice, 'big'
    # would look full after its second instance.
    assert sorted(hosts[0] for hosts in landed) == [
        'big', 'big', 'big', 'small']
    assert cloud.node_row('big').memory_mb_used == 6144


def test_anti_affinity_matches_the_copied_table(cloud, make_driver,
                                                options):
    for name, memory in (('a', 16384), ('b', 8192), ('c', 4096)):
        cloud.add_node(name, memory_mb=memory, ram_allocation_ratio=1.0)
    driver, reference = _drivers(make_driver)
    for count in (2, 3, 4):
        uuids = fakes.uuids(count)
        answers = [_answer(chosen, gf.spec(gf.group('anti-affinity', uuids),
                                           num_instances=count))
                   for chosen in (driver, reference)]
        assert answers[0] == answers[1]
    assert 'Instance 4 of 4' in answers[0]
    assert _answer(driver, gf.spec(gf.group('anti-affinity'),
                                   num_instances=3)) == [
        ['a'], ['b'], ['c']]


def test_a_workload_gets_the_copied_tables_answers(cloud, make_driver,
                                                   options, config):
    """Requests of 1 to 4 instances, some in server groups, while the
    shared tables take the placements in place (as claims do): the
    private table is caught up between requests, never copied again."""
    config.config(cpu_weight_multiplier=1.0, disk_weight_multiplier=1.0,
                  io_ops_weight_multiplier=-1.0, group='filter_scheduler')
    sizes = random.Random(3)
    for number in range(12):
        cloud.add_node('h%02d' % number,
                       memory_mb=sizes.choice((4096, 6144, 8192, 16384)),
                       local_gb=sizes.choice((40, 80, 200)),
                       ram_allocation_ratio=1.0, disk_allocation_ratio=1.0)
    driver, reference = _drivers(make_driver)
    workload = random.Random(11)
    copies = 0
    for step in range(60):
        count = workload.choice((1, 1, 2, 3, 4))
        policy = workload.choice((None, None, 'anti-affinity', 'affinity'))
        memory = workload.choice((512, 1024, 2048, 4096))
        disk = workload.choice((0, 10, 40))
        group = gf.group(policy) if policy else None
        spec = gf.spec(group, memory_mb=memory, root_gb=disk,
                       num_instances=count)
        before = driver.private_tables._idle[:]
        answer = _answer(driver, spec)
        assert answer == _answer(reference, spec), step
        if count > 1 and before:
            # Taken again, not copied.
            assert driver.private_tables._idle == before
        copies += count > 1 and not before
        if isinstance(answer, str):
            continue
        for hosts in answer:
            for chosen in (driver, reference):
                chosen.host_manager.consume(
                    cloud.nodes[hosts[0]],
                    placement_types.Resources(1, memory, disk),
                    fakes.uuids(1)[0],
                    host_cache.info_from_flavor_and_image(spec.flavor,
                                                          None))
    assert copies == 1


def test_a_concurrent_claim_stays_out_and_the_request_stays_private(
        cloud, make_driver, options):
    for name, memory in (('a', 8192), ('b', 7168), ('c', 4096)):
        cloud.add_node(name, memory_mb=memory, ram_allocation_ratio=1.0)
    driver, reference = _drivers(make_driver)
    spec = fakes.spec(memory_mb=2048, num_instances=3)
    answers = []
    other = cloud.nodes['b']
    for chosen in (driver, reference):
        shared = chosen.host_manager.snapshot()
        handler = chosen.filter_handler
        calls = []

        def concurrently(run, _chosen=chosen, _calls=calls):
            def filtering(*args, **kwargs):
                # Another request claims all of 'b' once the first
                # instance is placed: in the shared table, not in this
                # request's. (The later instances filter again from the
                # first one's hosts: rerun, or run_filters for the
                # reference.)
                _calls.append(1)
                if len(_calls) == 2:
                    _chosen.host_manager.consume(
                        other, placement_types.Resources(1, 7168, 0))
                return run(*args, **kwargs)
            return filtering
        handler.run_filters = concurrently(handler.run_filters)
        handler.rerun = concurrently(handler.rerun)
        answers.append(_answer(chosen, spec))
        del handler.run_filters, handler.rerun
        # The request's accounting stayed out of the shared table: only
        # the concurrent claim is there.
        assert list(shared.columns['ram_used']) == [0, 7168, 0]
    # As on a copy made at the start, 'b' still looked free.
    assert answers[0] == answers[1] == [['a', 'c'], ['b', 'c'], ['a', 'c']]
    # The next request sees the shared table's claim, not the last
    # request's accounting.
    assert _answer(driver, fakes.spec(memory_mb=2048, num_instances=2)) == [
        ['a', 'c'], ['a', 'c']]


def test_later_instances_rank_as_a_full_pass_would(cloud, make_driver,
                                                   options, config):
    """The later instances of a request filter and weigh again only the
    rows the earlier ones changed (later_instances.rank_again); the
    reference, whose table is a new one per instance, filters and weighs
    every host for each: the same hosts, alternates and NoValidHost
    reasons (which filter, how many hosts each removed), with hosts
    filling up and leaving the ranking, weighers' bounds moving, server
    groups of every policy and hosts of two nodes."""
    config.config(enabled_filters=FILTERS[:3] + ['CoreFilter'] + FILTERS[3:],
                  group='filter_scheduler')
    gf.weigh_every_resource(config)
    gf.add_mixed_nodes(cloud, 7, 24, 3)
    driver, reference = _drivers(make_driver)
    workload = random.Random(13)
    later_failures = 0
    for step in range(150):
        count = workload.choice((1, 2, 3, 4, 5))
        policy = workload.choice((None, None, 'anti-affinity', 'affinity',
                                  'soft-affinity', 'soft-anti-affinity'))
        rules = ({'max_server_per_host': 2} if policy == 'anti-affinity'
                 and workload.random() < 0.5 else None)
        memory = workload.choice((512, 1024, 2048, 4096))
        spec = gf.spec(gf.group(policy, rules=rules) if policy else None,
                       vcpus=workload.choice((1, 2, 4)), memory_mb=memory,
                       root_gb=workload.choice((0, 10, 40)),
                       num_instances=count)
        answer = gf.nodes_answer(driver, spec)
        assert answer == gf.nodes_answer(reference, spec), step
        if isinstance(answer, str):
            later_failures += 'Instance 1 of' not in answer and count > 1
            continue
        for hosts in answer:
            node = hosts[0].split('/')[1]
            for chosen in (driver, reference):
                chosen.host_manager.consume(
                    cloud.nodes[node], spec.resources(), fakes.uuids(1)[0],
                    host_cache.info_from_flavor_and_image(spec.flavor,
                                                          None))
    # The cloud filled up: later instances found no host too.
    assert later_failures >= 3
    assert driver.stats['later_instances_ranked_again'] >= 50
    assert 'later_instances_ranked_again' not in reference.stats


def test_a_server_groups_last_instance_carries_the_ranking_over(
        cloud, make_driver, options, monkeypatch):
    """Under anti-affinity each instance's host leaves the ranking of the
    next: the first instance's ranking heads with one row more per
    instance after it, so that the last still finds the best two (a
    request without alternates) there, rather than ranking every host
    again."""
    # Six hosts tie for the most free RAM (the bound stays where it is
    # as they leave), 24 come after them; rankings of more than 8 rows
    # sort their best only (as those of more than FULL_SORT_LIMIT do).
    monkeypatch.setattr(ranking, 'FULL_SORT_LIMIT', 8)
    for number in range(30):
        cloud.add_node('h%02d' % number, ram_allocation_ratio=1.0,
                       memory_mb=16384 if number < 6 else 4096 + number)
    driver, _reference = _drivers(make_driver)
    made = []
    real_init = ranking.Ranking.__init__

    def counted(self, *args, **kwargs):
        made.append(len(args[0]))
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(ranking.Ranking, '__init__', counted)
    uuids = fakes.uuids(4)
    spec = gf.spec(gf.group('anti-affinity', uuids), num_instances=4)
    selections = driver.select_destinations(None, spec, uuids)
    hosts = [alternatives[0].service_host for alternatives in selections]
    # Four of the six tied hosts, one each; every host ranked once, for
    # the first instance.
    assert len(set(hosts)) == 4 and all(host < 'h06' for host in hosts)
    assert made == [30]
    assert driver.stats['later_instances_ranked_again'] == 3
