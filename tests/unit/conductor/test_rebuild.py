"""Rebuild in place and evacuation through the real conductor, scheduler
and computes, in-process (fake:// transport, the test's SQLite file), called
through the real RPC client conductor.rpcapi.ComputeTaskAPI."""

import time

import pytest

from conductor import rpcapi as conductor_rpcapi
from scheduler.db import api as db_api
from scheduler.db import instance_groups
from scheduler.db import instances as db_instances
from scheduler.db import moves
from scheduler import exception
from scheduler.objects import request_spec as request_spec_obj
from tests.unit.conductor import sql_state
from tests.unit import inprocess

SMALL = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}
BIG = {'vcpus': 16, 'memory_mb': 65536, 'local_gb': 1000}
FLAVOR = {'vcpus': 2, 'memory_mb': 2048, 'root_gb': 10}
# The schedulers' host cache is refreshed every 0.05 s in these tests.
CACHE_SETTLE = 0.3


@pytest.fixture
def cluster_config(database, config):
    return inprocess.configure(config, exact_ratios=True)


def _api():
    return conductor_rpcapi.ComputeTaskAPI()


def _boot(cluster, **kwargs):
    [uuid] = cluster.boot(**dict(FLAVOR, **kwargs))
    row = cluster.wait_built([uuid])[uuid]
    assert row.vm_state == 'active'
    return row


def _image(name, **properties):
    return request_spec_obj.ImageMeta(id=name, name=name,
                                      properties=properties)


def _stored_image(uuid):
    spec = request_spec_obj.RequestSpec.obj_from_primitive(
        sql_state.instance(uuid).request_spec)
    image = spec.obj_get('image')
    return None if image is None else (image.id, dict(image.properties))


# -- rebuild in place ----------------------------------------------------


def test_rebuild_with_a_new_image_stays_and_keeps_its_claim(cluster_config):
    with inprocess.Cluster({'h1': SMALL, 'h2': BIG}) as cluster:
        row = _boot(cluster, image=_image('old'))
        before = sql_state.usage()
        answer = _api().rebuild_instance(
            sql_state.ctxt(), row.uuid,
            image=_image('new', hw_architecture='x86_64'))
    assert answer['vm_state'] == 'active' and answer['task_state'] is None
    assert (answer['host'], answer['node']) == (row.host, row.node)
    assert _stored_image(row.uuid) == ('new', {'hw_architecture': 'x86_64'})
    assert sql_state.allocations() == {row.uuid: row.host}
    assert sql_state.usage() == before
    assert sql_state.migrations() == []
    sql_state.assert_consistent()


def test_rebuild_from_error_clears_the_fault(cluster_config):
    with inprocess.Cluster({'h1': SMALL}) as cluster:
        row = _boot(cluster)
        with db_api.writer() as session:
            db_instances.update(session, row.uuid, vm_state='error',
                                fault='it broke')
        answer = _api().rebuild_instance(sql_state.ctxt(), row.uuid)
    assert (answer['vm_state'], answer['fault']) == ('active', None)
    assert sql_state.allocations() == {row.uuid: 'h1'}


def test_rebuild_with_an_image_the_host_rejects_changes_nothing(
        cluster_config):
    with inprocess.Cluster({'h1': SMALL}) as cluster:
        row = _boot(cluster, image=_image('old'))
        before = sql_state.snapshot()
        with pytest.raises(exception.NoValidHost) as caught:
            _api().rebuild_instance(
                sql_state.ctxt(), row.uuid,
                image=_image('arm', hw_architecture='aarch64'))
        after = sql_state.instance(row.uuid)
    message = str(caught.value)
    assert message.startswith('Host h1 does not accept the image')
    assert 'ImagePropertiesFilter' in message
    assert (after.vm_state, after.task_state, after.host) == (
        'active', None, 'h1')
    assert _stored_image(row.uuid) == ('old', {})
    # Only the instance's updated_at moved (task_state set and cleared).
    instances, allocations, usage, migrations = sql_state.snapshot()
    assert (allocations, usage, migrations) == before[1:]
    sql_state.assert_consistent()


