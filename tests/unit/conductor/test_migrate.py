"""Cold migration, resize, confirm and revert through the real conductor,
scheduler and computes, in-process (fake:// transport, SQLite); called
with the real RPC client, as ``gantt-manage`` would."""

import pytest

from scheduler.db import api as db_api
from scheduler.db import instance_groups
from scheduler import exception
from scheduler.objects import request_spec
from tests.unit.conductor import move_checks as checks
from tests.unit import inprocess

SMALL, MEDIUM, BIG = checks.SMALL, checks.MEDIUM, checks.BIG
CLAIM = checks.CLAIM


@pytest.fixture
def cluster_config(database, config):
    return inprocess.configure(config, exact_ratios=True)


def _flavor(vcpus, memory_mb, root_gb):
    return request_spec.Flavor(vcpus=vcpus, memory_mb=memory_mb,
                               root_gb=root_gb)


def test_migrate_to_another_host_then_confirm(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        assert checks.instance(uuid).host == 'h1'   # most free RAM
        answer = checks.api().migrate_server(checks.ctxt(), uuid)
        migration = answer['migration']
        assert (answer['vm_state'], answer['task_state'], answer['host']) \
            == ('resized', None, 'h2')
        assert (migration['migration_type'], migration['status'],
                migration['source_host'], migration['dest_host']) == (
                    'migration', 'finished', 'h1', 'h2')
        row = checks.instance(uuid)
        assert (row.vm_state, row.task_state, row.host, row.node) == (
            'resized', None, 'h2', 'h2')
        # Both hosts claimed: the source under the migration's consumer.
        assert checks.allocations() == {uuid: ('h2',) + CLAIM,
                                        migration['uuid']: ('h1',) + CLAIM}
        assert checks.usage() == {'h1': CLAIM, 'h2': CLAIM}
        assert uuid in checks.tracked_by(cluster, 'h2')
        checks.assert_consistent()

        answer = checks.api().confirm_resize(checks.ctxt(), uuid)
        assert (answer['vm_state'], answer['host'],
                answer['migration']['status']) == ('active', 'h2',
                                                   'confirmed')
        assert uuid not in checks.tracked_by(cluster, 'h1')
    row = checks.instance(uuid)
    assert (row.vm_state, row.task_state, row.host) == ('active', None, 'h2')
    assert checks.allocations() == {uuid: ('h2',) + CLAIM}
    assert checks.usage() == {'h1': (0, 0, 0), 'h2': CLAIM}
    checks.assert_consistent()


def test_resize_then_revert_gives_back_exactly_what_was_used(
        cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': MEDIUM}) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        answer = checks.api().migrate_server(checks.ctxt(), uuid,
                                             flavor=_flavor(2, 4096, 20))
        migration_uuid = answer['migration']['uuid']
        assert answer['migration']['migration_type'] == 'resize'
        row = checks.instance(uuid)
        assert (row.vm_state, row.host) == ('resized', 'h2')
        assert (row.flavor['vcpus'], row.flavor['memory_mb']) == (2, 4096)
        assert row.request_spec['gantt_object.data']['flavor'][
            'gantt_object.data']['memory_mb'] == 4096
        assert checks.allocations() == {uuid: ('h2', 2, 4096, 20),
                                        migration_uuid: ('h1',) + CLAIM}
        checks.assert_consistent()

        answer = checks.api().revert_resize(checks.ctxt(), uuid)
        assert (answer['vm_state'], answer['host'],
                answer['migration']['status']) == ('active', 'h1',
                                                   'reverted')
        assert uuid not in checks.tracked_by(cluster, 'h2')
        assert uuid in checks.tracked_by(cluster, 'h1')
    # Row, flavor, request spec, allocation and usage as before the resize.
    assert checks.snapshot([uuid]) == before
    assert checks.usage()['h2'] == (0, 0, 0)
    checks.assert_consistent()


def test_resize_without_a_valid_host_changes_nothing(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        with pytest.raises(exception.NoValidHost) as caught:
            checks.api().migrate_server(checks.ctxt(), uuid,
                                        flavor=_flavor(2, 32768, 20))
    assert 'RamFilter' in str(caught.value)
    assert checks.snapshot([uuid]) == before
    [migration] = checks.migrations(uuid)
    assert migration.status == 'error'
    assert 'No valid host' in migration.error
    assert 'Traceback' not in migration.error
    checks.assert_consistent()


def test_migrate_on_one_host_needs_allow_resize_to_same_host(
        cluster_config):
    with inprocess.Cluster({'h1': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        with pytest.raises(exception.NoValidHost):
            checks.api().migrate_server(checks.ctxt(), uuid)
        assert checks.snapshot([uuid]) == before

        cluster_config.config(allow_resize_to_same_host=True)
        answer = checks.api().migrate_server(checks.ctxt(), uuid)
        migration_uuid = answer['migration']['uuid']
        assert (answer['vm_state'], answer['host']) == ('resized', 'h1')
        # The same host holds both claims while the user decides.
        assert checks.allocations() == {uuid: ('h1',) + CLAIM,
                                        migration_uuid: ('h1',) + CLAIM}
        assert checks.usage() == {'h1': (2, 2048, 20)}
        checks.assert_consistent()
        checks.api().confirm_resize(checks.ctxt(), uuid)
        # The agent still runs it: confirm on the same host removes nothing.
        assert uuid in checks.tracked_by(cluster, 'h1')
    assert before == checks.snapshot([uuid])
    checks.assert_consistent()


@pytest.mark.parametrize('filters', [
    None,                             # the filter removes the host
    ['ComputeFilter', 'RamFilter'],   # the claim refuses it
])
def test_anti_affinity_member_cannot_move_onto_another_members_host(
        cluster_config, filters):
    if filters is not None:
        cluster_config.config(enabled_filters=filters,
                              group='filter_scheduler')
    with db_api.writer() as session:
        group = instance_groups.create(session, 'web', 'anti-affinity')
    hint = {'group': [group.uuid]}
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        first = checks.boot_one(cluster, scheduler_hints=hint)
        second = checks.boot_one(cluster, scheduler_hints=hint)
        assert {checks.instance(u).host for u in (first, second)} == {
            'h1', 'h2'}
        before = checks.snapshot([first, second])
        with pytest.raises(exception.NoValidHost):
            checks.api().migrate_server(checks.ctxt(), first)
    assert checks.snapshot([first, second]) == before
    checks.assert_consistent()


def test_a_destination_that_does_not_answer_falls_back_on_an_alternate(
        cluster_config):
    cluster_config.config(rpc_response_timeout=1)
    with inprocess.Cluster({'h1': BIG, 'h2': MEDIUM,
                            'h3': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        checks.stop_agent(cluster, 'h2')   # still "up" for the scheduler
        answer = checks.api().migrate_server(checks.ctxt(), uuid)
        assert answer['host'] == 'h3'
        assert uuid in checks.tracked_by(cluster, 'h3')
    assert checks.allocations() == {
        uuid: ('h3',) + CLAIM, answer['migration']['uuid']: ('h1',) + CLAIM}
    assert checks.usage()['h2'] == (0, 0, 0)
    checks.assert_consistent()


def test_no_destination_answering_is_max_retries_exceeded(cluster_config):
    cluster_config.config(rpc_response_timeout=1)
    cluster_config.config(max_attempts=1, group='scheduler')
    with inprocess.Cluster({'h1': BIG, 'h2': MEDIUM,
                            'h3': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        checks.stop_agent(cluster, 'h2')
        with pytest.raises(exception.MaxRetriesExceeded) as caught:
            checks.api().migrate_server(checks.ctxt(), uuid)
    assert 'Hosts tried: h2.' in str(caught.value)
    assert checks.snapshot([uuid]) == before
    [migration] = checks.migrations(uuid)
    assert migration.status == 'error'
    checks.assert_consistent()


def test_a_scheduler_that_does_not_answer_changes_nothing(cluster_config):
    cluster_config.config(rpc_response_timeout=1)
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        checks.stop_agent(cluster, 'scheduler', binary='gantt-scheduler')
        with pytest.raises(exception.NoValidHost,
                           match='The scheduler did not answer in time'):
            checks.api().migrate_server(checks.ctxt(), uuid)
    assert checks.snapshot([uuid]) == before
    [migration] = checks.migrations(uuid)
    assert migration.status == 'error'
    checks.assert_consistent()


def test_confirm_when_the_source_does_not_answer(cluster_config):
    cluster_config.config(rpc_response_timeout=1)
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        checks.api().migrate_server(checks.ctxt(), uuid)
        checks.stop_agent(cluster, 'h1')
        answer = checks.api().confirm_resize(checks.ctxt(), uuid)
    assert answer['migration']['status'] == 'confirmed'
    assert checks.allocations() == {uuid: ('h2',) + CLAIM}
    checks.assert_consistent()


# -- refused requests change nothing -------------------------------------


def test_operations_refused_in_the_wrong_state(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        for method in ('confirm_resize', 'revert_resize'):
            with pytest.raises(exception.InstanceInvalidState) as caught:
                getattr(checks.api(), method)(checks.ctxt(), uuid)
            assert 'vm_state active' in str(caught.value)
        assert checks.snapshot([uuid]) == before
        assert checks.migrations(uuid) == []

        checks.api().migrate_server(checks.ctxt(), uuid)
        resized = checks.snapshot([uuid])
        for flavor in (None, _flavor(2, 2048, 10)):
            with pytest.raises(exception.InstanceInvalidState) as caught:
                checks.api().migrate_server(checks.ctxt(), uuid,
                                            flavor=flavor)
            assert 'vm_state resized' in str(caught.value)
        with pytest.raises(exception.InstanceInvalidState):
            checks.api().migrate_server(checks.ctxt(), uuid, live=True)
    assert checks.snapshot([uuid]) == resized
    assert len(checks.migrations(uuid)) == 1


def test_malformed_requests_name_the_problem_and_change_nothing(
        cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        missing = '00000000-0000-4000-8000-000000000000'
        for method in ('migrate_server', 'confirm_resize', 'revert_resize'):
            with pytest.raises(exception.InstanceNotFound) as caught:
                getattr(checks.api(), method)(checks.ctxt(), missing)
            assert missing in str(caught.value)
            with pytest.raises(exception.InvalidRequest,
                               match='instance_uuid must be a UUID'):
                getattr(checks.api(), method)(checks.ctxt(), 'not-a-uuid')
        bad_flavors = [
            ({'vcpus': 2}, 'flavor must be a Flavor object, not dict'),
            (_flavor(1, 1024, 10), 'the size of the current one'),
            (_flavor(0, 1024, 10), 'flavor.vcpus must be at least 1, not 0'),
            (_flavor(2, 0, 10),
             'flavor.memory_mb must be at least 1, not 0'),
            (request_spec.Flavor(vcpus=2), 'flavor.memory_mb is missing'),
            (_flavor(2, 1024, -1), 'flavor.root_gb must be at least 0'),
        ]
        for flavor, message in bad_flavors:
            with pytest.raises(exception.InvalidRequest, match=message):
                checks.api().migrate_server(checks.ctxt(), uuid,
                                            flavor=flavor)
        with pytest.raises(exception.InvalidRequest, match='takes no host'):
            checks.api().migrate_server(checks.ctxt(), uuid, host='h2')
    assert checks.snapshot([uuid]) == before
    assert checks.migrations(uuid) == []
    checks.assert_consistent()
