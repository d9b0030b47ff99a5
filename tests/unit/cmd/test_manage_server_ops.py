"""gantt-manage server migrate|resize|confirm|...: against a fake conductor.

The fake conductor is a real oslo.messaging RPC server on the ``fake://``
transport (topic ``conductor``, namespace ``compute_task``, version 1.1)
that records each call with its arguments and answers what the test sets:
a dict like the real conductor's, or an exception. The fake transport hands
an endpoint's exception to the caller as it is, where AMQP serializes it;
:func:`over_the_wire` makes the exception an AMQP caller would get (with
the functions the rabbit driver uses), so that gantt-manage is tested on
what it really receives.
"""

import queue
import sys

import oslo_messaging as messaging
from oslo_messaging._drivers import common as driver_common
import pytest

from conductor import rpcapi as conductor_rpcapi
from scheduler import conf
from scheduler import exception
from scheduler.objects import request_spec as request_spec_obj
from scheduler import rpc
from tests.unit.cmd import output

CONF = conf.CONF
UUID = '6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b'
UNKNOWN = '00000000-0000-4000-8000-0000000000aa'

MIGRATION = {'uuid': '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
             'migration_type': 'migration', 'status': 'finished',
             'source_host': 'cmp1', 'source_node': 'cmp1',
             'dest_host': 'cmp2', 'dest_node': 'cmp2', 'error': None}
FLAVOR = {'name': 'small', 'vcpus': 1, 'memory_mb': 512, 'root_gb': 1,
          'ephemeral_gb': 0, 'swap': 0, 'extra_specs': {}}


def over_the_wire(error):
    """``error`` as a caller over AMQP receives it from the conductor."""
    try:
        raise error
    except Exception:
        data = driver_common.serialize_remote_exception(sys.exc_info())
    return driver_common.deserialize_remote_exception(
        data, rpc.ALLOWED_EXMODS)


def answer(vm_state='active', host='cmp2', migration=None, **changes):
    values = {'uuid': UUID, 'vm_state': vm_state, 'task_state': None,
              'host': host, 'node': host, 'fault': None, 'flavor': FLAVOR}
    if migration is not None:
        values['migration'] = migration
    values.update(changes)
    return values


class FakeConductor:
    """Records compute_task 1.1 calls as ``(method, kwargs)``; answers
    ``self.answer`` or raises ``self.error``."""

    target = messaging.Target(
        namespace=conductor_rpcapi.COMPUTE_TASK_NAMESPACE,
        version=conductor_rpcapi.COMPUTE_TASK_API_VERSION)

    def __init__(self):
        self.received = queue.Queue()
        self.answer = answer()
        self.error = None

    def _answer(self, method, **kwargs):
        self.received.put((method, kwargs))
        if self.error is not None:
            raise self.error
        return self.answer

    @rpc.expose
    @messaging.expected_exceptions(exception.GanttException)
    def migrate_server(self, ctxt, **kwargs):
        return self._answer('migrate_server', **kwargs)

    @rpc.expose
    @messaging.expected_exceptions(exception.GanttException)
    def confirm_resize(self, ctxt, **kwargs):
        return self._answer('confirm_resize', **kwargs)

    @rpc.expose
    @messaging.expected_exceptions(exception.GanttException)
    def revert_resize(self, ctxt, **kwargs):
        return self._answer('revert_resize', **kwargs)

    @rpc.expose
    @messaging.expected_exceptions(exception.GanttException)
    def rebuild_instance(self, ctxt, **kwargs):
        return self._answer('rebuild_instance', **kwargs)

    @rpc.expose
    @messaging.expected_exceptions(exception.GanttException)
    def shelve_instance(self, ctxt, **kwargs):
        return self._answer('shelve_instance', **kwargs)

    @rpc.expose
    @messaging.expected_exceptions(exception.GanttException)
    def unshelve_instance(self, ctxt, **kwargs):
        return self._answer('unshelve_instance', **kwargs)

    @rpc.expose
    @messaging.expected_exceptions(exception.GanttException)
    def delete_instance(self, ctxt, **kwargs):
        if kwargs['instance_uuid'] == UNKNOWN:
            self.received.put(('delete_instance', kwargs))
            raise over_the_wire(exception.InstanceNotFound(uuid=UNKNOWN))
        return self._answer('delete_instance', **kwargs)


