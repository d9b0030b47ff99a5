"""The versioned payloads: Nova's ``nova_object.*`` shape, built from
Gantt's objects and rows."""

import datetime

from oslo_utils import uuidutils

from scheduler import exception
from scheduler.notifications import base
from scheduler.notifications import request_spec as spec_notes
from scheduler.notifications import service as service_notes
from scheduler.objects import request_spec


def _spec():
    return request_spec.RequestSpec(
        instance_uuid=uuidutils.generate_uuid(), project_id='p1',
        user_id='u1', num_instances=2,
        flavor=request_spec.Flavor(name='m1.small', flavorid='2', vcpus=1,
                                   memory_mb=512, root_gb=1,
                                   extra_specs={'hw:cpu_policy': 'shared'}),
        image=request_spec.ImageMeta(id='img', properties={
            'hw_architecture': 'x86_64'}),
        scheduler_hints={'group': ['g1']},
        retry=request_spec.SchedulerRetries(num_attempts=2,
                                            hosts=[['h1', 'n1']]))


def test_request_spec_payload_has_novas_keys_and_no_changes_list():
    spec = _spec()
    primitive = spec_notes.RequestSpecPayload.from_spec(spec).to_primitive()
    assert set(primitive) == {'nova_object.name', 'nova_object.namespace',
                              'nova_object.version', 'nova_object.data'}
    assert (primitive['nova_object.name'],
            primitive['nova_object.namespace'],
            primitive['nova_object.version']) == (
                'RequestSpecPayload', 'gantt', '1.0')
    data = primitive['nova_object.data']
    assert (data['instance_uuid'], data['project_id'], data['user_id'],
            data['num_instances']) == (spec.instance_uuid, 'p1', 'u1', 2)
    flavor = data['flavor']['nova_object.data']
    assert (flavor['name'], flavor['flavorid'], flavor['vcpus'],
            flavor['memory_mb'], flavor['extra_specs']) == (
                'm1.small', '2', 1, 512, {'hw:cpu_policy': 'shared'})
    assert data['image']['nova_object.data']['properties'] == {
        'hw_architecture': 'x86_64'}
    assert data['retry']['nova_object.data'] == {
        'num_attempts': 2, 'hosts': [['h1', 'n1']]}
    assert data['scheduler_hints'] == {'group': ['g1']}
    # Every field is present, unset ones as None.
    assert data['instance_group'] is None
    assert data['requested_destination'] is None


def test_plain_form_unwraps_nested_payloads():
    plain = spec_notes.RequestSpecPayload.from_spec(_spec()).to_plain()
    assert plain['flavor']['memory_mb'] == 512
    assert plain['retry'] == {'num_attempts': 2, 'hosts': [['h1', 'n1']]}
    assert 'nova_object.data' not in str(plain)


def test_exception_payload_reads_the_class_from_a_fault():
    payload = base.ExceptionPayload.from_fault(
        'NoValidHost: No valid host was found. RamFilter removed 3 hosts')
    assert (payload.exception, payload.exception_message) == (
        'NoValidHost', 'No valid host was found. RamFilter removed 3 hosts')
    payload = base.ExceptionPayload.from_fault('The scheduler did not '
                                               'answer in time.')
    assert (payload.exception, payload.exception_message) == (
        None, 'The scheduler did not answer in time.')


def test_exception_payload_from_an_exception_drops_remote_traceback():
    error = ValueError('bad value\nTraceback (most recent call last):\n  x')
    payload = base.ExceptionPayload.from_exception(error, 'build')
    assert (payload.module_name, payload.function_name, payload.exception,
            payload.exception_message) == ('builtins', 'build', 'ValueError',
                                           'bad value')


class _Row:
    host, binary, topic, report_count = 'h1', 'gantt-compute', 'compute', 3
    disabled, disabled_reason, forced_down = True, 'maintenance', False
    last_seen_up = datetime.datetime(2026, 11, 25, 10, 0, 0)


def test_service_status_payload():
    data = service_notes.ServiceStatusPayload.from_row(
        _Row()).to_primitive()['nova_object.data']
    assert (data['host'], data['binary'], data['disabled'],
            data['disabled_reason'], data['report_count'],
            data['forced_down'], data['uuid']) == (
                'h1', 'gantt-compute', True, 'maintenance', 3, False, None)
    assert data['last_seen_up'].startswith('2026-11-25T10:00:00')


def test_exception_payload_names_a_remote_exception_by_its_class():
    remote = type('NoValidHost_Remote', (exception.NoValidHost,),
                  {'__module__': 'scheduler.exception_Remote'})
    payload = base.ExceptionPayload.from_exception(
        remote(reason='RamFilter removed the last 2'))
    assert (payload.module_name, payload.exception) == (
        'scheduler.exception', 'NoValidHost')
    assert 'RamFilter removed the last 2' in payload.exception_message
