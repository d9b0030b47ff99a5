"""Turn notifications on with oslo.messaging's ``test`` driver, which keeps
every notification sent in a list, and read them back."""

from oslo_messaging.notify import _impl_test

from scheduler import conf
from scheduler import notifications

CONF = conf.CONF


def enable(config, notification_format='both'):
    """Notifications on (``test`` driver) in the given format."""
    notifications.register_opts(CONF)
    config.config(driver=['test'], group='oslo_messaging_notifications')
    config.config(notification_format=notification_format,
                  group='notifications')
    _impl_test.reset()
    notifications.init(CONF)


def sent(event_type=None, versioned=None):
    """The notifications sent so far (after a flush), as
    ``(priority, message)``; only ``event_type``'s if given, and only the
    versioned (True) or legacy (False) ones if asked."""
    notifications.flush()
    found = []
    for _ctxt, message, priority, _retry in list(_impl_test.NOTIFICATIONS):
        if event_type is not None and message['event_type'] != event_type:
            continue
        is_versioned = isinstance(message['payload'], dict) and \
            'nova_object.name' in message['payload']
        if versioned is not None and versioned != is_versioned:
            continue
        found.append((priority, message))
    return found


def event_types(versioned=True):
    return [message['event_type'] for _priority, message
            in sent(versioned=versioned)]


def data(message):
    """A versioned message's payload fields."""
    return message['payload']['nova_object.data']
