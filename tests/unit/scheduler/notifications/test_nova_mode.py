"""Nova mode's select_destinations notifications against what Nova 34
itself sent for the same request (fixtures recorded by
``tools/record_nova_notifications.py`` with nova==34.0.0): for each
recorded spec and each ``notification_format``, Gantt must send the same
notifications, in the same order, with the same event types, publishers,
priorities, payloads and contexts, on the same topics. Only what differs
between any two sends (message_id, timestamps) is left out, plus one
deliberate difference: Nova's legacy payload leaks the caller's token in a
``_context`` dump, Gantt's does not."""

import copy
import json
import logging
import pathlib

import pytest
from oslo_messaging.notify import _impl_test

from scheduler import config as gantt_config
from scheduler import exception
from scheduler import notifications
from scheduler.notifications import nova_mode
from scheduler.notifications import nova_payloads
from tests.unit.scheduler.notifications import recorder

FIXTURES = (pathlib.Path(__file__).parents[2] / 'notifications' /
            'fixtures' / 'nova')
SPECS = ('spec_full', 'spec_numa_pci', 'spec_sparse', 'spec_az')
FORMATS = ('unversioned', 'versioned', 'both')


def _fixture(name):
    with open(FIXTURES / (name + '.json')) as stream:
        return json.load(stream)


def _comparable(value):
    """Drop what differs between two sends; a set's order is Python's."""
    if isinstance(value, dict):
        return {key: (sorted(item) if key == '_changed_fields' else
                      None if key == 'auth_token' else _comparable(item))
                for key, item in value.items()
                if key not in ('message_id', 'timestamp')}
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    return value


def _send(recorded, phases=('start', 'end')):
    spec = copy.deepcopy(recorded['spec'])
    # What Nova's request filters added on the scheduler's side.
    for aggregates in recorded.get('request_filters', {}).get(
            'required_aggregates', []):
        spec = nova_mode.require_aggregates(spec, aggregates)
    for phase in phases:
        nova_mode.select_destinations(copy.deepcopy(recorded['context']),
                                      spec, phase, host=recorded['host'])
    notifications.flush()
    return [{'ctxt': ctxt, 'message': message, 'priority': priority}
            for ctxt, message, priority, _retry in _impl_test.NOTIFICATIONS]


@pytest.fixture
def nova_notifications(config):
    def enable(notification_format):
        gantt_config.register_opts()
        config.config(transport_url='fake://')
        recorder.enable(config, notification_format)
    yield enable
    notifications.cleanup()


@pytest.mark.parametrize('notification_format', FORMATS)
@pytest.mark.parametrize('name', SPECS)
def test_gantt_sends_what_nova_sent(nova_notifications, name,
                                    notification_format):
    recorded = _fixture(name)
    expected = recorded['notifications'][notification_format]
    nova_notifications(notification_format)
    sent = json.loads(json.dumps(_send(recorded)))
    assert [item['message']['event_type'] for item in sent] == [
        item['message']['event_type'] for item in expected['sent']]
    for got, want in zip(sent, expected['sent']):
        assert _comparable(got) == _comparable(
            {key: want[key] for key in ('ctxt', 'message', 'priority')})
        assert got['ctxt']['timestamp'] != recorded['context']['timestamp']
    versioned, legacy = nova_mode._get_notifiers()
    for kind, notifier in (('versioned', versioned), ('legacy', legacy)):
        if expected['notifiers'][kind]['drivers'] == ['noop']:
            assert notifier is None, kind
        else:
            assert notifier._topics == expected['notifiers'][kind]['topics']


def test_the_token_never_leaves(nova_notifications):
    recorded = _fixture('spec_numa_pci')
    token = recorded['context']['auth_token']
    assert token and token in json.dumps(
        recorded['notifications']['both']['sent'])
    nova_notifications('both')
    assert token not in json.dumps(_send(recorded))


def test_the_payload_follows_the_spec(nova_notifications):
    """Not a replay of the fixture: change the request, the payloads
    change with it."""
    recorded = _fixture('spec_full')
    data = recorded['spec']['nova_object.data']
    data['flavor']['nova_object.data']['memory_mb'] = 65536
    data['force_hosts'] = None
    data['image']['nova_object.data']['properties']['nova_object.data'] = {
        'hw_video_model': 'virtio'}
    data['security_groups']['nova_object.data']['objects'] = []
    nova_notifications('both')
    legacy, versioned = [item['message']['payload']
                         for item in _send(recorded, ['start'])]
    payload = versioned['nova_object.data']
    assert payload['flavor']['nova_object.data']['memory_mb'] == 65536
    assert payload['force_hosts'] is None
    assert payload['image']['nova_object.data']['properties'][
        'nova_object.data'] == {'hw_video_model': 'virtio'}
    assert payload['security_groups'] == []
    assert legacy['request_spec']['instance_type']['memory_mb'] == 65536
    assert legacy['request_spec']['instance_properties'][
        'memory_mb'] == 65536


