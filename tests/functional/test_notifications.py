"""Notifications off a real RabbitMQ: a conductor, a scheduler and two
computes with ``driver = messagingv2`` and ``notification_format = both``
build servers (and one that fits nowhere) and gantt-manage makes an
aggregate; an oslo.messaging listener in this process reads the
versioned and the legacy notifications from the cluster's vhost and the
test checks their payloads."""

import threading
import time

import oslo_messaging as messaging
import pytest

from scheduler import config as gantt_config
from tests.fixtures import rabbitmq
from tests.functional import boot_scenario
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

HOSTS = {'cmp-1': {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100},
         'cmp-2': {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100}}

NOTIFICATIONS_CONF = '''
[oslo_messaging_notifications]
driver = messagingv2

[notifications]
notification_format = both
'''


class Collector:
    """A notification endpoint keeping what it hears, per topic."""

    def __init__(self):
        self.messages = []
        self.lock = threading.Lock()

    def _keep(self, priority, publisher_id, event_type, payload):
        with self.lock:
            self.messages.append((priority, publisher_id, event_type,
                                  payload))
        return messaging.NotificationResult.HANDLED

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        return self._keep('INFO', publisher_id, event_type, payload)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        return self._keep('ERROR', publisher_id, event_type, payload)

    def of(self, event_type):
        with self.lock:
            return [message for message in self.messages
                    if message[2] == event_type]


@pytest.fixture
def cluster(tmp_path):
    with cluster_mod.Cluster(tmp_path, 'sqlite',
                             extra_conf=NOTIFICATIONS_CONF) as running:
        yield running


@pytest.fixture
def listen(config):
    """Listen to a topic of a cluster's vhost; the Collector."""
    listeners = []
    transports = []

    def start(cluster, topic, url=None):
        gantt_config.register_opts()
        config.config(control_exchange='gantt')
        transport = messaging.get_notification_transport(
            config.conf, url=url or cluster.transport_url)
        transports.append(transport)
        collector = Collector()
        listener = messaging.get_notification_listener(
            transport, [messaging.Target(topic=topic)], [collector],
            executor='threading')
        listener.start()
        listeners.append(listener)
        return collector

    yield start
    for listener in listeners:
        listener.stop()
        listener.wait()
    for transport in transports:
        transport.cleanup()


def test_versioned_and_legacy_notifications_reach_the_broker(cluster,
                                                             listen):
    # Listening first: the queues exist before the daemons send.
    versioned = listen(cluster, 'versioned_notifications')
    legacy = listen(cluster, 'notifications')
    cluster.start_conductor()
    for host, size in HOSTS.items():
        cluster.start_compute(host, **size)
    cluster.start_scheduler()
    cluster.wait_for_computes(list(HOSTS))
    cluster.discover_hosts()

    placed = boot_scenario.create(cluster, '--vcpus', '1', '--ram', '512',
                                  '--disk', '1', '--count', '2')
    (too_big,) = boot_scenario.create(
        cluster, '--vcpus', '1', '--ram', '65536', '--disk', '1',
        expect_rc=1)
    cluster.manage('aggregate', 'create', 'rack1')

    cluster.wait_until(lambda: (
        len(versioned.of('instance.create.end')) == 2
        and versioned.of('compute_task.build_instances.error')
        and versioned.of('aggregate.create.end')
        and legacy.of('compute_task.build_instances')), 30,
        'the notifications')

    # Both requests were announced; only the one that fit ended.
    assert len(versioned.of('scheduler.select_destinations.start')) == 2
    [(priority, publisher, _type, payload)] = versioned.of(
        'scheduler.select_destinations.end')
    assert (priority, publisher.split(':')[0]) == ('INFO', 'gantt-scheduler')
    assert payload['nova_object.name'] == 'RequestSpecPayload'
    assert payload['nova_object.namespace'] == 'gantt'
    assert payload['nova_object.data']['num_instances'] == 2

    created = {message[3]['nova_object.data']['uuid']:
               message for message in versioned.of('instance.create.end')}
    assert set(created) == set(placed)
    for uuid, (priority, publisher, _type, payload) in created.items():
        data = payload['nova_object.data']
        assert publisher == 'gantt-compute:%s' % data['host']
        assert data['host'] in HOSTS and data['state'] == 'active'
        assert data['flavor']['nova_object.data']['memory_mb'] == 512

    [(priority, publisher, _type, payload)] = versioned.of(
        'compute_task.build_instances.error')
    data = payload['nova_object.data']
    reason = data['reason']['nova_object.data']
    assert (priority, publisher.split(':')[0]) == ('ERROR', 'gantt-conductor')
    assert (data['instance_uuid'], data['state'], reason['exception']) == (
        too_big, 'error', 'NoValidHost')
    assert 'RamFilter' in reason['exception_message']
    [(priority, _publisher, _type, payload)] = legacy.of(
        'compute_task.build_instances')
    assert (priority, payload['instance_id'], payload['method']) == (
        'ERROR', too_big, 'build_instances')

    [(_priority, publisher, _type, payload)] = versioned.of(
        'aggregate.create.end')
    assert publisher.split(':')[0] == 'gantt-manage'
    assert payload['nova_object.data']['name'] == 'rack1'
    # The computes registered through the conductor.
    registered = {message[3]['nova_object.data']['host']
                  for message in versioned.of('service.create')
                  if message[3]['nova_object.data']['binary']
                  == 'gantt-compute'}
    assert registered == set(HOSTS)


@pytest.mark.faults
def test_a_notification_broker_outage_blocks_nothing(tmp_path, listen):
    """Notifications go to a RabbitMQ node of the test's own; the RPC
    broker is the shared one. While that node is down servers still build
    at once (what cannot be sent is logged by oslo.messaging, as in Nova);
    once it is back, notifications flow again without a restart."""
    with rabbitmq.node(tmp_path / 'mq') as mq:
        conf = NOTIFICATIONS_CONF.replace(
            'driver = messagingv2', 'driver = messagingv2\ntransport_url = '
            + mq.url).replace('notification_format = both',
                              'notification_format = versioned')
        (tmp_path / 'cloud').mkdir()
        with cluster_mod.Cluster(tmp_path / 'cloud', 'sqlite',
                                 extra_conf=conf) as cluster:
            cluster.start_conductor()
            for host, size in HOSTS.items():
                cluster.start_compute(host, **size)
            cluster.start_scheduler()
            cluster.wait_for_computes(list(HOSTS))
            cluster.discover_hosts()
            boot_scenario.create(cluster, '--vcpus', '1', '--ram', '512',
                                 '--disk', '1')
            mq.stop()
            started = time.monotonic()
            during = boot_scenario.create(cluster, '--vcpus', '1', '--ram',
                                          '512', '--disk', '1', '--count',
                                          '2')
            # As fast as with the broker up: nothing waited on it.
            assert time.monotonic() - started < 20
            assert {row.vm_state for row in boot_scenario.servers(
                cluster, during)} == {'active'}
            mq.start()
            versioned = listen(cluster, 'versioned_notifications',
                               url=mq.url)
            (after,) = boot_scenario.create(cluster, '--vcpus', '1',
                                            '--ram', '512', '--disk', '1')
            cluster.wait_until(
                lambda: after in {
                    message[3]['nova_object.data']['uuid'] for message
                    in versioned.of('instance.create.end')},
                60, 'a notification once the broker is back')
