"""The least RabbitMQ permissions of each service, as regexes: what
each must match and must not (the functional tests run them on a
broker: tests/functional/test_broker_permissions.py)."""

import re

import pytest

from scheduler import broker_permissions
from scheduler import rpcapi as scheduler_rpcapi
from scheduler import manager as scheduler_manager


def matches(pattern, name):
    return re.search(pattern, name) is not None


@pytest.mark.parametrize('binary,allowed,refused', [
    ('gantt-compute', ['conductor', 'gantt-broker-probe',
                       'versioned_notifications.info'],
     ['scheduler', 'scheduler.h1', 'compute.h1', 'conductor.c1',
      'conductorx', 'notifications.info.x']),
    ('gantt-scheduler', ['gantt-broker-probe', 'notifications.error'],
     ['compute.h1', 'compute', 'conductor', 'scheduler']),
    ('gantt-conductor', ['scheduler', 'compute.h1', 'notifications.info'],
     ['compute', 'conductor', 'scheduler.s1']),
    ('gantt-manage', ['conductor', 'notifications.info'],
     ['scheduler', 'compute.h1']),
])
def test_routing_keys_each_service_may_publish(binary, allowed, refused):
    topic_write = broker_permissions.for_service(binary).topic_write
    for key in allowed:
        assert matches(topic_write, key), (binary, key)
    for key in refused:
        assert not matches(topic_write, key), (binary, key)


def test_only_those_who_answer_calls_write_to_the_default_exchange():
    for binary, role in broker_permissions.ROLES.items():
        write = broker_permissions.for_service(binary).write
        assert matches(write, 'amq.default') == role.replies, binary
    assert not broker_permissions.ROLES['gantt-manage'].replies


def test_a_service_reads_and_binds_only_its_own_topic():
    perms = broker_permissions.for_service('gantt-compute')
    for queue in ('compute', 'compute.h1', 'compute_fanout_ab12',
                  'reply_0c37'):
        assert matches(perms.read, queue), queue
    for queue in ('scheduler', 'conductor', 'scheduler_fanout_ab12',
                  'notifications.info'):
        assert not matches(perms.read, queue), queue
    assert matches(perms.topic_read, 'compute.h1')
    assert not matches(perms.topic_read, 'scheduler')
    # It may declare (and so delete) no other service's queue.
    assert not matches(perms.configure, 'scheduler')
    assert matches(perms.configure, 'scheduler_fanout')   # the exchange
    assert not matches(perms.configure, 'scheduler_fanout_ab12')


def test_the_control_exchange_is_escaped():
    perms = broker_permissions.for_service('gantt-scheduler', 'nova.x')
    assert matches(perms.write, 'nova.x')
    assert not matches(perms.write, 'novaXx')


def test_without_notifications_no_notification_queue():
    perms = broker_permissions.for_service('gantt-manage',
                                           notification_topics=())
    assert not matches(perms.configure, 'notifications.info')
    assert perms.read == '^(reply_.*)$'
    assert perms.topic_read == broker_permissions.NOTHING


def test_an_unknown_service_is_named():
    with pytest.raises(ValueError, match="unknown service 'gantt-api': "
                       "one of gantt-compute, "):
        broker_permissions.for_service('gantt-api')


def test_the_commands_name_each_user_once_per_kind():
    lines = broker_permissions.rabbitmqctl_lines(
        "/it's", users={'gantt-compute': 'compute'})
    assert len(lines) == 2 * len(broker_permissions.ROLES)
    assert lines[0].startswith(
        "rabbitmqctl set_permissions -p '/it'\\''s' 'compute' '^(")
    assert lines[1].startswith(
        "rabbitmqctl set_topic_permissions -p '/it'\\''s' 'compute' "
        "'gantt' '^(")


def test_the_scheduler_fanout_methods_are_its_fanout_casts():
    manager = scheduler_manager.SchedulerManager
    for method in scheduler_rpcapi.FANOUT_METHODS:
        assert callable(getattr(manager, method)), method
    assert 'select_destinations' not in manager.fanout_methods