def test_nothing_is_sent_while_notifications_are_off(config):
    notifications.cleanup()
    _impl_test.reset()
    recorded = _fixture('spec_full')
    nova_mode.select_destinations(recorded['context'], recorded['spec'],
                                  'start')
    assert _impl_test.NOTIFICATIONS == []


@pytest.mark.parametrize('spec, phase, says', [
    ({'nova_object.name': 'Instance', 'nova_object.namespace': 'nova',
      'nova_object.data': {}}, 'start', "expected a Nova RequestSpec"),
    ({'flavor': {}}, 'start', 'expected a Nova RequestSpec object '
     'primitive, got dict'),
    (None, 'end', 'got NoneType'),
])
def test_a_bad_spec_is_logged_never_raised(nova_notifications, caplog,
                                           spec, phase, says):
    nova_notifications('both')
    with caplog.at_level(logging.ERROR):
        nova_mode.select_destinations({}, spec, phase, host='h1')
    assert says in caplog.text
    assert _send({'context': {}, 'spec': None, 'host': 'h1'}, []) == []
    with pytest.raises(exception.InvalidRequest, match=says):
        nova_mode.build({}, spec, phase)


def test_a_bad_nested_object_is_named(nova_notifications):
    spec = _fixture('spec_numa_pci')['spec']
    spec['nova_object.data']['pci_requests']['nova_object.data'][
        'requests'][0]['nova_object.name'] = 'PciDevice'
    with pytest.raises(exception.InvalidRequest,
                       match='request_spec.pci_requests.requests: expected '
                       "a Nova InstancePCIRequest object, got 'PciDevice'"):
        nova_payloads.request_spec_payload(spec)


def test_an_unknown_phase_is_refused(nova_notifications, caplog):
    nova_notifications('versioned')
    with pytest.raises(ValueError, match='phase must be one of start, end'):
        nova_mode.build({}, _fixture('spec_full')['spec'], 'error')
    nova_mode.select_destinations({}, _fixture('spec_full')['spec'],
                                  'error', host='h1')
    assert 'phase must be one of' in caplog.text


def test_the_notifications_options_are_novas():
    """Every ``[notifications]`` option of Nova 34 is read by Gantt under
    the same names (deprecated ones too), with Nova's default and
    choices, so a nova.conf means the same to both."""
    from scheduler.conf import notifications as notifications_conf
    with open(FIXTURES / 'notification_options.json') as stream:
        novas = json.load(stream)
    gantts = {opt.dest: opt for opt in notifications_conf.notifications_opts}
    for name, nova_opt in novas.items():
        assert name in gantts, name
        opt = gantts[name]
        choices = getattr(opt.type, 'choices', None)
        assert {
            'default': opt.default,
            'choices': list(choices) if choices else None,
            'deprecated': sorted([old.group or 'notifications',
                                  old.name or opt.dest]
                                 for old in opt.deprecated_opts),
        } == nova_opt, name


def test_required_aggregates_add_up_as_novas():
    spec = _fixture('spec_numa_pci')['spec']
    before = copy.deepcopy(spec)
    changed = nova_mode.require_aggregates(spec, ['agg-3'])
    assert spec == before
    destination = changed['nova_object.data']['requested_destination']
    assert destination['nova_object.data']['aggregates'] == [
        'agg-1,agg-2', 'agg-3']
    assert destination['nova_object.data']['host'] == 'cmp-7'
    fresh = nova_mode.require_aggregates(
        _fixture('spec_sparse')['spec'], ['a', 'b'])
    payload = nova_payloads.request_spec_payload(fresh)
    assert payload['nova_object.data']['requested_destination'][
        'nova_object.data'] == {'host': 'cmp-2', 'aggregates': ['a,b']}


@pytest.mark.parametrize('garbage', [None, 42, 'text', [], {}, [42],
                                     {'nova_object.data': 1}])
def test_garbage_in_any_field_never_reaches_the_request(
        nova_notifications, caplog, garbage):
    """Whatever a field of the spec holds, the request goes on: the
    notification is built, or logged as not built."""
    nova_notifications('both')
    recorded = _fixture('spec_numa_pci')
    for name in list(recorded['spec']['nova_object.data']):
        spec = copy.deepcopy(recorded['spec'])
        spec['nova_object.data'][name] = garbage
        for phase in ('start', 'end'):
            nova_mode.select_destinations(recorded['context'], spec, phase,
                                          host='h1')
    notifications.flush()
    if garbage is not None:
        assert ('request_spec.flavor: expected a Nova Flavor object'
                in caplog.text)
