"""gantt-manage broker: what to tell RabbitMQ to secure a deployment.

``gantt-manage broker permissions --vhost /gantt`` prints the
``rabbitmqctl`` commands that give each service's user (named after its
binary unless ``--user BINARY=USER``) the least permissions it needs on
that vhost (see :mod:`scheduler.broker_permissions` and the admin guide's
"Securing the broker"). The control exchange and the notification topics
are this configuration's. Nothing is sent to the broker::

    gantt-manage broker permissions --vhost /gantt \\
        --user gantt-compute=compute | sh
"""

import argparse

from scheduler import broker_permissions
from scheduler.cmd import manage_args
from scheduler import conf

CONF = conf.CONF


def binary_user(text):
    """``BINARY=USER`` as ``(binary, user)``; BINARY a Gantt service."""
    binary, sep, user = text.partition('=')
    if not sep or not user or binary not in broker_permissions.ROLES:
        raise argparse.ArgumentTypeError(
            'expected BINARY=USER with BINARY one of %s, got %r' % (
                ', '.join(sorted(broker_permissions.ROLES)), text))
    return binary, user


def notification_topics():
    """The topics this configuration's notifications go to (none when
    its notification driver is off)."""
    drivers = [name for name in CONF.oslo_messaging_notifications.driver
               if name and name != 'noop']
    if not drivers:
        return ()
    topics = set()
    if CONF.notifications.notification_format in ('unversioned', 'both'):
        topics.update(CONF.oslo_messaging_notifications.topics)
    if CONF.notifications.notification_format in ('versioned', 'both'):
        topics.update(CONF.notifications.versioned_notifications_topics)
    return tuple(sorted(topics))


def permissions(vhost, user=None):
    """Print the rabbitmqctl commands for every service's user."""
    topics = notification_topics()
    print('# Least RabbitMQ permissions of each Gantt service on vhost %s, '
          'control exchange %s; notifications: %s.' % (
              vhost, CONF.control_exchange, ', '.join(topics) or 'none'))
    for line in broker_permissions.rabbitmqctl_lines(
            vhost, CONF.control_exchange, dict(user or ()), topics):
        print(line)
    return 0


CATEGORY = manage_args.Category('RabbitMQ permissions of the services.', {
    'permissions': manage_args.Command(
        permissions, 'Print the rabbitmqctl commands that give each '
        'service\'s user its least permissions.', [
            manage_args.arg('vhost', '--vhost', required=True,
                            help='The virtual host of [DEFAULT] '
                                 'transport_url.'),
            manage_args.arg('user', '--user', action='append',
                            metavar='BINARY=USER', type=binary_user,
                            help='The user of a service, if not named '
                                 'after its binary (repeatable).')]),
})
