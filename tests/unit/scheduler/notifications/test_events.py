"""Which notifications a real in-process cluster sends (conductor,
scheduler and computes over ``fake://``, SQLite), read from oslo.messaging's
``test`` notification driver."""

import threading

import pytest

from scheduler import exception
from scheduler import notifications
from scheduler import reports
from scheduler.objects import request_spec
from tests.unit.conductor import move_checks as checks
from tests.unit import inprocess
from tests.unit.scheduler.notifications import recorder

SMALL, BIG = checks.SMALL, checks.BIG


@pytest.fixture
def cluster_config(database, config):
    return inprocess.configure(config, exact_ratios=True)


def _only(event_type, versioned=True):
    found = recorder.sent(event_type, versioned=versioned)
    assert len(found) == 1, (event_type, recorder.event_types(versioned))
    return found[0]


def test_nothing_is_sent_without_a_driver(cluster_config):
    recorder.reset()
    notifications.init(inprocess.CONF)
    assert not notifications.enabled()
    with inprocess.Cluster({'h1': SMALL}) as cluster:
        checks.boot_one(cluster)
    assert recorder.sent() == []


def test_a_build_sends_select_destinations_and_instance_create(
        cluster_config):
    recorder.enable(cluster_config, 'both')
    with inprocess.Cluster({'h1': SMALL}) as cluster:
        uuid = checks.boot_one(cluster, project_id='p1', user_id='u1')
    types = recorder.event_types(versioned=True)
    assert types.index('scheduler.select_destinations.start') < \
        types.index('scheduler.select_destinations.end') < \
        types.index('instance.create.end')
    _priority, start = _only('scheduler.select_destinations.start')
    assert start['publisher_id'] == 'gantt-scheduler:' + inprocess.CONF.host
    spec = recorder.data(start)
    assert (spec['project_id'], spec['num_instances'],
            spec['flavor']['nova_object.data']['memory_mb']) == (
                'p1', 1, checks.FLAVOR['memory_mb'])
    _priority, created = _only('instance.create.end')
    assert created['publisher_id'] == 'gantt-compute:h1'
    assert created['payload']['nova_object.name'] == 'InstanceCreatePayload'
    data = recorder.data(created)
    assert (data['uuid'], data['host'], data['node'], data['state'],
            data['tenant_id'], data['fault']) == (
                uuid, 'h1', 'h1', 'active', 'p1', None)
    assert data['launched_at'] is not None
    _only('instance.create.start')
    # The legacy ones, under the same names, plain dicts.
    _priority, legacy = _only('scheduler.select_destinations.start',
                              versioned=False)
    assert legacy['payload']['request_spec']['flavor']['memory_mb'] == \
        checks.FLAVOR['memory_mb']
    _priority, legacy = _only('instance.create.end', versioned=False)
    assert (legacy['payload']['instance_id'],
            legacy['payload']['instance_type']['vcpus']) == (uuid, 1)
    # Every service's first heartbeat registered it.
    registered = {(recorder.data(message)['binary'],
                   recorder.data(message)['host'])
                  for _p, message in recorder.sent('service.create',
                                                   versioned=True)}
    assert {('gantt-compute', 'h1'), ('gantt-conductor', 'conductor'),
            ('gantt-scheduler', 'scheduler')} <= registered


def test_no_valid_host_sends_build_instances_error_with_the_reason(
        cluster_config):
    recorder.enable(cluster_config, 'both')
    with inprocess.Cluster({'h1': SMALL}) as cluster:
        [uuid] = cluster.boot(vcpus=1, memory_mb=10 ** 6, root_gb=1)
        row = cluster.wait_built([uuid])[uuid]
    assert row.vm_state == 'error'
    priority, message = _only('compute_task.build_instances.error')
    assert (priority, message['publisher_id']) == (
        'ERROR', 'gantt-conductor:' + inprocess.CONF.host)
    data = recorder.data(message)
    reason = data['reason']['nova_object.data']
    assert (data['instance_uuid'], data['state'], reason['exception'],
            reason['function_name']) == (uuid, 'error', 'NoValidHost',
                                         'build_instances')
    assert 'RamFilter' in reason['exception_message']
    assert data['request_spec']['nova_object.data']['instance_uuid'] == uuid
    # No .end for a request that found no host, as Nova.
    assert recorder.sent('scheduler.select_destinations.end') == []
    _only('scheduler.select_destinations.start')
    priority, legacy = _only('compute_task.build_instances', versioned=False)
    assert priority == 'ERROR'
    assert (legacy['payload']['instance_id'], legacy['payload']['method'],
            legacy['payload']['state']) == (uuid, 'build_instances', 'error')
    assert 'RamFilter' in legacy['payload']['reason']


def test_migrate_sends_resize_start_and_end(cluster_config):
    recorder.enable(cluster_config, 'versioned')
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        checks.api().migrate_server(checks.ctxt(), uuid)
        checks.api().confirm_resize(checks.ctxt(), uuid)
    _priority, start = _only('instance.resize.start')
    _priority, end = _only('instance.resize.end')
    assert (recorder.data(start)['host'], recorder.data(start)['task_state'],
            recorder.data(end)['host'], recorder.data(end)['state']) == (
                'h1', 'resize_prep', 'h2', 'resized')
    assert start['publisher_id'].startswith('gantt-conductor:')
    _only('instance.resize_confirm.start')
    _only('instance.resize_confirm.end')
    # Versioned only: no legacy notification at all.
    assert recorder.sent(versioned=False) == []


def test_a_resize_without_a_host_sends_error_and_migrate_server_error(
        cluster_config):
    recorder.enable(cluster_config, 'versioned')
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        with pytest.raises(exception.NoValidHost):
            checks.api().migrate_server(
                checks.ctxt(), uuid, flavor=request_spec.Flavor(
                    vcpus=2, memory_mb=32768, root_gb=20))
    _only('instance.resize.start')
    assert recorder.sent('instance.resize.end') == []
    priority, error = _only('instance.resize.error')
    assert priority == 'ERROR'
    fault = recorder.data(error)['fault']['nova_object.data']
    assert fault['exception'] == 'NoValidHost'
    priority, task = _only('compute_task.migrate_server.error')
    data = recorder.data(task)
    assert (priority, data['instance_uuid'], data['state']) == (
        'ERROR', uuid, 'active')
    assert 'RamFilter' in data['reason']['nova_object.data'][
        'exception_message']


def test_the_guru_meditation_report_counts_what_waits(config):
    assert 'notifications waiting to be sent' not in \
        reports._gantt_section().data
    recorder.enable(config, 'versioned')
    section = reports._gantt_section().data
    assert section['notifications waiting to be sent'] == 0

    class SlowBroker:
        """A notifier whose broker takes each notification only when
        the test lets it."""
        def __init__(self):
            self.go = threading.Event()
            self.taken = []

        def info(self, ctxt, event_type, payload):
            self.go.wait(10)
            self.taken.append(event_type)

    broker = SlowBroker()
    sender = notifications._state['sender']
    for number in range(3):
        sender.put(broker, 'info', None, 'test.event.%d' % number, {})
    # One in the broker's hands, two queued: all three wait.
    assert reports._gantt_section().data[
        'notifications waiting to be sent'] == 3
    broker.go.set()
    assert sender.flush(10)
    assert broker.taken == ['test.event.0', 'test.event.1', 'test.event.2']
    assert reports._gantt_section().data[
        'notifications waiting to be sent'] == 0