def test_rebuild_on_a_full_host_runs_only_the_rebuild_filters(
        cluster_config):
    full = {'vcpus': 2, 'memory_mb': 2048, 'local_gb': 10}
    with inprocess.Cluster({'h1': full}) as cluster:
        row = _boot(cluster)
        # The host is full: RamFilter, CoreFilter and DiskFilter would
        # refuse it, and a claim would not fit.
        assert sql_state.usage() == {'h1': (2, 2048, 10)}
        answer = _api().rebuild_instance(sql_state.ctxt(), row.uuid,
                                         image=_image('new'))
    assert (answer['vm_state'], answer['host']) == ('active', 'h1')
    assert sql_state.allocations() == {row.uuid: 'h1'}
    assert sql_state.usage() == {'h1': (2, 2048, 10)}
    sql_state.assert_consistent()


# -- evacuation -------------------------------------------------------------


def test_evacuate_is_refused_while_the_source_is_up(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        row = _boot(cluster)
        before = sql_state.snapshot()
        with pytest.raises(exception.ComputeServiceInUse) as caught:
            _api().rebuild_instance(sql_state.ctxt(), row.uuid,
                                    evacuate=True)
        assert sql_state.snapshot() == before
    assert 'Compute service of h1 is still up' in str(caught.value)


def test_evacuate_from_a_down_host_lands_elsewhere(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL, 'h3': SMALL}) as cluster:
        row = _boot(cluster)
        assert row.host == 'h1'   # RAMWeigher: the big host
        sql_state.set_service('h1', forced_down=True)
        answer = _api().rebuild_instance(sql_state.ctxt(), row.uuid,
                                         evacuate=True)
    dest = answer['host']
    assert dest in ('h2', 'h3')
    assert (answer['vm_state'], answer['task_state']) == ('active', None)
    migration = answer['migration']
    assert migration['migration_type'] == moves.EVACUATION
    assert migration['status'] == moves.DONE
    assert (migration['source_host'], migration['dest_host']) == ('h1', dest)
    assert sql_state.instance(row.uuid).host == dest
    # The dead host's claim went with the new one.
    assert sql_state.allocations() == {row.uuid: dest}
    assert sql_state.usage()['h1'] == (0, 0, 0)
    assert sql_state.usage()[dest] == (2, 2048, 10)
    sql_state.assert_consistent()