@pytest.fixture
def fake_conductor(serve_as_conductor):
    return serve_as_conductor(FakeConductor())


def fields(out):
    """``{field: value}`` of the Field/Value table printed."""
    return dict(output.table(out))


def received(conductor):
    return conductor.received.get(timeout=10)


# -- what each command sends --------------------------------------------------

def test_migrate_calls_migrate_server_and_prints_the_move(fake_conductor,
                                                          run):
    fake_conductor.answer = answer('resized', migration=MIGRATION)
    result = run('server', 'migrate', UUID)
    assert result.code == 0, result.err
    assert received(fake_conductor) == ('migrate_server', {
        'instance_uuid': UUID, 'flavor': None, 'live': False, 'host': None,
        'force': False})
    shown = fields(result.out)
    assert shown == {
        'uuid': UUID, 'vm_state': 'resized', 'task_state': '-',
        'host': 'cmp2', 'node': 'cmp2',
        'flavor': 'small (1 vCPU, 512 MB RAM, 1 GB disk)', 'fault': '-',
        'migration': MIGRATION['uuid'], 'migration_type': 'migration',
        'migration_status': 'finished', 'source': 'cmp1', 'dest': 'cmp2',
        'migration_error': '-'}
    assert ("Confirm with 'gantt-manage server confirm %s' or revert with "
            "'gantt-manage server revert %s'." % (UUID, UUID)) in result.out
    assert result.err == ''


def test_resize_sends_the_flavor_given(fake_conductor, run):
    result = run('server', 'resize', UUID, '--vcpus', '4', '--ram', '8192',
                 '--disk', '80', '--ephemeral', '10', '--swap', '1024',
                 '--flavor-name', 'large', '--flavor-extra-spec',
                 'hw:cpu_policy=dedicated', '--flavor-extra-spec', 'a=b')
    assert result.code == 0, result.err
    method, kwargs = received(fake_conductor)
    assert method == 'migrate_server'
    flavor = kwargs.pop('flavor')
    assert kwargs == {'instance_uuid': UUID, 'live': False, 'host': None,
                      'force': False}
    assert isinstance(flavor, request_spec_obj.Flavor)
    assert (flavor.name, flavor.vcpus, flavor.memory_mb, flavor.root_gb,
            flavor.ephemeral_gb, flavor.swap) == ('large', 4, 8192, 80, 10,
                                                  1024)
    assert flavor.extra_specs == {'hw:cpu_policy': 'dedicated', 'a': 'b'}


def test_resize_names_the_flavor_as_server_create_does(fake_conductor, run):
    result = run('server', 'resize', UUID, '--vcpus', '2', '--ram', '2048',
                 '--disk', '20')
    assert result.code == 0, result.err
    flavor = received(fake_conductor)[1]['flavor']
    assert (flavor.name, flavor.ephemeral_gb, flavor.swap,
            flavor.extra_specs) == ('2vcpu-2048mb-20gb', 0, 0, {})


@pytest.mark.parametrize('action, method', [
    ('confirm', 'confirm_resize'), ('revert', 'revert_resize'),
    ('shelve', 'shelve_instance'), ('unshelve', 'unshelve_instance')])
def test_plain_actions_send_only_the_uuid(fake_conductor, run, action,
                                          method):
    fake_conductor.answer = answer('shelved_offloaded', host=None)
    # Upper case is the same UUID: the canonical form is sent.
    result = run('server', action, UUID.upper())
    assert result.code == 0, result.err
    assert received(fake_conductor) == (method, {'instance_uuid': UUID})
    shown = fields(result.out)
    assert (shown['vm_state'], shown['host']) == ('shelved_offloaded', '-')
    assert 'migration' not in shown


