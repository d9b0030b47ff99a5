"""What each Gantt service may do on RabbitMQ: its least privileges.

RabbitMQ gives a user, per virtual host, three regular expressions over
resource names (``configure``: declare or delete a queue or exchange;
``write``: publish to an exchange, bind a queue; ``read``: consume from a
queue, bind from an exchange) and, per topic exchange, two more over
routing keys (``rabbitmqctl set_topic_permissions``: ``write`` for the
routing key of a publish, ``read`` for the key of a binding). This module
says, for each service, which names those are under oslo.messaging's
rabbit driver, as measured on a broker (see
``docs/source/admin/securing-the-broker.rst``):

* an RPC server on topic ``T`` of the control exchange ``X``
  (``[DEFAULT] control_exchange``, Gantt's default ``gantt``) declares the
  topic exchange ``X`` and the queues ``T`` and ``T.<host>`` bound to it
  with those keys, and the fanout exchange ``T_fanout`` with a queue
  ``T_fanout_<uuid>`` of its own;
* an RPC call declares a reply queue ``reply_<uuid>`` (bound only to the
  default exchange) and the server answers through the default exchange
  (``amq.default``), with the reply queue's name as routing key;
* a cast or call to topic ``T`` publishes to ``X`` with routing key ``T``
  or ``T.<host>``; a fanout cast declares ``T_fanout`` and publishes to it;
* a notification publishes to ``X`` with routing key ``<topic>.<priority>``
  and declares (and binds) a queue of that name, so that nothing is lost
  before a consumer comes;
* every daemon's start-up probe casts to :data:`scheduler.rpc.PROBE_TOPIC`.

Example::

    perms = broker_permissions.for_service('gantt-compute')
    perms.configure, perms.write, perms.read          # regexes
    perms.topic_write, perms.topic_read               # on the exchange
    broker_permissions.rabbitmqctl_lines('/gantt')    # the commands
"""

import collections
import re

from compute import rpcapi as compute_rpcapi
from conductor import rpcapi as conductor_rpcapi
from scheduler import rpc
from scheduler import rpcapi as scheduler_rpcapi

DEFAULT_EXCHANGE = 'amq.default'
NOTHING = '^$'
# oslo.messaging's notification priorities, lower-cased as routing keys.
PRIORITIES = ('audit', 'debug', 'info', 'warn', 'error', 'critical',
              'sample')
DEFAULT_NOTIFICATION_TOPICS = ('notifications', 'versioned_notifications')

# What a service does, by topic: ``serves`` (its RPC server's topic),
# ``casts`` (topics it casts or calls: ``T`` for the topic, ``T.`` for
# any one server of it), ``fanouts`` (topics whose every server it casts
# to), ``replies`` (whether it answers calls, through amq.default).
Role = collections.namedtuple('Role', 'serves casts fanouts replies')

SCHEDULER, CONDUCTOR, COMPUTE = (scheduler_rpcapi.RPC_TOPIC,
                                 conductor_rpcapi.RPC_TOPIC,
                                 compute_rpcapi.RPC_TOPIC)

ROLES = {
    # select_destinations answers; update_*_info fanouts received.
    'gantt-scheduler': Role(serves=SCHEDULER, casts=(), fanouts=(),
                            replies=True),
    # Calls the schedulers and the computes (compute.<host>); answers
    # the computes and gantt-manage.
    'gantt-conductor': Role(serves=CONDUCTOR,
                            casts=(SCHEDULER, COMPUTE + '.'),
                            fanouts=(SCHEDULER,), replies=True),
    # Reports to the conductor; tells the schedulers of its instances
    # (fanout); answers the conductor's calls.
    'gantt-compute': Role(serves=COMPUTE, casts=(CONDUCTOR,),
                          fanouts=(SCHEDULER,), replies=True),
    # A client only: asks the conductor, tells the schedulers of
    # aggregates.
    'gantt-manage': Role(serves=None, casts=(CONDUCTOR,),
                         fanouts=(SCHEDULER,), replies=False),
}

