"""Each service with a RabbitMQ user of its own and least privileges.

A private node of ``tests.fixtures.rabbitmq`` gets a vhost and one user
per service, with the permissions :mod:`scheduler.broker_permissions`
gives (what ``docs/source/admin/securing-the-broker.rst`` tells
operators to set). A boot goes through scheduler, conductor and compute
under them; then the compute's and the scheduler's credentials try what
their services never need, straight over AMQP: the broker refuses what
its permissions can express, and the scheduler drops what came by a way
the broker cannot narrow (the default exchange, the fanout).
"""

import json
import uuid

import amqp
from amqp import exceptions as amqp_exceptions
from oslo_log import _options as log_options
import pytest

from scheduler import broker_permissions
from tests.fixtures import rabbitmq
from tests.functional import boot_scenario
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

VHOST = 'gantt'
EXCHANGE = 'gantt'
# Notifications on, the computes' fanouts on, and the RPC server's line
# for each request it dispatches ("Receive incoming message with id ...
# and method: ...") logged.
NOTIFICATIONS = (
    '[DEFAULT]\ndefault_log_levels = %s\n'
    '[oslo_messaging_notifications]\ndriver = messagingv2\n'
    '[notifications]\nnotification_format = both\n'
    '[filter_scheduler]\ntrack_instance_changes = true\n') % ','.join(
        log_options.DEFAULT_LOG_LEVELS + ['oslo_messaging.rpc.server=DEBUG'])
DISPATCHED = 'and method: %s.'


def password(user):
    return 'pw-%s' % user


def add_service_users(node, vhost=VHOST):
    """A user per service (named after its binary) with its
    permissions on ``vhost`` (made here)."""
    node.ctl('add_vhost', vhost)
    for binary in broker_permissions.ROLES:
        node.ctl('add_user', binary, password(binary))
        perms = broker_permissions.for_service(binary, EXCHANGE)
        node.ctl('set_permissions', '-p', vhost, binary, perms.configure,
                 perms.write, perms.read)
        node.ctl('set_topic_permissions', '-p', vhost, binary, EXCHANGE,
                 perms.topic_write, perms.topic_read)


def url_of(node, user):
    return 'rabbit://%s:%s@127.0.0.1:%d/%s' % (user, password(user),
                                               node.port, VHOST)


def service_conf(node, user):
    return '[DEFAULT]\ntransport_url = %s\n' % url_of(node, user)


@pytest.fixture(scope='module')
def least_privileged(tmp_path_factory):
    """A booted cluster, each service with its own user: ``(node,
    cluster, servers' uuids)``."""
    base = tmp_path_factory.mktemp('broker-perms')
    with rabbitmq.node(base) as node:
        add_service_users(node)
        (base / 'cluster').mkdir()
        with cluster_mod.Cluster(
                base / 'cluster', 'sqlite',
                transport_url=url_of(node, 'gantt-manage'),
                extra_conf=NOTIFICATIONS) as c:
            c.start_conductor_with_conf(extra_conf=service_conf(
                node, 'gantt-conductor'))
            c.start_compute('cmp1', vcpus=4, memory_mb=4096, local_gb=40,
                            extra_conf=service_conf(node, 'gantt-compute'))
            c.start_scheduler(extra_conf=service_conf(node,
                                                      'gantt-scheduler'))
            c.wait_for_computes(['cmp1'])
            c.discover_hosts()
            uuids = boot_scenario.create(c, '--vcpus', '1', '--ram', '512',
                                         '--disk', '1', '--count', '2')
            yield node, c, uuids


def test_a_boot_goes_through_with_a_user_per_service(least_privileged):
    node, c, uuids = least_privileged
    rows = boot_scenario.servers(c, uuids)
    assert [row.vm_state for row in rows] == ['active', 'active'], rows
    assert {row.host for row in rows} == {'cmp1'}
    # gantt-manage's fanout to the schedulers is allowed too.
    c.manage('aggregate', 'create', 'rack1')
    c.manage('aggregate', 'add-host', 'rack1', 'cmp1')
    users = set(node.ctl('list_connections', 'user').stdout.split())
    assert {'gantt-scheduler', 'gantt-conductor',
            'gantt-compute'} <= users, users
    # Notifications wait in their queues for a reader.
    queues = dict(line.split('\t') for line in node.ctl(
        'list_queues', '-p', VHOST, '--no-table-headers', 'name',
        'messages').stdout.splitlines())
    assert int(queues['versioned_notifications.info']) > 0, queues
    # The compute's and gantt-manage's fanouts reached the scheduler.
    c.wait_until(lambda: DISPATCHED % 'update_aggregates' in scheduler_log(
        c), 15, 'the aggregate fanout')
    assert DISPATCHED % 'update_instance_info' in scheduler_log(c)
    assert DISPATCHED % 'select_destinations' in scheduler_log(c)
    for name, text in c.logs().items():
        assert 'ACCESS_REFUSED' not in text, (name, text[-3000:])
        assert 'Refused RPC request' not in text, name


