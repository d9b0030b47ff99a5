"""gantt-manage server create, against a fake conductor.

The fake conductor is a real oslo.messaging RPC server on the ``fake://``
transport, topic ``conductor``, namespace ``compute_task``, that records
what it receives and, for the ``--wait`` tests, writes the instance rows as
the real conductor and computes would.
"""

import queue

import oslo_messaging as messaging
import pytest

from conductor import rpcapi as conductor_rpcapi
from scheduler.cmd import manage_server
from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.objects import request_spec as request_spec_obj
from scheduler import rpc
from tests.unit.cmd import output

CONF = conf.CONF
GROUP = '3e1f0b6a-9c2d-4e5f-8a7b-6c5d4e3f2a1b'


class FakeConductor:
    """Records the builds asked for (the 1.2 call, or the 1.0 cast);
    ``outcome`` writes rows like the real conductor and computes would."""

    target = messaging.Target(
        namespace=conductor_rpcapi.COMPUTE_TASK_NAMESPACE,
        version=conductor_rpcapi.COMPUTE_TASK_API_VERSION)

    def __init__(self):
        self.received = queue.Queue()
        self.outcome = None

    @rpc.expose
    def build_instances(self, ctxt, instance_uuids, request_spec,
                        host_lists=None, failure=None):
        if self.outcome is not None:
            self.outcome(instance_uuids, request_spec)
        self.received.put((instance_uuids, request_spec, host_lists,
                           failure))

    @rpc.expose
    def schedule_and_build_instances(self, ctxt, instance_uuids,
                                     request_spec):
        self.build_instances(ctxt, instance_uuids, request_spec)
        return instance_uuids


@pytest.fixture
def fake_conductor(serve_as_conductor):
    return serve_as_conductor(FakeConductor())


def test_server_create_sends_the_request_spec(fake_conductor, run):
    result = run('server', 'create', '--vcpus', '2', '--ram', '4096',
                 '--disk', '40', '--count', '3', '--az', 'az1',
                 '--hint', 'group=%s' % GROUP, '--hint', 'foo=a',
                 '--hint', 'foo=b', '--project', 'p1')
    assert result.code == 0, result.err
    printed = result.out.split()
    assert len(printed) == 3 and all(output.UUID_RE.match(u) for u in printed)

    uuids, spec, host_lists, failure = fake_conductor.received.get(
        timeout=10)
    assert uuids == printed
    assert host_lists is None and failure is None
    assert isinstance(spec, request_spec_obj.RequestSpec)
    assert spec.num_instances == 3
    assert spec.instance_uuid == printed[0]
    assert (spec.flavor.vcpus, spec.flavor.memory_mb, spec.flavor.root_gb) \
        == (2, 4096, 40)
    assert spec.resources() == claims.Resources(2, 4096, 40)
    assert spec.scheduler_hints == {'group': [GROUP], 'foo': ['a', 'b']}
    assert spec.availability_zone == 'az1'
    assert spec.project_id == 'p1'
    # The transport belongs to the caller: gantt-manage left it alone.
    assert rpc.TRANSPORT is not None


def _land(outcomes):
    """A fake conductor outcome: record the rows, then end each instance
    as ``outcomes[index]`` says (vm_state, host, fault)."""
    def outcome(instance_uuids, spec):
        with db_api.writer() as session:
            for uuid, (state, host, fault) in zip(instance_uuids, outcomes):
                db_instances.create(session, uuid, {'vcpus': 1}, {},
                                    project_id=spec.project_id)
                if state != db_instances.BUILDING:
                    db_instances.update(session, uuid, vm_state=state,
                                        host=host, node=host, fault=fault,
                                        task_state=None)
    return outcome


def test_server_create_wait_prints_where_servers_landed(database,
                                                         fake_conductor,
                                                         run, monkeypatch):
    monkeypatch.setattr(manage_server, 'POLL_INTERVAL', 0.05)
    fake_conductor.outcome = _land([
        (db_instances.ACTIVE, 'compute1', None),
        (db_instances.ERROR, None, 'No valid host was found.')])
    result = run('server', 'create', '--vcpus', '1', '--ram', '512',
                 '--disk', '1', '--count', '2', '--name', 'web', '--wait')
    assert result.code == 1, result.err
    uuids = result.out.split('\n')[:2]
    assert output.table(result.out) == [
        [uuids[0], 'web-1', 'active', 'compute1', 'compute1', '-'],
        [uuids[1], 'web-2', 'error', '-', '-', 'No valid host was found.'],
    ]