def test_evacuate_to_a_requested_host(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': BIG, 'h3': SMALL}) as cluster:
        row = _boot(cluster)
        sql_state.set_service(row.host, forced_down=True)
        # Not forced: the filters check it; the weighers would prefer the
        # other big host.
        answer = _api().rebuild_instance(sql_state.ctxt(), row.uuid,
                                         evacuate=True, host='h3')
    assert answer['host'] == 'h3'
    assert sql_state.allocations() == {row.uuid: 'h3'}
    sql_state.assert_consistent()


def test_forced_evacuation_skips_the_filters(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        row = _boot(cluster)
        sql_state.set_service('h1', forced_down=True)
        sql_state.set_service('h2', disabled=True)
        time.sleep(CACHE_SETTLE)
        before = sql_state.snapshot()
        # ComputeFilter refuses the disabled host...
        with pytest.raises(exception.NoValidHost):
            _api().rebuild_instance(sql_state.ctxt(), row.uuid,
                                    evacuate=True, host='h2')
        _, allocations, usage, _ = sql_state.snapshot()
        assert (allocations, usage) == before[1:3]
        # ...unless forced.
        answer = _api().rebuild_instance(sql_state.ctxt(), row.uuid,
                                         evacuate=True, host='h2',
                                         force=True)
    assert (answer['host'], answer['vm_state']) == ('h2', 'active')
    assert answer['migration']['status'] == moves.DONE
    assert [m.status for m in sql_state.migrations(row.uuid)] == [
        moves.ERROR, moves.DONE]
    assert sql_state.allocations() == {row.uuid: 'h2'}
    assert sql_state.usage()['h1'] == (0, 0, 0)
    sql_state.assert_consistent()


@pytest.mark.parametrize('target', [{}, {'host': 'h2', 'force': True}],
                         ids=['scheduled', 'forced'])
def test_evacuate_without_room_changes_nothing(cluster_config, target):
    tiny = {'vcpus': 1, 'memory_mb': 1024, 'local_gb': 5}
    with inprocess.Cluster({'h1': BIG, 'h2': tiny}) as cluster:
        row = _boot(cluster)
        sql_state.set_service('h1', forced_down=True)
        before = sql_state.snapshot()
        with pytest.raises(exception.NoValidHost):
            _api().rebuild_instance(sql_state.ctxt(), row.uuid,
                                    evacuate=True, **target)
    after = sql_state.instance(row.uuid)
    assert (after.vm_state, after.task_state, after.host) == (
        'active', None, 'h1')
    _, allocations, usage, _ = sql_state.snapshot()
    assert allocations == {row.uuid: 'h1'} == before[1]
    assert usage == before[2]
    [migration] = sql_state.migrations(row.uuid)
    assert migration.status == moves.ERROR
    assert 'No valid host' in migration.error
    sql_state.assert_consistent()


def test_evacuate_keeps_an_anti_affinity_group_apart(cluster_config):
    with db_api.writer() as session:
        group = instance_groups.create(session, 'web', 'anti-affinity')
    hint = {'group': [group.uuid]}
    with inprocess.Cluster({'h1': SMALL, 'h2': SMALL,
                            'h3': SMALL}) as cluster:
        uuids = cluster.boot(count=2, scheduler_hints=hint, **FLAVOR)
        rows = cluster.wait_built(uuids)
        hosts = {row.host for row in rows.values()}
        assert len(hosts) == 2
        victim, other = sorted(rows.values(), key=lambda r: r.host)
        free = ({'h1', 'h2', 'h3'} - hosts).pop()
        sql_state.set_service(victim.host, forced_down=True)
        # Forced onto the other member's host: the claim checks the policy.
        with pytest.raises(exception.NoValidHost) as caught:
            _api().rebuild_instance(sql_state.ctxt(), victim.uuid,
                                    evacuate=True, host=other.host,
                                    force=True)
        assert 'anti-affinity' in str(caught.value)
        answer = _api().rebuild_instance(sql_state.ctxt(), victim.uuid,
                                         evacuate=True)
    assert answer['host'] == free
    assert sql_state.allocations() == {victim.uuid: free,
                                       other.uuid: other.host}
    sql_state.assert_consistent()


# -- bad input --------------------------------------------------------------


def test_bad_rebuild_and_evacuate_requests_change_nothing(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        row = _boot(cluster)
        [hostless] = cluster.boot(vcpus=1, memory_mb=10 ** 6, root_gb=1)
        assert cluster.wait_built([hostless])[hostless].vm_state == 'error'
        ctxt = sql_state.ctxt()
        api = _api()
        before = sql_state.snapshot()
        unknown = '00000000-0000-4000-8000-000000000000'
        cases = [
            (exception.InstanceNotFound, unknown,
             dict(image=_image('x')), unknown),
            (exception.InstanceNotFound, unknown, dict(evacuate=True),
             unknown),
            (exception.InvalidRequest, 'not-a-uuid', {}, 'must be a UUID'),
            (exception.InvalidRequest, row.uuid,
             dict(image={'properties': {}}), 'ImageMeta'),
            (exception.InvalidRequest, row.uuid, dict(host='h2'),
             'stays on its host'),
            (exception.InvalidRequest, row.uuid,
             dict(evacuate=True, image=_image('x')), 'keeps the image'),
            (exception.InvalidRequest, hostless, {},
             'no host to rebuild on'),
            (exception.InvalidRequest, hostless, dict(evacuate=True),
             'no host to evacuate from'),
            # The source is up.
            (exception.ComputeServiceInUse, row.uuid,
             dict(evacuate=True, host='h2'), 'still up'),
        ]
        for error, uuid, kwargs, words in cases:
            with pytest.raises(error) as caught:
                api.rebuild_instance(ctxt, uuid, **kwargs)
            assert words in str(caught.value), kwargs
            assert sql_state.snapshot() == before, kwargs
        sql_state.set_service('h1', forced_down=True)
        before = sql_state.snapshot()
        for error, kwargs, words in [
                (exception.HostNotFound, dict(host='nowhere'), 'nowhere'),
                (exception.HostNotFound, dict(host='nowhere', force=True),
                 'nowhere'),
                (exception.InvalidRequest, dict(host='h1'),
                 'the host it is evacuated from'),
                (exception.InvalidRequest, dict(force=True), 'needs a host')]:
            with pytest.raises(error) as caught:
                api.rebuild_instance(ctxt, row.uuid, evacuate=True, **kwargs)
            assert words in str(caught.value), kwargs
            assert sql_state.snapshot() == before, kwargs