Permissions = collections.namedtuple(
    'Permissions', 'configure write read topic_write topic_read')


def _alternatives(patterns):
    """``^(a|b|c)$`` over regex fragments; :data:`NOTHING` for none."""
    patterns = sorted(set(patterns))
    if not patterns:
        return NOTHING
    return '^(%s)$' % '|'.join(patterns)


def _topic_keys(topic):
    """The routing keys of a topic's queues: ``T`` and ``T.<server>``."""
    return [re.escape(topic), re.escape(topic) + r'\..+']


def _cast_keys(cast):
    if cast.endswith('.'):
        return [re.escape(cast[:-1]) + r'\..+']
    return [re.escape(cast)]


def notification_keys(topics=DEFAULT_NOTIFICATION_TOPICS):
    """The routing keys (and queue names) of notifications on
    ``topics``."""
    return ['(%s)\\.(%s)' % ('|'.join(re.escape(topic) for topic in
                                      sorted(topics)),
                             '|'.join(PRIORITIES))]


def for_service(binary, control_exchange='gantt',
                notification_topics=DEFAULT_NOTIFICATION_TOPICS):
    """The :data:`Permissions` of ``binary`` (a key of :data:`ROLES`);
    ``notification_topics``: those the deployment sends (None or empty:
    it sends none)."""
    try:
        role = ROLES[binary]
    except KeyError:
        raise ValueError('unknown service %r: one of %s' % (
            binary, ', '.join(sorted(ROLES)))) from None
    exchange = re.escape(control_exchange)
    notes = notification_keys(notification_topics) \
        if notification_topics else []
    configure, write, read = [exchange, 'reply_.*'], [exchange], ['reply_.*']
    topic_write = [re.escape(rpc.PROBE_TOPIC)] + notes
    topic_read = list(notes)
    for topic in role.fanouts:
        configure.append(re.escape(topic + '_fanout'))
        write.append(re.escape(topic + '_fanout'))
    for cast in role.casts:
        topic_write += _cast_keys(cast)
    if role.replies:
        write.append(re.escape(DEFAULT_EXCHANGE))
    if role.serves:
        queues = _topic_keys(role.serves) + [
            re.escape(role.serves + '_fanout_') + '.*']
        fanout = re.escape(role.serves + '_fanout')
        configure += queues + [fanout]
        write += queues
        read += queues + [exchange, fanout]
        topic_read += _topic_keys(role.serves)
    # The notification queues: declared and bound by the sender.
    configure += notes
    write += notes
    if notes:
        read.append(exchange)
    return Permissions(_alternatives(configure), _alternatives(write),
                       _alternatives(read), _alternatives(topic_write),
                       _alternatives(topic_read))


def notification_reader(notification_topics=DEFAULT_NOTIFICATION_TOPICS):
    """The :data:`Permissions` of a consumer of the notification queues
    (which the senders declare): read them, nothing else."""
    return Permissions(NOTHING, NOTHING,
                       _alternatives(notification_keys(notification_topics)),
                       NOTHING, NOTHING)


def rabbitmqctl_lines(vhost, control_exchange='gantt', users=None,
                      notification_topics=DEFAULT_NOTIFICATION_TOPICS):
    """The ``rabbitmqctl`` commands that give each service's user (by
    ``users``, ``{binary: user}``; the binary's name by default) its
    permissions on ``vhost``."""
    users = dict(users or {})
    lines = []
    for binary in sorted(ROLES):
        user = users.get(binary, binary)
        perms = for_service(binary, control_exchange, notification_topics)
        lines.append(_command('set_permissions', vhost, user,
                              perms.configure, perms.write, perms.read))
        lines.append(_command('set_topic_permissions', vhost, user,
                              control_exchange, perms.topic_write,
                              perms.topic_read))
    return lines


def _command(verb, vhost, user, *patterns):
    return ' '.join(['rabbitmqctl', verb, '-p', _quote(vhost),
                     _quote(user)] + [_quote(p) for p in patterns])


def _quote(text):
    return "'%s'" % text.replace("'", "'\\''")
