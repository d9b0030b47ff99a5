"""Nova mode's select_destinations notifications over the real RabbitMQ
(a virtual host of the test's own, deleted afterwards): an oslo.messaging
notification listener, as Ceilometer would run one on Nova's exchange,
receives the versioned and the legacy notifications with Nova's event
types, publishers and payloads. And a broker that is not there costs a
request nothing."""

import json
import pathlib
import socket
import threading
import time

import oslo_messaging as messaging
import pytest

from scheduler import config as gantt_config
from scheduler import conf
from scheduler import notifications
from scheduler.notifications import nova_mode
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

CONF = conf.CONF
FIXTURE = (pathlib.Path(__file__).parents[1] / 'unit' / 'notifications' /
           'fixtures' / 'nova' / 'spec_numa_pci.json')
HOST = 'gantt-nova-sched-1'


class Collector:
    def __init__(self):
        self.messages = []
        self.lock = threading.Lock()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        with self.lock:
            self.messages.append((ctxt, publisher_id, event_type, payload))
        return messaging.NotificationResult.HANDLED

    def count(self):
        with self.lock:
            return len(self.messages)


def _recorded():
    with open(FIXTURE) as stream:
        return json.load(stream)


def _nova_mode_conf(config, url, **options):
    gantt_config.register_opts()
    notifications.register_opts(CONF)
    # Nova's control exchange: where Nova's notifications are read from.
    config.config(control_exchange='nova', transport_url=url)
    config.config(driver=['messagingv2'], retry=options.pop('retry', -1),
                  group='oslo_messaging_notifications')
    config.config(notification_format='both', group='notifications')


def test_a_listener_on_novas_exchange_hears_nova_mode(config):
    recorded = _recorded()
    with cluster_mod.vhost() as url:
        _nova_mode_conf(config, url)
        transport = messaging.get_notification_transport(CONF, url=url)
        collector = Collector()
        listener = messaging.get_notification_listener(
            transport,
            [messaging.Target(topic='versioned_notifications',
                              exchange='nova'),
             messaging.Target(topic='notifications', exchange='nova')],
            [collector], executor='threading')
        listener.start()
        try:
            assert notifications.init(CONF)
            for phase in ('start', 'end'):
                nova_mode.select_destinations(
                    recorded['context'], recorded['spec'], phase, host=HOST)
            assert notifications.flush(10)
            deadline = time.monotonic() + 30
            while collector.count() < 4 and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            notifications.cleanup()
            listener.stop()
            listener.wait()
            transport.cleanup()
    heard = sorted((publisher, event_type) for _ctxt, publisher, event_type,
                   _payload in collector.messages)
    assert heard == sorted(
        (publisher % HOST, 'scheduler.select_destinations.' + phase)
        for publisher in ('nova-scheduler:%s', 'scheduler.%s')
        for phase in ('start', 'end'))
    for ctxt, publisher, event_type, payload in collector.messages:
        assert ctxt['request_id'] == recorded['context']['request_id']
        assert ctxt['auth_token'] is None
        if publisher.startswith('nova-scheduler:'):
            assert (payload['nova_object.name'],
                    payload['nova_object.namespace'],
                    payload['nova_object.version']) == (
                        'RequestSpecPayload', 'nova', '1.1')
            data = payload['nova_object.data']
            assert data['requested_destination']['nova_object.data'][
                'host'] == 'cmp-7'
            assert data['pci_requests']['nova_object.data'][
                'requests'][0]['nova_object.data']['alias_name'] == 'a1'
        else:
            legacy = payload['request_spec']
            assert legacy['num_instances'] == 2
            assert legacy['instance_type']['name'] == 'numa.2'


def test_a_broker_that_is_away_costs_the_request_nothing(config):
    """Nothing listens on the port: the calls return at once, never
    raise, and the notifications are given up at the stop."""
    recorded = _recorded()
    url = 'rabbit://guest:guest@127.0.0.1:%d/' % _closed_port()
    _nova_mode_conf(config, url, retry=0)
    assert notifications.init(CONF)
    try:
        started = time.monotonic()
        for phase in ('start', 'end'):
            nova_mode.select_destinations(recorded['context'],
                                          recorded['spec'], phase, host=HOST)
        assert time.monotonic() - started < 1.0
    finally:
        notifications.cleanup(timeout=10)
    assert notifications.pending() == 0


def _closed_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]