def test_live_migrate_sends_host_and_force(fake_conductor, run):
    fake_conductor.answer = answer(migration=dict(
        MIGRATION, migration_type='live-migration', status='completed',
        dest_host='cmp3', dest_node='node-b'), host='cmp3', node='node-b')
    result = run('server', 'live-migrate', UUID, '--host', 'cmp3', '--force')
    assert result.code == 0, result.err
    assert received(fake_conductor) == ('migrate_server', {
        'instance_uuid': UUID, 'flavor': None, 'live': True, 'host': 'cmp3',
        'force': True})
    shown = fields(result.out)
    assert (shown['vm_state'], shown['migration_type'], shown['source'],
            shown['dest']) == ('active', 'live-migration', 'cmp1',
                               'cmp3/node-b')
    assert 'Confirm with' not in result.out


def test_live_migrate_without_host_lets_the_scheduler_pick(fake_conductor,
                                                           run):
    assert run('server', 'live-migrate', UUID).code == 0
    assert received(fake_conductor)[1] == {
        'instance_uuid': UUID, 'flavor': None, 'live': True, 'host': None,
        'force': False}


def test_evacuate_calls_rebuild_instance(fake_conductor, run):
    fake_conductor.answer = answer(migration=dict(
        MIGRATION, migration_type='evacuation', status='done'))
    result = run('server', 'evacuate', UUID, '--host', 'cmp2')
    assert result.code == 0, result.err
    assert received(fake_conductor) == ('rebuild_instance', {
        'instance_uuid': UUID, 'image': None, 'evacuate': True,
        'host': 'cmp2', 'force': False})
    assert fields(result.out)['migration_type'] == 'evacuation'


def test_rebuild_sends_the_image(fake_conductor, run):
    result = run('server', 'rebuild', UUID, '--image-name', 'cirros',
                 '--image-property', 'hw_architecture=x86_64',
                 '--image-property', 'os_distro=')
    assert result.code == 0, result.err
    method, kwargs = received(fake_conductor)
    image = kwargs.pop('image')
    assert (method, kwargs) == ('rebuild_instance', {
        'instance_uuid': UUID, 'evacuate': False, 'host': None,
        'force': False})
    assert isinstance(image, request_spec_obj.ImageMeta)
    assert (image.id, image.name, image.properties) == (
        None, 'cirros', {'hw_architecture': 'x86_64', 'os_distro': ''})


def test_rebuild_without_image_keeps_the_image(fake_conductor, run):
    assert run('server', 'rebuild', UUID).code == 0
    assert received(fake_conductor)[1]['image'] is None


def test_an_answer_in_error_exits_1_with_the_fault(fake_conductor, run):
    fake_conductor.answer = answer('error', fault='spawn failed on cmp2')
    result = run('server', 'unshelve', UUID)
    assert result.code == 1
    assert fields(result.out)['vm_state'] == 'error'
    assert result.err == ('gantt-manage: error: server %s is in error after '
                          'the unshelve: spawn failed on cmp2\n' % UUID)


# -- what the conductor refuses ----------------------------------------------

@pytest.mark.parametrize('error', [
    exception.NoValidHost(reason='There are not enough hosts available.'),
    exception.MaxRetriesExceeded(reason='3 hosts tried.'),
    exception.InstanceNotFound(uuid=UUID),
    exception.InstanceInvalidState(action='confirm', uuid=UUID,
                                   vm_state='active', task_state=None),
    exception.InvalidRequest(reason='a live migration cannot resize'),
    exception.HostNotFound(host='cmp9'),
    exception.ComputeServiceInUse(host='cmp1', uuid=UUID),
    exception.MigrationPreCheckError(reason='cmp2 refused it'),
], ids=lambda error: type(error).__name__)
def test_expected_errors_are_one_line_and_exit_1(fake_conductor, run,
                                                 error):
    fake_conductor.error = over_the_wire(error)
    # What the test sends is what AMQP callers get: the message, then the
    # conductor's traceback.
    assert str(fake_conductor.error).startswith(error.message + '\n')
    result = run('server', 'evacuate', UUID)
    assert result.code == 1
    assert result.out == ''
    # The message alone, not the traceback.
    assert result.err == 'gantt-manage: error: %s\n' % error.message
    assert received(fake_conductor)[0] == 'rebuild_instance'


