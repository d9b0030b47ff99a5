"""Options of the ``[notifications]`` group: which notifications Gantt's
daemons send (see :mod:`scheduler.notifications`).

Where they go is oslo.messaging's ``[oslo_messaging_notifications]``
group (``driver``, ``topics``, ``transport_url``, ``retry``); with no
``driver`` set, nothing is sent, whatever the format::

    [oslo_messaging_notifications]
    driver = messagingv2

    [notifications]
    notification_format = versioned
"""

from oslo_config import cfg

notifications_group = cfg.OptGroup(
    'notifications',
    title='Notifications options',
    help="""
Which notifications the daemons send: the versioned ones (Nova's payloads,
``nova_object.*`` keys), the legacy unversioned ones, or both. The transport,
driver and topics of both are in ``[oslo_messaging_notifications]``.
""")

notifications_opts = [
    cfg.StrOpt('notification_format',
               default='unversioned',
               choices=[
                   ('both', 'Send both the versioned and the unversioned '
                            'notifications'),
                   ('versioned', 'Send only the versioned notifications'),
                   ('unversioned', 'Send only the legacy unversioned '
                                   'notifications'),
               ],
               help="""
Which format of notifications to send.

The versioned notifications carry a versioned payload (``nova_object.name``,
``nova_object.version``, ``nova_object.data``, namespace ``gantt``) as Nova's
do; the legacy ones a plain dictionary. Nothing is sent at all unless
``[oslo_messaging_notifications] driver`` names a driver.

Possible values:

* ``unversioned`` (the default, Nova's), ``versioned`` or ``both``.

Related options:

* ``versioned_notifications_topics``
* ``[oslo_messaging_notifications] driver``, ``topics`` (the legacy
  notifications' topics)
"""),
    cfg.ListOpt('versioned_notifications_topics',
                default=['versioned_notifications'],
                help="""
Topics the versioned notifications are sent to.

The legacy notifications go to ``[oslo_messaging_notifications] topics``
instead.

Possible values:

* A list of topic names.

Related options:

* ``notification_format``
"""),
    cfg.IntOpt('max_queued',
               default=1000,
               min=1,
               help="""
How many notifications a process keeps waiting to be sent.

Notifications are sent by a background thread, so that an operation never
waits on the notification broker. While the broker is down they queue;
once this many wait, the oldest is dropped, with a WARNING naming its event
type (and the count of dropped notifications in the Prometheus metrics).

Possible values:

* A positive number.

Related options:

* ``[oslo_messaging_notifications] retry``
"""),
]


def register_opts(conf):
    conf.register_group(notifications_group)
    conf.register_opts(notifications_opts, group=notifications_group)


def list_opts():
    return {notifications_group: notifications_opts}
