"""Accepted builds are never lost: the 1.2 build call, lost spawn reports.

In-process services over oslo.messaging's fake:// transport and the
test's SQLite database (or, where the database must be away, a URL that
nothing listens on); nothing is mocked.
"""

import datetime
import threading
import time

import oslo_messaging as messaging
from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from compute import manager as compute_manager
from conductor import manager as conductor_manager
from conductor import rpcapi as conductor_rpcapi
from conductor.tasks import build
from conductor.tasks import instance_sync
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import compute_reports
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler import exception
from scheduler.objects import request_spec
from scheduler import service
from tests.unit import inprocess

HOST = {'vcpus': 8, 'memory_mb': 16384, 'local_gb': 200}


@pytest.fixture
def cluster_config(database, config):
    return inprocess.configure(config, exact_ratios=True)


def _rows():
    with db_api.reader() as session:
        return {row.uuid: row for row in db_instances.list_instances(session)}


def _allocation_count():
    with db_api.reader() as session:
        return session.scalar(sa.select(sa.func.count()).select_from(
            models.Allocation))


def test_the_call_answers_once_the_instances_are_recorded(cluster_config):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        uuids = cluster.boot(vcpus=1, memory_mb=512, root_gb=1, count=3)
        # Recorded before the answer: nothing to poll for.
        assert set(_rows()) == set(uuids)
        rows = cluster.wait_built(uuids)
    assert {row.vm_state for row in rows.values()} == {'active'}


def test_asking_again_builds_once(cluster_config):
    api = conductor_rpcapi.ComputeTaskAPI()
    ctxt = gantt_context.get_admin_context()
    with inprocess.Cluster({'h1': HOST, 'h2': HOST}) as cluster:
        uuids = [uuidutils.generate_uuid() for _ in range(2)]
        spec = cluster.spec(1, 512, 1, count=2)
        assert api.schedule_and_build_instances(ctxt, uuids, spec) == uuids
        assert api.schedule_and_build_instances(
            ctxt, uuids, cluster.spec(1, 512, 1, count=2)) == uuids
        rows = cluster.wait_built(uuids)
        time.sleep(0.3)   # a second build, if any, would land by now
        agents = [s.manager for s in cluster.services
                  if isinstance(s.manager, compute_manager.ComputeManager)]
        running = [uuid for agent in agents for uuid in agent._instances]
    assert {row.vm_state for row in rows.values()} == {'active'}
    assert sorted(running) == sorted(uuids)
    assert _allocation_count() == 2


def test_the_same_uuids_for_another_request_are_refused(cluster_config):
    api = conductor_rpcapi.ComputeTaskAPI()
    ctxt = gantt_context.get_admin_context()
    with inprocess.Cluster({'h1': HOST}) as cluster:
        uuids = cluster.boot(vcpus=1, memory_mb=512, root_gb=1)
        cluster.wait_built(uuids)
        with pytest.raises(exception.InvalidRequest,
                           match='already exists'):
            api.schedule_and_build_instances(ctxt, uuids,
                                             cluster.spec(2, 512, 1))
    assert _rows()[uuids[0]].flavor['vcpus'] == 1


@pytest.mark.parametrize('uuids, spec, reason', [
    (['not-a-uuid'], None, 'must be a UUID'),
    ([], None, 'distinct and at least one'),
    (None, None, 'must be a list'),
    ([uuidutils.generate_uuid()] * 2, None, 'distinct and at least one'),
    ([uuidutils.generate_uuid()], 'spec', 'RequestSpec object'),
    ([uuidutils.generate_uuid()], request_spec.RequestSpec(
        num_instances=2, flavor=request_spec.Flavor(
            vcpus=1, memory_mb=1, root_gb=1)), 'num_instances=2'),
    ([uuidutils.generate_uuid()], inprocess.Cluster.spec(0, 512, 1),
     'flavor.vcpus must be at least 1, not 0'),
    ([uuidutils.generate_uuid()], inprocess.Cluster.spec(1, 0, 1),
     'flavor.memory_mb must be at least 1, not 0'),
])
def test_a_refused_build_reaches_the_caller_and_writes_nothing(
        cluster_config, uuids, spec, reason):
    if spec is None:
        spec = inprocess.Cluster.spec(1, 512, 1)
    with inprocess.Cluster({'h1': HOST}):
        client = conductor_rpcapi.ComputeTaskAPI().client.prepare(
            version='1.2')
        with pytest.raises(exception.InvalidRequest, match=reason):
            client.call(gantt_context.get_admin_context(),
                        'schedule_and_build_instances',
                        instance_uuids=uuids, request_spec=spec)
    assert _rows() == {}


