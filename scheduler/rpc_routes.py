"""Which way an RPC request reached a server, and whether it may come so.

RabbitMQ's permissions restrict who may publish with which routing key
only on a topic exchange (``rabbitmqctl set_topic_permissions``), which
is how a request reaches a service's queue: through the control exchange
(``[DEFAULT] control_exchange``: ``gantt``, or ``nova`` for the scheduler
in Nova mode, whose fanout is Nova's ``scheduler_fanout``). Two other
ways reach the same RPC server, and the broker cannot narrow them:

* the default exchange (``amq.default``) delivers to any queue named by
  the routing key. Every service that answers calls needs to write to it
  (oslo.messaging sends replies that way), so any of them could put a
  request straight into ``scheduler`` or ``compute.<host>``;
* the topic's fanout exchange (``<topic>_fanout``) carries any method to
  every server of the topic; its writers (computes tell the schedulers
  of their instances) could send ``select_destinations`` that way.

A server therefore accepts a request only from the control exchange
(the one of its target), or from its fanout exchange for the methods
its endpoints list in ``fanout_methods``; any other is acknowledged and
dropped with a warning naming the method and the exchange, and the
endpoint never sees it::

    class Manager:
        fanout_methods = frozenset({'update_instance_info'})

    allowed = rpc_routes.fanout_methods(endpoints)
    reason = rpc_routes.refusal(target, 'gantt', allowed, incoming)
    if reason:                                   # None: dispatch it
        rpc_routes.drop(incoming, reason)

Transports that say nothing about the exchange (``fake://``) are not
checked.
"""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

DEFAULT_EXCHANGE_NAME = 'amq.default'


def delivered_through(incoming):
    """The exchange the broker delivered ``incoming`` (an RPC incoming
    message) through: ``''`` for the default exchange; None if the
    transport does not say."""
    raw = getattr(incoming.message, '_raw_message', None)
    delivery_info = getattr(raw, 'delivery_info', None)
    if not isinstance(delivery_info, dict):
        return None
    return delivery_info.get('exchange')


def fanout_methods(endpoints):
    """The methods that ``endpoints`` accept through a fanout."""
    methods = set()
    for endpoint in endpoints:
        methods.update(getattr(endpoint, 'fanout_methods', ()))
    return frozenset(methods)


def refusal(target, control_exchange, allowed_fanout, incoming):
    """None if a server of ``target`` (its exchange, else
    ``control_exchange``) may dispatch ``incoming``, whose fanouts may
    name ``allowed_fanout``; else why not, in words."""
    exchange = delivered_through(incoming)
    if exchange is None:
        return None
    control = target.exchange or control_exchange
    if exchange == control:
        return None
    method = incoming.message.get('method')
    if exchange == '%s_fanout' % target.topic:
        if method in allowed_fanout:
            return None
        return ('%s is not a fanout method of topic %s' % (method,
                                                           target.topic))
    return ('it came through exchange %s, not the control exchange %s'
            % (exchange or DEFAULT_EXCHANGE_NAME, control))


def drop(incoming, reason):
    """Acknowledge ``incoming`` without dispatching it, and say why."""
    try:
        incoming.acknowledge()
    except Exception:
        LOG.exception('Could not acknowledge a refused message')
    LOG.warning('Refused RPC request %s: %s. Only the control exchange '
                'carries requests; see "Securing the broker" in the '
                'admin guide', incoming.message.get('method'), reason)
