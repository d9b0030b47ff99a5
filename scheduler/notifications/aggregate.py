"""``aggregate.<action>.start`` / ``.end``: a host aggregate is created,
deleted, gets or loses a host, or has its metadata changed (``create``,
``delete``, ``add_host``, ``remove_host``, ``update_metadata``).

Sent by ``gantt-manage aggregate``; ``.start`` carries the aggregate as
it was before the change (for create: its name and metadata to be),
``.end`` as it is after. The legacy notifications (``aggregate.create``
...) carry the same fields as a dict, as Nova's ``aggregate.*``
notifications did.
"""

from oslo_versionedobjects import fields

from scheduler import notifications
from scheduler.notifications import base
from scheduler.objects import base as objects_base

BINARY = 'gantt-manage'


@base.PayloadRegistry.register
class AggregatePayload(base.NotificationPayload):
    VERSION = '1.0'
    fields = {
        'id': fields.IntegerField(nullable=True),
        'uuid': objects_base.UUIDField(nullable=True),
        'name': fields.StringField(nullable=True),
        'hosts': objects_base.ListOfStringsField(nullable=True),
        'metadata': objects_base.DictOfStringsField(nullable=True),
    }

    @classmethod
    def from_db(cls, aggregate):
        """From what ``scheduler.db.aggregates`` returns."""
        return cls(id=aggregate.id, uuid=aggregate.uuid, name=aggregate.name,
                   hosts=sorted(aggregate.hosts),
                   metadata=dict(aggregate.metadata))


@notifications.event
def aggregate_action(ctxt, action, phase, aggregate=None, **values):
    """``aggregate.<action>.<phase>`` for ``aggregate`` as
    ``scheduler.db.aggregates`` returns it, or (before a create) for the
    ``values`` known then."""
    payload = (AggregatePayload.from_db(aggregate) if aggregate is not None
               else AggregatePayload(**values))
    event_type = 'aggregate.%s.%s' % (action, phase)
    notifications.send(ctxt, event_type, payload, BINARY)
    notifications.send(ctxt, event_type,
                       payload.to_plain(),
                       BINARY, legacy=True)