def test_a_database_away_past_the_budget_refuses_with_the_reason(config):
    config.config(connection='postgresql+psycopg2://gantt:s3cret@'
                             '127.0.0.1:9/gantt', group='database')
    config.config(max_retries=0, db_max_retries=2, db_retry_interval=0,
                  group='database')
    db_api.dispose_engine()
    task = build.BuildTask(scheduler_api=None, compute_api=None, workers=1)
    try:
        started = time.monotonic()
        with pytest.raises(exception.DatabaseUnavailable) as caught:
            task.accept([uuidutils.generate_uuid()],
                        inprocess.Cluster.spec(1, 512, 1))
    finally:
        task.stop()
        db_api.dispose_engine()
    assert time.monotonic() - started < 10
    assert '127.0.0.1:9' in str(caught.value)
    assert 's3cret' not in str(caught.value)


def _record(uuid, vm_state, host):
    with db_api.writer() as session:
        db_instances.create(session, uuid, flavor={}, request_spec={})
        db_instances.update(session, uuid, vm_state=vm_state, host=host,
                            node=host)


def _node(host):
    with db_api.writer() as session:
        return db_compute_nodes.report_inventory(
            session, uuidutils.generate_uuid(), host, host,
            {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100})


def test_sync_repairs_lost_spawn_reports_and_names_what_to_forget(database):
    uuids = {name: uuidutils.generate_uuid() for name in (
        'lost_report', 'elsewhere', 'reaped', 'running', 'migrating')}
    _record(uuids['lost_report'], 'building', 'h1')
    _record(uuids['elsewhere'], 'building', 'h2')
    _record(uuids['reaped'], 'error', None)
    _record(uuids['running'], 'active', 'h1')
    _record(uuids['migrating'], 'resized', 'h2')
    unknown = uuidutils.generate_uuid()
    sent = dict.fromkeys(list(uuids.values()) + [unknown], 'h1')
    # Placed on h1, which does not report them: one long ago (its build
    # message was lost), one a moment ago (its message is on its way).
    never_arrived, on_its_way = (uuidutils.generate_uuid(),
                                 uuidutils.generate_uuid())
    node = _node('h1')
    for uuid in (never_arrived, on_its_way):
        _record(uuid, 'building', 'h1')
        with db_api.writer() as session:
            db_instances.update(session, uuid, task_state='spawning')
            claims.claim_resources(session, node, uuid,
                                   claims.Resources(1, 512, 1))
    with db_api.writer() as session:
        session.execute(sa.update(models.Instance).where(
            models.Instance.uuid == never_arrived).values(
            updated_at=models.utcnow() - datetime.timedelta(hours=1)))

    outcome = instance_sync.sync_host_instances('h1', sent, [])

    lost = outcome.pop('lost_builds')
    # 'elsewhere' runs here from a build message that came after it
    # moved to h2: h1 forgets it, its record stays as it is.
    assert outcome == {'activated': [uuids['lost_report']],
                       'forget': sorted([uuids['reaped'], unknown,
                                         uuids['elsewhere']]),
                       'lost': [never_arrived]}
    assert [build.uuid for build in lost] == [never_arrived]
    assert lost[0].host == 'h1' and lost[0].node == 'h1'
    assert 'never reached compute h1' in lost[0].reason
    # Taken back to be scheduled on its next alternate: off the host,
    # its claim there released in the same transaction.
    assert _rows()[never_arrived].vm_state == 'building'
    assert _rows()[never_arrived].task_state == 'scheduling'
    assert _rows()[never_arrived].host is None
    assert _rows()[on_its_way].vm_state == 'building'
    with db_api.reader() as session:
        assert claims.get_allocations(session, never_arrived) == []
        assert len(claims.get_allocations(session, on_its_way)) == 1
    rows = _rows()
    assert rows[uuids['lost_report']].vm_state == 'active'
    assert rows[uuids['lost_report']].launched_at is not None
    assert rows[uuids['elsewhere']].vm_state == 'building'
    assert rows[uuids['migrating']].vm_state == 'resized'
    # Asking again changes nothing more: the lost build is taken once.
    again = instance_sync.sync_host_instances('h1', sent, [])
    assert again['activated'] == [] and again['lost_builds'] == []


