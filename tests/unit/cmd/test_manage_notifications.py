"""gantt-manage's notifications: aggregates, server groups and services
changed from the command line are announced as Nova's API announces them
(read from oslo.messaging's ``test`` driver)."""

from scheduler.db import api as db_api
from scheduler.db import services as db_services
from scheduler import notifications
from tests.unit.scheduler.notifications import recorder


def _versioned(event_type):
    return [recorder.data(message) for _priority, message
            in recorder.sent(event_type, versioned=True)]


def test_aggregate_commands_send_start_and_end(database, config, run):
    recorder.enable(config, 'both')
    with db_api.writer() as session:
        db_services.report_alive(session, 'c1', 'gantt-compute', 'compute')
    assert run('aggregate', 'create', 'rack1', '--availability-zone',
               'az1').code == 0
    assert run('aggregate', 'add-host', 'rack1', 'c1').code == 0
    assert run('aggregate', 'set-metadata', 'rack1', 'ssd=true').code == 0
    [start] = _versioned('aggregate.create.start')
    [end] = _versioned('aggregate.create.end')
    assert (start['name'], start['id'], start['metadata']) == (
        'rack1', None, {'availability_zone': 'az1'})
    assert (end['name'], end['hosts']) == ('rack1', [])
    assert end['id'] is not None and end['uuid'] is not None
    [before] = _versioned('aggregate.add_host.start')
    [after] = _versioned('aggregate.add_host.end')
    assert (before['hosts'], after['hosts']) == ([], ['c1'])
    [after] = _versioned('aggregate.update_metadata.end')
    assert after['metadata'] == {'availability_zone': 'az1', 'ssd': 'true'}
    _priority, message = recorder.sent('aggregate.add_host.end',
                                       versioned=False)[0]
    assert message['payload']['hosts'] == ['c1']
    assert message['publisher_id'].startswith('gantt-manage:')
    # A command that fails sends its start, never an end.
    assert run('aggregate', 'delete', 'rack1').code != 0
    assert len(_versioned('aggregate.delete.start')) == 1
    assert _versioned('aggregate.delete.end') == []
    # The command's notifier is gone with it.
    assert not notifications.enabled()


def test_server_group_create_and_delete(database, config, run):
    recorder.enable(config, 'versioned')
    assert run('server-group', 'create', 'web', 'anti-affinity', '--rule',
               'max_server_per_host=2', '--project', 'p1').code == 0
    assert run('server-group', 'delete', 'web').code == 0
    [created] = _versioned('server_group.create')
    [deleted] = _versioned('server_group.delete')
    assert (created['name'], created['policy'], created['rules'],
            created['project_id']) == ('web', 'anti-affinity',
                                       {'max_server_per_host': '2'}, 'p1')
    assert deleted['uuid'] == created['uuid']


def test_service_disable_and_enable_send_service_update(database, config,
                                                         run):
    recorder.enable(config, 'versioned')
    with db_api.writer() as session:
        db_services.report_alive(session, 'c1', 'gantt-compute', 'compute')
    assert run('service', 'disable', 'c1', '--reason',
               'maintenance').code == 0
    assert run('service', 'enable', 'c1').code == 0
    updates = _versioned('service.update')
    assert [(u['host'], u['binary'], u['disabled'], u['disabled_reason'])
            for u in updates] == [('c1', 'gantt-compute', True, 'maintenance'),
                                  ('c1', 'gantt-compute', False, None)]
