"""Leaving nothing behind on a real broker: the demo's queues.

Over RabbitMQ (``gantt-demo --transport-url rabbit://...``) every
service the demo starts declares its topic queue (``scheduler``,
``compute``...) and a queue of its own (``compute.demo-host-001``...),
and oslo.messaging declares the topic exchange (``[DEFAULT]
control_exchange``); none of them goes away by itself. When the demo
ends, successfully or not, :func:`remove` deletes them: a queue of the
demo's own hosts once no consumer is on it, a topic queue only when it
is also empty (a real service of the same topic on the same virtual host
keeps its queue and its messages), the exchange only once no queue is
bound to it. The reply and fanout queues, which oslo.messaging deletes
only when they stay unused for ``[oslo_messaging_rabbit]
rabbit_transient_queues_ttl``, expire a second after the demo::

    demo_broker.shorten_transient_queues()    # before rpc.init()
    ...
    left = demo_broker.remove(url, services, exchange)

Its daemons share one process, and so one pool of connections to the
broker, where each would have a pool of its own:
:func:`pool_per_service` makes the shared pool as large as theirs
together, so that none waits for a connection another daemon holds.

Other transports (``fake://``) have nothing to remove.
"""

import amqp.exceptions
import kombu
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts

from scheduler import conf
from scheduler import config
from scheduler import exception

CONF = conf.CONF
RABBIT_GROUP = 'oslo_messaging_rabbit'
# Seconds the reply and fanout queues live unused (RabbitMQ's x-expires).
TRANSIENT_TTL = 1


class DemoBrokerError(exception.GanttException):
    msg_fmt = 'cannot remove the demo\'s queues from %(url)s: %(reason)s'


def shorten_transient_queues():
    """Let the demo's reply and fanout queues expire a second after it."""
    for group, options in messaging_opts.list_opts():
        CONF.register_opts(options, group=group)
    CONF.set_default('rabbit_transient_queues_ttl', TRANSIENT_TTL,
                     group=RABBIT_GROUP)


def pool_per_service(service_count):
    """Size the process's pool of broker connections (``[oslo_messaging_rabbit]
    rpc_conn_pool_size``, after the configuration is read) as
    ``service_count`` daemons' pools: each of the demo's services may
    hold as many connections at once as it would in a process of its
    own. Connections open only as they are needed."""
    per_service = CONF[RABBIT_GROUP].rpc_conn_pool_size
    CONF.set_override('rpc_conn_pool_size', per_service * service_count,
                      group=RABBIT_GROUP)


def queues_of(services):
    """``(own, shared)`` queue names of ``(host, topic)`` pairs: the
    servers' own queues and the topics' queues."""
    own = ['%s.%s' % (topic, host) for host, topic in services]
    shared = sorted({topic for _host, topic in services})
    return own, shared


def _connection(url):
    host = url.hosts[0]
    return kombu.Connection(
        hostname=host.hostname, port=host.port or 5672,
        userid=host.username or 'guest', password=host.password or 'guest',
        virtual_host=url.virtual_host or '/',
        ssl=CONF[RABBIT_GROUP].ssl if RABBIT_GROUP in CONF else False,
        transport='pyamqp', connect_timeout=10)


def _delete(connection, what, name, **conditions):
    """Delete queue or exchange ``name``; whether it is gone (False: in
    use, or, for a queue with ``if_empty``, holding messages)."""
    channel = connection.channel()
    try:
        if what == 'queue':
            channel.queue_delete(name, **conditions)
        else:
            channel.exchange_delete(name, **conditions)
        return True
    except amqp.exceptions.PreconditionFailed:
        return False
    finally:
        if channel.is_open:
            channel.close()


def remove(transport_url, services, exchange):
    """Delete the queues of ``services`` (``(host, topic)`` pairs) and
    ``exchange`` from the broker of ``transport_url``; the names left
    because something else uses them, or None for a transport other
    than RabbitMQ (nothing to remove).

    :raises DemoBrokerError: the broker cannot be reached.
    """
    url = messaging.TransportURL.parse(CONF, transport_url)
    if url.transport not in ('rabbit', 'amqp') or not url.hosts:
        return None
    own, shared = queues_of(services)
    left = []
    try:
        with _connection(url) as connection:
            for name in own:
                if not _delete(connection, 'queue', name, if_unused=True):
                    left.append(name)
            for name in shared:
                if not _delete(connection, 'queue', name, if_unused=True,
                               if_empty=True):
                    left.append(name)
            if not _delete(connection, 'exchange', exchange,
                           if_unused=True):
                left.append(exchange)
    except (OSError, amqp.exceptions.AMQPError) as error:
        raise DemoBrokerError(
            url=config.redact_transport_url(transport_url),
            reason=config.mask_secrets(str(error)))
    return left
