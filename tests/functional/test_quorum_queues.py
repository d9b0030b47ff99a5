"""Classic queues where rabbit_quorum_queue asks for quorum ones, found
through AMQP on the shared broker (a vhost of the test's own): by the
daemons' start-up check (test_startup_errors has the daemon's line) and
by ``gantt-status upgrade check``."""

import kombu
import pytest

from scheduler.cmd import status
from scheduler import config as gantt_config
from scheduler import exception
from scheduler import quorum_queues
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional


@pytest.fixture
def broker(config):
    """A vhost with a classic ``scheduler`` queue and a quorum
    ``conductor`` one; ``rabbit_quorum_queue`` on. Yields its URL."""
    with cluster_mod.vhost() as url:
        with kombu.Connection(url.replace('rabbit://', 'amqp://', 1)) as c:
            channel = c.channel()
            channel.queue_declare(queue='scheduler', durable=False,
                                  auto_delete=False)
            channel.queue_declare(queue='conductor', durable=True,
                                  auto_delete=False,
                                  arguments={'x-queue-type': 'quorum'})
            channel.close()
        gantt_config.register_opts()
        assert quorum_queues.enabled(config.conf) is False
        config.config(transport_url=url)
        config.config(rabbit_quorum_queue=True,
                      group='oslo_messaging_rabbit')
        yield url


def test_only_the_classic_queue_is_found(broker, config):
    found = quorum_queues.classic_queues(
        config.conf, broker, ['scheduler', 'conductor', 'compute',
                              'scheduler.h1'])
    assert [queue for queue, _refusal in found] == ['scheduler']
    assert 'PRECONDITION_FAILED' in found[0][1]
    # Asking created nothing.
    assert quorum_queues.classic_queues(config.conf, broker,
                                        ['compute']) == []


def test_the_start_up_check_names_the_queue_and_what_to_do(broker, config):
    vhost = broker.rsplit('/', 1)[1]
    quorum_queues.check(config.conf, broker, ['conductor', 'conductor.h1'])
    with pytest.raises(exception.ConfigError) as caught:
        quorum_queues.check(config.conf, broker, ['scheduler',
                                                  'scheduler.h1'])
    message = str(caught.value)
    assert message.startswith(
        "Configuration error: [oslo_messaging_rabbit] rabbit_quorum_queue "
        "is on, but queue 'scheduler' on rabbit://guest:***@127.0.0.1:5672/"
        "%s is a classic queue (Queue.declare: (406) PRECONDITION_FAILED"
        % vhost), message
    assert ('rabbitmqctl delete_queue --vhost %s scheduler' % vhost
            in message)
    assert 'guest:guest' not in message


def test_the_upgrade_check_fails_on_the_classic_queue(broker, config):
    result = status.quorum_queues_result(config.conf)
    assert result.code == status.Code.FAILURE
    assert result.details.startswith(
        '[oslo_messaging_rabbit] rabbit_quorum_queue is on, but classic '
        'queues exist on rabbit://guest:***@127.0.0.1:5672/%s: scheduler. '
        'RabbitMQ cannot turn a classic queue into a quorum queue'
        % broker.rsplit('/', 1)[1]), result.details
    config.config(rabbit_quorum_queue=False, group='oslo_messaging_rabbit')
    assert status.quorum_queues_result(config.conf).code == \
        status.Code.SUCCESS
