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
               deprecated_group='DEFAULT',
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
do; the legacy ones a plain dictionary. In Nova mode (``[scheduler] backend =
nova``) the scheduler sends nova-scheduler's own notifications instead, in
the format asked for here: Nova's payloads (namespace ``nova``) and
publishers (``nova-scheduler:<host>``, ``scheduler.<host>``). Nothing is sent
at all unless ``[oslo_messaging_notifications] driver`` names a driver.

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
    cfg.StrOpt('notify_on_state_change',
               choices=[
                   (None, 'no notifications'),
                   ('vm_state', 'compute.instance.update on a change of '
                                'vm_state'),
                   ('vm_and_task_state', 'compute.instance.update on a '
                                         'change of vm_state or task_state'),
               ],
               deprecated_group='DEFAULT',
               help="""
Nova's option: send ``compute.instance.update`` on instance state changes.

Read so that a nova.conf shared with Nova's services starts Gantt without a
warning. Nova's API, conductor and computes send these notifications; its
scheduler, and so Gantt's in Nova mode, sends none.

Possible values:

* unset (the default), ``vm_state`` or ``vm_and_task_state``.

Related options:

* ``notification_format``
"""),
    cfg.StrOpt('default_level',
               default='INFO',
               choices=('DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL'),
               deprecated_group='DEFAULT',
               deprecated_name='default_notification_level',
               help="""
Nova's option: the default priority of outgoing notifications.

Read so that a nova.conf shared with Nova's services starts Gantt without a
warning. Nova 34 defines it without using it: each notification has its own
priority, and the scheduler's are INFO, as Gantt's.

Possible values:

* ``DEBUG``, ``INFO`` (the default), ``WARN``, ``ERROR``, ``CRITICAL``.
"""),
    cfg.BoolOpt('bdms_in_notifications',
                default=False,
                help="""
Nova's option: include block device information in the versioned instance
notifications.

Read so that a nova.conf shared with Nova's services starts Gantt without a
warning. The scheduler's notifications carry no instance payload, so it
changes nothing Gantt sends.

Related options:

* ``notification_format``
"""),
    cfg.BoolOpt('include_share_mapping',
                default=False,
                help="""
Nova's option: include share mapping information in the versioned instance
notifications.

Read so that a nova.conf shared with Nova's services starts Gantt without a
warning. The scheduler's notifications carry no instance payload, so it
changes nothing Gantt sends.

Related options:

* ``notification_format``
"""),
]


def register_opts(conf):
    conf.register_group(notifications_group)
    conf.register_opts(notifications_opts, group=notifications_group)


def list_opts():
    return {notifications_group: notifications_opts}