def connect(node, user):
    """An AMQP connection as ``user``; its publishes wait for the
    broker's confirmation (or refusal)."""
    connection = amqp.Connection('127.0.0.1:%d' % node.port, userid=user,
                                 password=password(user),
                                 virtual_host=VHOST, connect_timeout=10,
                                 confirm_publish=True)
    connection.connect()
    return connection


def publish(node, user, exchange, routing_key, method='select_destinations'):
    """Publish an oslo.messaging RPC request for ``method`` as ``user``,
    with publisher confirms: raises the broker's refusal."""
    body = {'method': method, 'args': {}, 'version': '1.1',
            'namespace': None, '_unique_id': uuid.uuid4().hex}
    message = amqp.Message(json.dumps({'oslo.version': '2.0',
                                       'oslo.message': json.dumps(body)}),
                           content_type='application/json')
    connection = connect(node, user)
    try:
        channel = connection.channel()
        channel.basic_publish(message, exchange=exchange,
                              routing_key=routing_key)
    finally:
        try:
            connection.close()
        except Exception:
            pass


def refused(call, *args):
    with pytest.raises(amqp_exceptions.AccessRefused) as caught:
        call(*args)
    return str(caught.value)


def scheduler_log(c):
    return c.logs()['scheduler']


@pytest.mark.parametrize('exchange,key', [
    (EXCHANGE, 'scheduler'), (EXCHANGE, 'scheduler.scheduler')])
def test_a_compute_cannot_publish_to_the_scheduler_topic(least_privileged,
                                                         exchange, key):
    node, c, _uuids = least_privileged
    message = refused(publish, node, 'gantt-compute', exchange, key)
    assert ("ACCESS_REFUSED - access to topic '%s' in exchange '%s' in "
            "vhost '%s' refused for user 'gantt-compute'" % (
                key, exchange, VHOST) in message), message


def test_the_scheduler_cannot_publish_to_computes(least_privileged):
    node, c, _uuids = least_privileged
    message = refused(publish, node, 'gantt-scheduler', EXCHANGE,
                      'compute.cmp1', 'build_and_run_instance')
    assert "topic 'compute.cmp1'" in message, message
    message = refused(publish, node, 'gantt-scheduler', 'compute_fanout',
                      '', 'build_and_run_instance')
    assert "exchange 'compute_fanout'" in message, message


def declare_and_bind(node, user, queue, exchange, key):
    connection = connect(node, user)
    try:
        channel = connection.channel()
        channel.queue_declare(queue, auto_delete=True)
        channel.queue_bind(queue, exchange, key)
    finally:
        try:
            connection.close()
        except Exception:
            pass


def test_a_compute_cannot_read_the_scheduler_requests(least_privileged):
    node, c, _uuids = least_privileged
    connection = connect(node, 'gantt-compute')
    try:
        with pytest.raises(amqp_exceptions.AccessRefused) as caught:
            connection.channel().basic_consume('scheduler')
    finally:
        try:
            connection.close()
        except Exception:
            pass
    assert "queue 'scheduler'" in str(caught.value)
    # Nor bind a queue of its own to the scheduler's routing key.
    message = refused(declare_and_bind, node, 'gantt-compute',
                      'compute.eavesdrop', EXCHANGE, 'scheduler')
    assert "access to topic 'scheduler' in exchange 'gantt'" in message, \
        message


def wait_for_log(c, text, timeout=15):
    c.wait_until(lambda: text in scheduler_log(c), timeout,
                 'the scheduler to log %r' % text)


def test_the_scheduler_drops_what_bypasses_the_control_exchange(
        least_privileged):
    """What the broker lets through, the scheduler refuses: a request put
    straight into its queue through the default exchange, and a
    select_destinations sent through its fanout."""
    node, c, _uuids = least_privileged
    before = scheduler_log(c)
    publish(node, 'gantt-compute', '', 'scheduler')
    wait_for_log(c, 'Refused RPC request select_destinations: it came '
                 'through exchange amq.default, not the control exchange '
                 'gantt')
    publish(node, 'gantt-compute', 'scheduler_fanout', '')
    wait_for_log(c, 'Refused RPC request select_destinations: '
                 'select_destinations is not a fanout method of topic '
                 'scheduler')
    # A fanout method from a compute is still heard.
    publish(node, 'gantt-compute', 'scheduler_fanout', '',
            'sync_instance_info')
    c.wait_until(lambda: DISPATCHED % 'sync_instance_info' in scheduler_log(
        c)[len(before):], 15, 'the scheduler to take sync_instance_info')
    new = scheduler_log(c)[len(before):]
    assert new.count('Refused RPC request') == 2, new
    # select_destinations never ran for them.
    assert DISPATCHED % 'select_destinations' not in new, new