@pytest.mark.parametrize('error, words', [
    # A builtin exception crosses RPC as itself (renamed ..._Remote)...
    (over_the_wire(ValueError('unexpected value in the spec')),
     'ValueError: unexpected value in the spec'),
    # ... one from a module the client may not import as a RemoteError.
    (messaging.RemoteError('OperationalError', 'database is locked', []),
     'OperationalError: database is locked'),
], ids=['builtin', 'other-module'])
def test_an_unexpected_conductor_failure_is_one_line(fake_conductor, run,
                                                     error, words):
    fake_conductor.error = error
    result = run('server', 'shelve', UUID)
    assert result.code == 1
    assert result.out == ''
    # (The fake conductor, in this process, logs its traceback to stderr
    # before gantt-manage writes its line.)
    assert result.err.endswith(
        '\ngantt-manage: error: the conductor failed: %s (see its log)\n'
        % words) or result.err == ('gantt-manage: error: the conductor '
                                   'failed: %s (see its log)\n' % words)


def test_no_answer_in_time_exits_2_outcome_unknown(fake_transport, run,
                                                   conf_file):
    # Nobody consumes the conductor topic: the call times out.
    conf_file.write_text('[DEFAULT]\nrpc_response_timeout = 1\n')
    result = run('server', 'migrate', UUID)
    assert result.code == 2
    assert result.out == ''
    assert result.err == (
        "gantt-manage: error: the conductor did not answer within "
        "rpc_response_timeout (1s); the outcome of the migration of server "
        "%s is unknown: check 'gantt-manage server show %s'\n"
        % (UUID, UUID))


def test_unreachable_broker_is_the_server_create_error(config, run,
                                                       conf_file):
    conf_file.write_text(
        '[DEFAULT]\ntransport_url = rabbit://gantt:s3cr3t@127.0.0.1:1/\n')
    result = run('server', 'confirm', UUID)
    assert result.code == 1
    assert result.out == ''
    assert result.err.startswith(
        'gantt-manage: error: Cannot reach the message broker at '
        'rabbit://gantt:***@127.0.0.1:1/: ')
    assert result.err.count('\n') == 1
    assert 's3cr3t' not in result.err
    assert rpc.TRANSPORT is None


# -- malformed arguments: usage errors, nothing sent --------------------------

