"""Classic queues where ``rabbit_quorum_queue`` wants quorum ones.

RabbitMQ cannot change the type of a queue. With
``[oslo_messaging_rabbit] rabbit_quorum_queue = true`` oslo.messaging
declares its RPC queues as quorum queues; where a queue of that name
already exists as a classic queue (the services ran before the option was
set), the broker refuses the declaration (PRECONDITION_FAILED,
"inequivalent arg 'x-queue-type'") and the RPC server cannot start: a
daemon's workers died and were started again, forever. :func:`check`
asks the broker about the queues a daemon will consume from, before it
serves, and raises one ConfigError naming the queue and what to do::

    quorum_queues.check(CONF, CONF.transport_url, ['scheduler',
                                                   'scheduler.host1'])

``gantt-status upgrade check`` asks the same of every Gantt topic
(:func:`classic_queues`).

The broker is asked through AMQP (the management API may not be there):
a passive declaration says whether the queue exists; for one that does,
a declaration as a durable quorum queue either matches it (it is a
quorum queue) or is refused with PRECONDITION_FAILED (it is not).
"""

from amqp import exceptions as amqp_exceptions
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts
from oslo_messaging._drivers import impl_rabbit

from scheduler import config
from scheduler import exception

GROUP = 'oslo_messaging_rabbit'
OPTION = '[%s] rabbit_quorum_queue' % GROUP
_RABBIT = ('rabbit', 'kombu')


def enabled(conf):
    """Whether ``rabbit_quorum_queue`` is set (its group registered here
    if no transport did it yet)."""
    for group, opts in messaging_opts.list_opts():
        if group == GROUP:
            conf.register_opts(opts, group=GROUP)
    return bool(conf[GROUP].rabbit_quorum_queue)


def _queue_type_refusal(connection, queue):
    """None if ``queue`` is absent or a quorum queue; else the broker's
    refusal of it as a quorum queue. Each declaration has a channel of
    its own: the broker closes the channel of a refused one."""
    channel = connection.channel()
    try:
        channel.queue_declare(queue=queue, passive=True)
    except amqp_exceptions.NotFound:
        return None
    finally:
        _close(channel)
    channel = connection.channel()
    try:
        # The queue exists: this cannot create one.
        channel.queue_declare(queue=queue, durable=True, auto_delete=False,
                              arguments={'x-queue-type': 'quorum'})
    except amqp_exceptions.PreconditionFailed as error:
        return str(error)
    finally:
        _close(channel)
    return None


def _close(channel):
    try:
        channel.close()
    except Exception:
        pass   # already closed by the broker


def classic_queues(conf, url, queues):
    """``[(queue, the broker's words)]``: those of ``queues`` that exist
    on the broker at ``url`` but are not quorum queues."""
    parsed = messaging.TransportURL.parse(conf, url)
    # The parameters of the driver's own connection (TLS and the other
    # options, as the daemons connect), on a kombu connection of this
    # thread's alone: the driver's has a heartbeat thread reading it.
    driver_connection = impl_rabbit.Connection(conf, parsed, 'send',
                                               retry=1)
    try:
        connection = driver_connection.connection.clone()
    finally:
        driver_connection.close()
    try:
        connection.ensure_connection(max_retries=1)
        found = []
        for queue in queues:
            refusal = _queue_type_refusal(connection, queue)
            if refusal is not None:
                found.append((queue, refusal))
        return found
    finally:
        connection.release()


def advice(url, queue):
    """What to do about ``queue``, a classic queue on the broker at
    ``url``."""
    vhost = messaging.TransportURL.parse(config.CONF, url).virtual_host
    return ("RabbitMQ cannot turn a classic queue into a quorum queue: "
            "stop the services of that topic and delete it (rabbitmqctl "
            "delete_queue --vhost %s %s), use a new vhost, or set %s = "
            "false" % (vhost or '/', queue, OPTION))


def check(conf, url, queues):
    """Raise ConfigError if ``rabbit_quorum_queue`` is on and one of
    ``queues`` exists as a classic queue on the broker at ``url``."""
    if not url or not enabled(conf):
        return
    if messaging.TransportURL.parse(conf, url).transport not in _RABBIT:
        return
    found = classic_queues(conf, url, queues)
    if found:
        queue, refusal = found[0]
        raise exception.ConfigError(reason=(
            "%s is on, but queue %r on %s is a classic queue (%s); %s" % (
                OPTION, queue, config.redact_transport_url(url), refusal,
                advice(url, queue))))
