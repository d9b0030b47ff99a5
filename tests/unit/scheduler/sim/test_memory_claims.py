"""gantt-sim's claims in memory: the SQL claim's answers, without SQL."""

import gc
import random

import numpy as np
import pytest

from scheduler.cmd import sim
from scheduler.db import group_claims
from scheduler import placement_types
from scheduler.sim import cloud as sim_cloud
from scheduler.sim import engine
from scheduler.sim import memory_claims
from scheduler.sim import metrics
from scheduler.sim import workload

Resources = placement_types.Resources
# A small cloud filled beyond its room, four callers on two workers: lost
# claims, NoValidHost, server groups and deletions all happen.
BUSY = ['--hosts', '12', '--hours', '12', '--seed', '3', '--fill', '1.6',
        '--callers', '4', '--workers', '2']


def _run(argv):
    args = sim._parser().parse_args(argv)
    cloud, requests, _runs = sim._inputs(args)
    return sim.run_once(cloud, requests, None, args)


def test_memory_claims_place_as_the_sql_claims_did(config):
    memory = _run(BUSY)
    sql = _run(BUSY + ['--sql-claims'])
    # The conditions the comparison needs did happen.
    assert memory.claim_retries > 0
    assert sum(memory.no_valid_host.values()) > 0
    assert memory.deleted > 0
    # Every request on the same hosts, the same failures and conflicts.
    assert memory.placements == sql.placements
    assert (memory.placed, memory.deleted, memory.no_valid_host,
            memory.claim_retries) == (sql.placed, sql.deleted,
                                      sql.no_valid_host, sql.claim_retries)
    assert metrics.summary(memory, timings=False) == metrics.summary(
        sql, timings=False)
    # The latencies apart by instances asked for, one count a request.
    assert len(memory.counts) == memory.requests
    assert sorted(set(memory.counts)) == [1, 2, 3, 4]
    assert ' one-instance request(s): p50 ' in metrics.summary(memory)


def test_no_host_ends_over_capacity_and_usage_agrees_with_metrics(
        database, config):
    args = sim._parser().parse_args(BUSY)
    cloud, requests, _runs = sim._inputs(args)
    sim_cloud.populate(cloud, random.Random(3))
    simulation = engine.Simulation(cloud, requests, seed=3, callers=4,
                                   workers=2)
    result = simulation.run()
    usage = simulation.usage
    assert usage is not None and result.placed > 0
    used = np.array(usage.used)
    assert (used <= np.array(usage.capacity)).all()
    # The metrics follow the claims' outcomes: the same usage per host.
    assert np.array_equal(used.T, simulation.recorder.used)
    # Every worker's cache, once it caught up, sees that usage.
    for worker, driver in enumerate(simulation.drivers):
        driver.host_manager.refresh_nodes(
            [state.id for state in driver.host_manager.snapshot().states])
        table = driver.host_manager.snapshot()
        for field, column in zip(memory_claims.FIELDS, used.T):
            assert np.array_equal(table.used[field], column), worker


class _Table:
    def __init__(self, states):
        self.states = states


class _State:
    """What Usage reads of a HostState."""

    def __init__(self, uuid, host, vcpus, memory_mb, disk_gb):
        self.uuid, self.host = uuid, host
        self._capacity = dict(vcpus=vcpus, memory_mb=memory_mb,
                              disk_gb=disk_gb)
        self.num_instances = self.io_workload = 0

    def capacity(self, field):
        return self._capacity[field]

    def used(self, field):
        return 0


def _usage():
    return memory_claims.Usage(_Table([_State('n1', 'h1', 4, 4096, 40),
                                       _State('n2', 'h2', 4, 4096, 40)]))


def test_a_claim_wins_only_while_the_host_has_room():
    usage = _usage()
    host = usage.loaded[0]
    assert usage.claim(host, 'a', Resources(2, 2048, 20), {}) is True
    assert usage.claim(host, 'b', Resources(2, 2048, 20), {}) is True
    # Full: refused, and nothing taken.
    assert usage.claim(host, 'c', Resources(1, 1, 0), {}) is False
    assert usage.used[0] == [4, 4096, 40]
    # A consumer holding a claim is refused another.
    assert usage.claim(usage.loaded[1], 'a', Resources(1, 1, 1), {}) is False
    usage.release([('a', None)])
    assert usage.used[0] == [2, 2048, 20]
    assert usage.claim(host, 'c', Resources(1, 1, 0), {}) is True
    # A resource not asked for (0) is not checked.
    usage.claim(host, 'd', Resources(1, 2047, 0), {})
    assert usage.claim(host, 'e', Resources(0, 0, 20), {}) is True


def test_hard_group_policies_are_checked_and_released():
    usage = _usage()
    one, two = usage.loaded
    usage.add_group('anti', 'anti-affinity')
    usage.add_group('aff', 'affinity')
    small = Resources(1, 1, 1)
    assert usage.claim(one, 'a1', small, {}, group_uuid='anti') is True
    refused = usage.claim(one, 'a2', small, {}, group_uuid='anti')
    assert isinstance(refused, group_claims.GroupConflict) and not refused
    assert not refused.allows('h1') and refused.allows('h2')
    assert usage.claim(two, 'a2', small, {}, group_uuid='anti') is True
    assert usage.claim(two, 'f1', small, {}, group_uuid='aff') is True
    assert not usage.claim(one, 'f2', small, {}, group_uuid='aff')
    usage.release([('f1', None)])
    assert usage.claim(one, 'f2', small, {}, group_uuid='aff') is True


def test_hardware_and_other_classes_are_left_to_the_sql_claims():
    usage = _usage()
    with pytest.raises(NotImplementedError):
        usage.claim(usage.loaded[0], 'a', Resources(1, 1, 1), {},
                    extra={'VGPU': 1})
    assert memory_claims.suits(sim_cloud.default_cloud(10))
    numa = sim_cloud.parse_cloud({'hosts': [{
        'name': 'n', 'count': 1, 'disk_gb': 10, 'numa_topology': {
            'cells': [{'id': 0, 'cpuset': [0, 1], 'memory_mb': 1024}]}}]})
    assert not memory_claims.suits(numa)


def test_pending_deletions_and_decisions_are_held_in_no_object_each(
        database, config, monkeypatch):
    """What the replay keeps of each request (its pending deletion, the
    hosts it was placed on) adds no list of its own, nor a tuple naming
    it, for the cyclic collector to count and walk inside the decisions
    timed."""
    args = sim._parser().parse_args(['--hosts', '24', '--hours', '24',
                                     '--seed', '5'])
    cloud, requests, _runs = sim._inputs(args)
    sim_cloud.populate(cloud, random.Random(5))
    simulation = engine.Simulation(cloud, requests, seed=5)
    left = {}
    real_replay = engine.Simulation._replay

    def replay(self):
        real_replay(self)
        # What the replay made and still holds (what was loaded before
        # it is frozen: gc.get_objects leaves it out).
        gc.collect()
        left['objects'] = sum(
            type(obj) is list or (type(obj) is tuple and any(
                isinstance(item, workload.Request) for item in obj))
            for obj in gc.get_objects())

    monkeypatch.setattr(engine.Simulation, '_replay', replay)
    result = simulation.run()
    # Many requests decided, many of their instances still to delete.
    assert result.requests > 200 and result.placed - result.deleted > 100
    assert left['objects'] < result.requests / 10
    # The placements read back from the flat record, as they were
    # decided: every instance placed is on one host named.
    placed = [hosts for hosts in result.placements.values() if hosts]
    assert sum(map(len, placed)) == result.placed
    assert set().union(*placed) <= set(simulation.names)