def test_server_create_wait_exits_0_when_all_active(database,
                                                    fake_conductor, run,
                                                    monkeypatch):
    monkeypatch.setattr(manage_server, 'POLL_INTERVAL', 0.05)
    fake_conductor.outcome = _land([(db_instances.ACTIVE, 'compute1', None)])
    result = run('server', 'create', '--vcpus', '1', '--ram', '512',
                 '--disk', '1', '--wait')
    assert result.code == 0, result.err
    assert output.table(result.out)[0][2:4] == ['active', 'compute1']


def test_server_create_wait_times_out_naming_servers_still_building(
        database, fake_conductor, run, monkeypatch):
    monkeypatch.setattr(manage_server, 'POLL_INTERVAL', 0.05)
    fake_conductor.outcome = _land([(db_instances.BUILDING, None, None),
                                    (db_instances.ACTIVE, 'compute1', None)])
    result = run('server', 'create', '--vcpus', '1', '--ram', '512',
                 '--disk', '1', '--count', '2', '--wait', '--timeout', '0.5')
    assert result.code == 2
    uuids = result.out.split('\n')[:2]
    assert result.err == ('gantt-manage: error: timed out after 0.5s; '
                          'still building: %s\n' % uuids[0])
    states = [row[2] for row in output.table(result.out)]
    assert states == ['building', 'active']


def test_server_create_wait_tolerates_rows_not_recorded_yet(
        database, fake_conductor, run, monkeypatch):
    monkeypatch.setattr(manage_server, 'POLL_INTERVAL', 0.05)
    result = run('server', 'create', '--vcpus', '1', '--ram', '512',
                 '--disk', '1', '--wait', '--timeout', '0.3')
    assert result.code == 2
    uuid = result.out.split('\n')[0]
    assert 'still building: %s' % uuid in result.err
    assert output.table(result.out) == [
        [uuid, '-', 'not recorded yet', '-', '-', '-']]


def test_server_create_names_the_rows_once_recorded(database, fake_conductor,
                                                    run, monkeypatch):
    # build_instances cannot carry names: gantt-manage writes them on the
    # rows the conductor records, even without --wait.
    monkeypatch.setattr(manage_server, 'POLL_INTERVAL', 0.05)
    fake_conductor.outcome = _land([(db_instances.BUILDING, None, None)])
    result = run('server', 'create', '--vcpus', '1', '--ram', '512',
                 '--disk', '1', '--name', 'solo')
    assert result.code == 0, result.err
    [uuid] = result.out.split()
    with db_api.reader() as session:
        row = db_instances.get(session, uuid)
    assert (row.display_name, row.vm_state) == ('solo', 'building')


def test_server_create_carries_extra_specs_image_and_hints(fake_conductor,
                                                           run):
    result = run('server', 'create', '--vcpus', '1', '--ram', '512',
                 '--disk', '1', '--flavor-extra-spec',
                 'capabilities:stats:gpu=a100', '--flavor-extra-spec',
                 'hw:cpu_policy=shared', '--image', 'img-1',
                 '--image-property', 'hw_architecture=x86_64',
                 '--hint', 'same_host=%s' % GROUP,
                 '--hint', 'build_near_host_ip=10.0.0.7',
                 '--hint', 'cidr=/24',
                 '--hint', 'query=[">=", "$free_ram_mb", 1024]')
    assert result.code == 0, result.err
    _uuids, spec, _lists, _failure = fake_conductor.received.get(timeout=10)
    assert spec.flavor.extra_specs == {
        'capabilities:stats:gpu': 'a100', 'hw:cpu_policy': 'shared'}
    assert spec.image.id == 'img-1'
    assert spec.image.properties == {'hw_architecture': 'x86_64'}
    assert spec.scheduler_hints == {
        'same_host': [GROUP], 'build_near_host_ip': ['10.0.0.7'],
        'cidr': ['/24'], 'query': ['[">=", "$free_ram_mb", 1024]']}


@pytest.mark.parametrize('hint, words', [
    ('group=web', 'hint group must be a UUID'),
    ('different_host=h1', 'hint different_host must be a UUID'),
    ('build_near_host_ip=10.0.0', 'build_near_host_ip must be an IP'),
    ('cidr=24', "hint cidr must look like '/24'"),
    ('query=[">=", "$free_ram_mb"', 'hint query must be JSON'),
])
def test_server_create_refuses_hints_nova_would_refuse(fake_conductor, run,
                                                       hint, words):
    result = run('server', 'create', '--vcpus', '1', '--ram', '512',
                 '--disk', '1', '--hint', hint)
    assert result.code == 1
    assert words in result.err
    assert fake_conductor.received.empty()


def test_server_create_refuses_a_second_group(fake_conductor, run):
    result = run('server', 'create', '--vcpus', '1', '--ram', '512',
                 '--disk', '1', '--hint', 'group=%s' % GROUP,
                 '--hint', 'group=%s' % GROUP)
    assert result.code == 1
    assert 'hint group may be given once only' in result.err
