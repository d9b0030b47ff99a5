"""``service.create`` and ``service.update``: a service registered (its
first heartbeat), or was disabled or enabled.

As in Nova, heartbeats alone send nothing: ``service.update`` follows a
change of ``disabled``, ``disabled_reason`` or ``forced_down``. Sent by
gantt-conductor (which writes the services' heartbeats) and by
``gantt-manage service disable|enable``; the payload is a
ServiceStatusPayload (the legacy notification carries its fields as a
dict).
"""

from oslo_versionedobjects import fields

from scheduler import notifications
from scheduler.notifications import base
from scheduler.objects import base as objects_base


@base.PayloadRegistry.register
class ServiceStatusPayload(base.NotificationPayload):
    VERSION = '1.0'
    fields = {
        'host': fields.StringField(nullable=True),
        'binary': fields.StringField(nullable=True),
        'topic': fields.StringField(nullable=True),
        'report_count': fields.IntegerField(nullable=True),
        'disabled': fields.BooleanField(nullable=True),
        'disabled_reason': fields.StringField(nullable=True),
        'availability_zone': fields.StringField(nullable=True),
        'last_seen_up': fields.DateTimeField(nullable=True),
        'forced_down': fields.BooleanField(nullable=True),
        # Nova's service version and uuid: Gantt's services have neither.
        'version': fields.IntegerField(nullable=True),
        'uuid': objects_base.UUIDField(nullable=True),
    }

    @classmethod
    def from_row(cls, row):
        """From a ``services`` row."""
        return cls(host=row.host, binary=row.binary, topic=row.topic,
                   report_count=row.report_count, disabled=row.disabled,
                   disabled_reason=row.disabled_reason,
                   last_seen_up=row.last_seen_up,
                   forced_down=row.forced_down)


@notifications.event
def service_action(ctxt, action, row, binary, host=None):
    """``service.<action>`` (create or update) for the ``services``
    row."""
    if row is None:
        return
    payload = ServiceStatusPayload.from_row(row)
    event_type = 'service.%s' % action
    notifications.send(ctxt, event_type, payload, binary, host)
    notifications.send(ctxt, event_type,
                       payload.to_plain(),
                       binary, host, legacy=True)