def test_a_build_still_spawning_is_never_marked_active(database):
    spawning, running = uuidutils.generate_uuid(), uuidutils.generate_uuid()
    for uuid in (spawning, running):
        _record(uuid, 'building', 'h1')
    outcome = instance_sync.sync_host_instances('h1', {running: 'h1'},
                                                [spawning])
    assert outcome['activated'] == [running]
    rows = _rows()
    assert rows[spawning].vm_state == 'building'
    assert rows[running].vm_state == 'active'
    # What the compute said is kept for db check.
    with db_api.reader() as session:
        report = compute_reports.get_all(session)['h1']
    assert report.running == {running: 'h1'}
    assert report.spawning == [spawning]


def test_a_sync_that_cannot_tell_spawning_from_running_activates_nothing(
        database):
    uuid = uuidutils.generate_uuid()
    _record(uuid, 'building', 'h1')
    # ConductorAPI 1.1: running and spawning in one dict.
    outcome = instance_sync.sync_host_instances('h1', {uuid: 'h1'})
    assert outcome['activated'] == []
    assert _rows()[uuid].vm_state == 'building'


def test_a_lost_build_is_taken_by_one_of_two_conductors(database):
    uuid = uuidutils.generate_uuid()
    node = _node('h1')
    _record(uuid, 'building', 'h1')
    with db_api.writer() as session:
        db_instances.update(session, uuid, task_state='spawning')
        claims.claim_resources(session, node, uuid,
                               claims.Resources(1, 512, 1))
        session.execute(sa.update(models.Instance).where(
            models.Instance.uuid == uuid).values(
            updated_at=models.utcnow() - datetime.timedelta(hours=1)))
    taken = []
    threads = [threading.Thread(target=lambda: taken.extend(
        instance_sync.take_lost_builds('h1', set()))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [build.uuid for build in taken] == [uuid]


def test_a_spawn_report_waits_for_a_conductor_that_comes_late(
        cluster_config, monkeypatch):
    cluster_config.config(rpc_response_timeout=1)
    monkeypatch.setattr(compute_manager, 'REPORT_RETRY_SECONDS', 30)
    uuid = uuidutils.generate_uuid()
    _record(uuid, 'building', 'c1')
    agent = compute_manager.ComputeManager(host='c1')
    agent.init_host()
    conductor = service.Service('conductor', 'gantt-conductor',
                                conductor_rpcapi.RPC_TOPIC,
                                conductor_manager.ConductorManager())
    late_start = threading.Timer(2.5, conductor.start)
    late_start.start()
    try:
        started = time.monotonic()
        answer = agent._report_spawned(gantt_context.get_admin_context(),
                                       uuid, 'c1')
        waited = time.monotonic() - started
    finally:
        late_start.join()
        conductor.stop()
    assert answer is True
    assert waited >= 2.5
    assert _rows()[uuid].vm_state == 'active'


def test_a_spawn_report_gives_up_after_its_budget(cluster_config,
                                                  monkeypatch):
    cluster_config.config(rpc_response_timeout=1)
    monkeypatch.setattr(compute_manager, 'REPORT_RETRY_SECONDS', 2)
    uuid = uuidutils.generate_uuid()
    _record(uuid, 'building', 'c1')
    agent = compute_manager.ComputeManager(host='c1')
    agent.init_host()
    assert agent._report_spawned(gantt_context.get_admin_context(),
                                 uuid, 'c1') is compute_manager.UNREPORTED
    assert _rows()[uuid].vm_state == 'building'


def test_a_spawn_report_counts_only_from_where_the_build_is_placed(
        database):
    conductor = conductor_manager.ConductorManager()
    ctxt = gantt_context.get_admin_context()
    spawned = {'vm_state': 'active', 'task_state': None, 'launched_at': True}
    uuid = uuidutils.generate_uuid()
    _record(uuid, 'building', 'h2')

    # A build message that reached h1 after the instance moved to h2.
    assert conductor.instance_update(ctxt, uuid, dict(spawned), 'h1',
                                     'h1') is False
    assert conductor.instance_update(ctxt, uuid, dict(spawned), 'h2',
                                     'other-node') is False
    assert (_rows()[uuid].vm_state, _rows()[uuid].host) == ('building', 'h2')
    assert conductor.instance_update(ctxt, uuid, dict(spawned), 'h2',
                                     'h2') is True
    assert (_rows()[uuid].vm_state, _rows()[uuid].host) == ('active', 'h2')
    # The same report again holds; a late one from h1 still does not.
    assert conductor.instance_update(ctxt, uuid, dict(spawned), 'h2',
                                     'h2') is True
    assert conductor.instance_update(ctxt, uuid, dict(spawned), 'h1',
                                     'h1') is False
    # A compute before 1.6 names no host: the state alone decides.
    other = uuidutils.generate_uuid()
    _record(other, 'building', 'h2')
    assert conductor.instance_update(ctxt, other, dict(spawned)) is True
    with pytest.raises(messaging.ExpectedException) as info:
        conductor.instance_update(ctxt, other, dict(spawned), 'h2')
    assert isinstance(info.value.exc_info[1], exception.InvalidRequest)
    assert 'node is missing' in str(info.value.exc_info[1])


def test_a_spawn_report_goes_without_its_host_to_a_conductor_before_1_6(
        cluster_config):
    cluster_config.config(conductor='1.5', group='upgrade_levels')
    uuid = uuidutils.generate_uuid()
    _record(uuid, 'building', 'h2')
    conductor = service.Service('conductor', 'gantt-conductor',
                                conductor_rpcapi.RPC_TOPIC,
                                conductor_manager.ConductorManager())
    conductor.start()
    try:
        # Capped, the host is not sent, so the report from h1 holds.
        assert conductor_rpcapi.ConductorAPI().instance_update(
            gantt_context.get_admin_context(), uuid,
            {'vm_state': 'active'}, host='h1', node='h1') is True
    finally:
        conductor.stop()
    assert _rows()[uuid].vm_state == 'active'


def test_a_compute_sync_activates_and_forgets(cluster_config):
    with inprocess.Cluster({'h1': HOST}) as cluster:
        agent = next(s.manager for s in cluster.services
                     if isinstance(s.manager, compute_manager.ComputeManager))
        lost, reaped = uuidutils.generate_uuid(), uuidutils.generate_uuid()
        _record(lost, 'building', 'h1')
        _record(reaped, 'error', None)
        spec = cluster.spec(1, 512, 1)
        agent._track(lost, 'h1', spec)
        agent._track(reaped, 'h1', spec)
        agent.sync_instances_with_conductor(
            gantt_context.get_admin_context())
        running = sorted(agent._instances)
    assert running == [lost]
    assert _rows()[lost].vm_state == 'active'


def _reorder_changes(value):
    """``value`` with every object's list of changes reversed, as
    another process's set order would give it."""
    if isinstance(value, dict):
        return {key: (list(reversed(item)) if key.endswith('.changes')
                      else _reorder_changes(item))
                for key, item in value.items()}
    if isinstance(value, list):
        return [_reorder_changes(item) for item in value]
    return value


def _renamespaced(value, namespace):
    if isinstance(value, dict):
        return {(namespace + '.' + key.split('.', 1)[1]
                 if key.startswith('gantt_object.') else key):
                _renamespaced(item, namespace)
                for key, item in value.items()}
    if isinstance(value, list):
        return [_renamespaced(item, namespace) for item in value]
    return value


def test_a_request_is_the_same_whatever_its_serializer_added():
    spec = inprocess.Cluster.spec(2, 1024, 10, project_id='p1',
                                  scheduler_hints={'a': ['1'], 'b': ['2']})
    primitive = spec.obj_to_primitive()
    changes = primitive['gantt_object.changes']
    assert len(changes) > 1
    reordered = _reorder_changes(primitive)
    assert reordered['gantt_object.changes'] != changes
    assert build._same_request(primitive, reordered)
    assert build._same_request(primitive,
                               _renamespaced(primitive, 'versioned_object'))
    # A field's value is what tells two requests apart.
    other = inprocess.Cluster.spec(2, 2048, 10, project_id='p1',
                                   scheduler_hints={'a': ['1'], 'b': ['2']})
    assert not build._same_request(primitive, other.obj_to_primitive())
    hints = inprocess.Cluster.spec(2, 1024, 10, project_id='p1',
                                   scheduler_hints={'a': ['1']})
    assert not build._same_request(primitive, hints.obj_to_primitive())


def test_a_request_sent_again_with_its_changes_reordered_is_accepted_once(
        database):
    uuid = uuidutils.generate_uuid()
    spec = inprocess.Cluster.spec(2, 1024, 10, project_id='p1')
    assert build._record([uuid], spec) is True
    again = request_spec.RequestSpec.obj_from_primitive(
        _reorder_changes(spec.obj_to_primitive()))
    assert build._record([uuid], again) is False
    with pytest.raises(exception.InvalidRequest, match='already exists'):
        build._record([uuid], inprocess.Cluster.spec(4, 1024, 10))