@pytest.mark.parametrize('argv, words', [
    (['migrate', 'not-a-uuid'], "argument UUID: 'not-a-uuid' is not a UUID"),
    (['confirm', '1234'], "argument UUID: '1234' is not a UUID"),
    (['revert', ''], "argument UUID: '' is not a UUID"),
    (['shelve', 'x'], "argument UUID: 'x' is not a UUID"),
    (['unshelve', UUID + '0'], 'is not a UUID'),
    (['rebuild', 'abc'], "argument UUID: 'abc' is not a UUID"),
    (['evacuate', 'abc', '--host', 'h'], 'is not a UUID'),
    (['live-migrate', 'abc'], 'is not a UUID'),
    (['resize', 'abc', '--vcpus', '1', '--ram', '1', '--disk', '1'],
     'is not a UUID'),
    (['resize', UUID, '--vcpus', '0', '--ram', '512', '--disk', '1'],
     'argument --vcpus: must be at least 1, got 0'),
    (['resize', UUID, '--vcpus', '1', '--ram', '-512', '--disk', '1'],
     'argument --ram: must be at least 1, got -512'),
    (['resize', UUID, '--vcpus', '1', '--ram', '512', '--disk', '-1'],
     'argument --disk: must be at least 0, got -1'),
    (['resize', UUID, '--vcpus', '1', '--ram', '512', '--disk', '1',
      '--ephemeral', '-5'], 'argument --ephemeral: must be at least 0'),
    (['resize', UUID, '--vcpus', '1', '--ram', '512', '--disk', '1',
      '--swap', 'lots'], "argument --swap: 'lots' is not an integer"),
    (['resize', UUID, '--ram', '512', '--disk', '1'],
     'the following arguments are required: --vcpus'),
    (['resize', UUID, '--vcpus', '1', '--ram', '512', '--disk', '1',
      '--flavor-extra-spec', 'novalue'],
     "argument --flavor-extra-spec: expected KEY=VALUE, got 'novalue'"),
    (['rebuild', UUID, '--image-property', '=x'],
     "argument --image-property: expected KEY=VALUE, got '=x'"),
    (['live-migrate', UUID, '--force'], 'argument --force: needs --host'),
    (['evacuate', UUID, '--force'], 'argument --force: needs --host'),
], ids=lambda value: '-'.join(value)[:40] if isinstance(value, list)
   else None)
def test_malformed_arguments_are_usage_errors_and_send_nothing(
        fake_conductor, run, argv, words):
    result = run('server', *argv)
    assert result.code == 2
    assert result.out == ''
    assert words in result.err
    assert 'Traceback' not in result.err
    assert fake_conductor.received.empty()


def test_malformed_arguments_fail_before_any_broker_is_needed(config, run,
                                                              conf_file):
    # With an unreachable broker configured, an attempt to send would
    # end in the broker error (exit 1); the usage error comes first.
    conf_file.write_text('[DEFAULT]\n'
                         'transport_url = rabbit://guest:guest@127.0.0.1:1/\n')
    result = run('server', 'live-migrate', UUID, '--force')
    assert (result.code, result.err) == (
        2, 'gantt-manage: error: argument --force: needs --host\n')
    result = run('server', 'resize', UUID, '--vcpus', '-1', '--ram', '1',
                 '--disk', '1')
    assert result.code == 2
    assert 'message broker' not in result.err
    assert rpc.TRANSPORT is None


def test_help_lists_the_new_actions(config, run):
    result = run('server', '--help')
    assert result.code == 0
    for action in ('migrate', 'resize', 'confirm', 'revert', 'live-migrate',
                   'evacuate', 'rebuild', 'shelve', 'unshelve'):
        assert '\n    %s ' % action in result.out or \
            '\n    %s\n' % action in result.out, action


# -- delete -------------------------------------------------------------------

def test_delete_calls_delete_instance_for_each_server(fake_conductor, run):
    fake_conductor.answer = answer('deleted', host=None)
    result = run('server', 'delete', UUID, UUID.upper())
    assert result.code == 0, result.err
    assert output.table(result.out) == [[UUID, 'deleted', '-', '-']] * 2
    assert [received(fake_conductor) for _ in range(2)] == [
        ('delete_instance', {'instance_uuid': UUID})] * 2


def test_delete_of_an_unknown_server_is_one_line_and_exit_1(fake_conductor,
                                                            run):
    fake_conductor.answer = answer('deleted', host=None)
    result = run('server', 'delete', UNKNOWN, UUID)
    assert result.code == 1
    assert result.err == ('gantt-manage: error: server %s: Instance %s '
                          'could not be found.\n' % (UNKNOWN, UNKNOWN))
    # The other server is deleted all the same.
    assert output.table(result.out) == [[UUID, 'deleted', '-', '-']]


def test_delete_with_a_bad_uuid_sends_nothing(fake_conductor, run):
    result = run('server', 'delete', UUID, 'not-a-uuid')
    assert result.code == 2
    assert "'not-a-uuid' is not a UUID" in result.err
    assert fake_conductor.received.empty()
