"""The conductor puts servers into their server group before scheduling."""

import pytest

from conductor.tasks import build
from scheduler.db import api as db_api
from scheduler.db import instance_groups
from scheduler.db import instances as db_instances
from scheduler.objects import selection as selection_obj
from tests.unit import inprocess
from tests.unit.scheduler import fakes

HOST = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}


@pytest.fixture
def cluster_config(database, config):
    return inprocess.configure(config)


def _group(policy='anti-affinity', **kwargs):
    with db_api.writer() as session:
        return instance_groups.create(session, 'web', policy, **kwargs)


def test_join_group_records_members_and_fills_the_spec(database):
    group = _group(rules={'max_server_per_host': 3})
    old, new = fakes.uuids(1), fakes.uuids(2)
    with db_api.writer() as session:
        db_instances.create(session, old[0], {'vcpus': 1}, {})
        db_instances.update(session, old[0], host='h7')
        instance_groups.add_members(session, group.id, old)
    spec = fakes.spec(scheduler_hints={'group': [group.uuid]},
                      num_instances=2)
    assert build.join_group(new, spec).uuid == group.uuid
    joined = spec.instance_group
    assert (joined.uuid, joined.name, joined.policy) == (
        group.uuid, 'web', 'anti-affinity')
    assert joined.rules == {'max_server_per_host': '3'}
    assert joined.members == old + new
    assert joined.hosts == ['h7']
    with db_api.reader() as session:
        assert instance_groups.get(session, group.uuid).members == tuple(
            old + new)


def test_no_hint_no_group(database):
    spec = fakes.spec()
    assert build.join_group(fakes.uuids(1), spec) is None
    assert spec.instance_group is None


def test_boot_into_a_group_then_into_an_unknown_one(cluster_config):
    group = _group()
    with inprocess.Cluster({'h1': HOST, 'h2': HOST}) as cluster:
        uuids = cluster.boot(vcpus=1, memory_mb=512, root_gb=1, count=2,
                             scheduler_hints={'group': [group.uuid]})
        rows = cluster.wait_built(uuids)
        assert {row.vm_state for row in rows.values()} == {'active'}
        missing = '00000000-0000-4000-8000-000000000000'
        lost = cluster.boot(vcpus=1, memory_mb=512, root_gb=1,
                            scheduler_hints={'group': [missing]})
        [row] = cluster.wait_built(lost).values()
    with db_api.reader() as session:
        assert instance_groups.get(session, 'web').members == tuple(uuids)
    assert row.vm_state == 'error'
    assert row.fault == 'Server group %s could not be found.' % missing


def test_anti_affinity_members_land_apart_across_requests(cluster_config):
    cluster_config.config(
        enabled_filters=['ComputeFilter', 'RamFilter',
                         'ServerGroupAntiAffinityFilter',
                         'ServerGroupAffinityFilter'],
        group='filter_scheduler')
    group = _group()
    hint = {'group': [group.uuid]}
    with inprocess.Cluster({'h1': HOST, 'h2': HOST, 'h3': HOST}) as cluster:
        first = cluster.boot(vcpus=1, memory_mb=512, root_gb=1, count=2,
                             scheduler_hints=hint)
        rows = cluster.wait_built(first)
        second = cluster.boot(vcpus=1, memory_mb=512, root_gb=1,
                              scheduler_hints=hint)
        rows.update(cluster.wait_built(second))
        third = cluster.boot(vcpus=1, memory_mb=512, root_gb=1,
                             scheduler_hints=hint)
        [refused] = cluster.wait_built(third).values()
    assert sorted(rows[uuid].host for uuid in first + second) == [
        'h1', 'h2', 'h3']
    assert refused.vm_state == 'error'
    assert 'ServerGroupAntiAffinityFilter 3 -> 0 (removed the last 3)' in (
        refused.fault)
    assert not any(host in refused.fault for host in ('h1', 'h2', 'h3'))


class RecordingCompute:
    """Stands in for the compute RPC API: records where builds go."""

    def __init__(self):
        self.sent = {}

    def build_and_run_instance(self, ctxt, host, instance_uuid, node,
                               request_spec, host_list):
        self.sent[instance_uuid] = host


def _selection(cloud, host):
    return selection_obj.Selection(
        compute_node_uuid=cloud.node_row(host).uuid, service_host=host,
        nodename=host, allocation_request='{"vcpus": 1, "memory_mb": 512, '
        '"disk_gb": 1}', claimed=False)


@pytest.mark.parametrize('policy, expected', [
    ('anti-affinity', {'h3', 'h4'}),   # the second skips h3
    ('affinity', {'h3'}),              # the second skips h4
    ('soft-anti-affinity', {'h3'}),    # no hard policy: no check
])
def test_reschedule_skips_alternates_that_break_the_policy(
        database, policy, expected):
    cloud = fakes.Cloud()
    for host in ('b1', 'b2', 'h3', 'h4'):
        cloud.add_node(host)
    group = _group(policy)
    first, second = fakes.uuids(2)
    spec = fakes.spec(scheduler_hints={'group': [group.uuid]},
                      num_instances=2)
    build.join_group([first, second], spec)
    for uuid in (first, second):
        with db_api.writer() as session:
            db_instances.create(session, uuid, {'name': 'f'}, {})
    compute = RecordingCompute()
    task = build.BuildTask(None, compute)
    # Each build failed on its host, which it held a claim on.
    cloud.take('b1', (1, 512, 1), first)
    task.reschedule(None, first, spec,
                    [_selection(cloud, 'h3'), _selection(cloud, 'h4')],
                    {'host': 'b1', 'node': 'b1', 'reason': 'boom'})
    cloud.take('b2', (1, 512, 1), second)
    order = ['h4', 'h3'] if policy == 'affinity' else ['h3', 'h4']
    task.reschedule(None, second, spec,
                    [_selection(cloud, host) for host in order],
                    {'host': 'b2', 'node': 'b2', 'reason': 'boom'})
    assert compute.sent[first] == 'h3'
    assert set(compute.sent.values()) == expected
    assert cloud.allocations(second) == {compute.sent[second]: (1, 512, 1)}
