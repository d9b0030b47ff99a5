"""Notifications: what Gantt's daemons tell the rest of the cloud.

Gantt sends Nova's notifications, over oslo.messaging's notifier, in the
formats ``[notifications] notification_format`` asks for: the versioned
ones (a versioned payload, see :mod:`scheduler.notifications.base`) to
``[notifications] versioned_notifications_topics``, the legacy
unversioned ones (a plain dict) to ``[oslo_messaging_notifications]
topics``. Nothing is sent unless ``[oslo_messaging_notifications]
driver`` is set (``messagingv2`` to a broker, ``log`` to the log).

Each family of events has its module, whose functions the services call
where the event happens; they cost one check when notifications are off:

========================================  ================================
event type                                sent by
========================================  ================================
scheduler.select_destinations.start/.end  gantt-scheduler (request_spec)
compute_task.build_instances.error,       gantt-conductor (compute_task);
compute_task.migrate_server.error,        legacy: compute_task.<task>
compute_task.rebuild_server.error,
compute_task.unshelve_instance.error
instance.create.start/.end/.error         gantt-compute (instance)
instance.<move>.start/.end/.error         gantt-conductor (instance):
                                          resize, resize_confirm,
                                          resize_revert,
                                          live_migration_post, rebuild
                                          (also for an evacuation),
                                          shelve, shelve_offload, unshelve
service.update                            gantt-conductor, gantt-manage
aggregate.<action>.start/.end             gantt-manage (aggregate)
server_group.create/.delete/.add_member   gantt-manage, gantt-conductor
========================================  ================================

In Nova mode (``[scheduler] backend = nova``) gantt-scheduler sends Nova's
own ``scheduler.select_destinations`` notifications instead, as
nova-scheduler would (see :mod:`scheduler.notifications.nova_mode`).

A daemon calls :func:`init` once its options are parsed and
:func:`cleanup` when it stops (which sends what is still queued, within a
few seconds); sending never blocks an operation (see
:mod:`scheduler.notifications.sender`)::

    notifications.init(CONF)
    request_spec.select_destinations(ctxt, spec, 'start')
    ...
    notifications.cleanup()
"""

import functools

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_messaging import opts as messaging_opts

from scheduler import context as gantt_context
from scheduler.notifications import sender as sender_mod

LOG = logging.getLogger(__name__)

NOTIFICATIONS_GROUP = 'oslo_messaging_notifications'
# How long a clean stop waits for queued notifications.
FLUSH_TIMEOUT = 5.0

_state = {'versioned': None, 'legacy': None, 'host': None,
          'transport': None, 'sender': None}


def register_opts(conf):
    """Register oslo.messaging's ``[oslo_messaging_notifications]`` options
    (oslo.messaging registers them only when a notifier is built)."""
    for group, opts in messaging_opts.list_opts():
        if group == NOTIFICATIONS_GROUP:
            conf.register_opts(opts, group=group)


def init(conf):
    """Build the process's notifiers, as the options ask; returns whether
    any notification will be sent."""
    cleanup()
    register_opts(conf)
    drivers = [name for name in conf.oslo_messaging_notifications.driver
               if name and name != 'noop']
    if not drivers:
        return False
    # Imported here: rpc imports the payload families' users.
    from scheduler import config
    from scheduler import exception
    from scheduler import rpc
    url = conf.oslo_messaging_notifications.transport_url
    try:
        transport = messaging.get_notification_transport(conf)
    except (messaging.InvalidTransportURL, messaging.DriverLoadFailure,
            ValueError) as error:
        url = url or conf.transport_url
        raise exception.MessagingUnavailable(
            url=config.redact_transport_url(url),
            reason='[oslo_messaging_notifications]: %s'
            % config.scrub(str(error), [url]))
    notification_format = conf.notifications.notification_format
    serializer = rpc.get_serializer()
    _state['transport'] = transport
    if notification_format in ('versioned', 'both'):
        _state['versioned'] = messaging.Notifier(
            transport, serializer=serializer,
            topics=conf.notifications.versioned_notifications_topics)
    if notification_format in ('unversioned', 'both'):
        _state['legacy'] = messaging.Notifier(transport,
                                              serializer=serializer)
    _state['host'] = conf.host
    _state['sender'] = sender_mod.Sender(conf.notifications.max_queued)
    LOG.info('Sending %s notifications (driver %s)', notification_format,
             ', '.join(drivers))
    return True


def cleanup(timeout=FLUSH_TIMEOUT):
    """Send what is queued (at most ``timeout`` seconds) and drop the
    notifiers; notifications are off until the next :func:`init`."""
    sender, transport = _state['sender'], _state['transport']
    for key in _state:
        _state[key] = None
    if sender is not None:
        sender.flush(timeout)
    if transport is not None:
        transport.cleanup()


def flush(timeout=FLUSH_TIMEOUT):
    """Send what is queued, waiting at most ``timeout`` seconds (a
    service's stop); notifications stay on."""
    sender = _state['sender']
    return True if sender is None else sender.flush(timeout)


def versioned_enabled():
    return _state['versioned'] is not None


def legacy_enabled():
    return _state['legacy'] is not None


def enabled():
    return _state['sender'] is not None


def event(func):
    """Decorate a family's event function: it does nothing while
    notifications are off, and never raises (a notification that cannot be
    built is logged, the operation goes on)."""
    @functools.wraps(func)
    def guarded(*args, **kwargs):
        if _state['sender'] is None:
            return None
        try:
            return func(*args, **kwargs)
        except Exception:
            LOG.exception('Could not build notification %s', func.__name__)
            return None
    return guarded


def send(ctxt, event_type, payload, binary, host=None, priority='info',
         legacy=False):
    """Queue one notification from ``binary`` on ``host`` (the publisher,
    ``gantt-scheduler:host1``; the process's ``[DEFAULT] host`` when
    None): ``payload`` a NotificationPayload for the versioned notifier,
    a dict for the legacy one (``legacy=True``). A no-op when that format
    is off."""
    notifier = _state['legacy' if legacy else 'versioned']
    sender = _state['sender']
    if notifier is None or sender is None:
        return
    if not legacy:
        payload = payload.to_primitive()
    if ctxt is None:
        ctxt = gantt_context.get_admin_context()
    publisher = '%s:%s' % (binary, host or _state['host'])
    sender.put(notifier.prepare(publisher_id=publisher), priority, ctxt,
               event_type, payload)


def transport():
    """The notification transport :func:`init` made (None while
    notifications are off): Nova mode builds its notifiers on it."""
    return _state['transport']


def host():
    """``[DEFAULT] host`` as :func:`init` read it."""
    return _state['host']


def queue(notifier, priority, ctxt, event_type, payload):
    """Queue a notification built elsewhere (Nova mode's, see
    :mod:`scheduler.notifications.nova_mode`) on the process's sender; a
    no-op while notifications are off."""
    sender = _state['sender']
    if sender is not None:
        sender.put(notifier, priority, ctxt, event_type, payload)


def pending():
    """Notifications not sent yet (for the Guru Meditation Report)."""
    sender = _state['sender']
    return 0 if sender is None else sender.pending()
