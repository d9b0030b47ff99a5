"""``scheduler.select_destinations.start`` / ``.end``: the scheduler was
asked where to put servers, and answered (or found no host).

Sent by gantt-scheduler around each ``select_destinations``; the payload
is the request (RequestSpecPayload). The legacy notification of the same
name carries ``{"request_spec": {...}}``, the spec as a plain dict.
"""

from oslo_versionedobjects import fields

from scheduler import notifications
from scheduler.notifications import base
from scheduler.notifications import server_group
from scheduler.objects import base as objects_base

BINARY = 'gantt-scheduler'


@base.PayloadRegistry.register
class DestinationPayload(base.NotificationPayload):
    VERSION = '1.0'
    fields = {
        'host': fields.StringField(nullable=True),
        'node': fields.StringField(nullable=True),
        'aggregates': objects_base.ListOfStringsField(nullable=True),
    }


@base.PayloadRegistry.register
class SchedulerRetriesPayload(base.NotificationPayload):
    VERSION = '1.0'
    fields = {
        'num_attempts': fields.IntegerField(),
        # [host, node] pairs tried already.
        'hosts': objects_base.ListOfListsOfStringsField(),
    }


@base.PayloadRegistry.register
class RequestSpecPayload(base.NotificationPayload):
    VERSION = '1.0'
    fields = {
        'instance_uuid': objects_base.UUIDField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'user_id': fields.StringField(nullable=True),
        'availability_zone': fields.StringField(nullable=True),
        'flavor': fields.ObjectField('FlavorPayload', nullable=True),
        'image': fields.ObjectField('ImageMetaPayload', nullable=True),
        'num_instances': fields.IntegerField(default=1),
        'ignore_hosts': objects_base.ListOfStringsField(nullable=True),
        'force_hosts': objects_base.ListOfStringsField(nullable=True),
        'force_nodes': objects_base.ListOfStringsField(nullable=True),
        'scheduler_hints': objects_base.DictOfListOfStringsField(
            nullable=True),
        'instance_group': fields.ObjectField('ServerGroupPayload',
                                             nullable=True),
        'requested_destination': fields.ObjectField('DestinationPayload',
                                                    nullable=True),
        'retry': fields.ObjectField('SchedulerRetriesPayload',
                                    nullable=True),
        'is_rebuild': fields.BooleanField(default=False),
    }

    @classmethod
    def from_spec(cls, spec):
        if spec is None:
            return None
        get = spec.obj_get
        payload = cls(
            instance_uuid=get('instance_uuid'), project_id=get('project_id'),
            user_id=get('user_id'),
            availability_zone=get('availability_zone'),
            flavor=base.FlavorPayload.from_values(get('flavor')),
            image=base.ImageMetaPayload.from_image(get('image')),
            num_instances=get('num_instances', 1),
            ignore_hosts=_list(get('ignore_hosts')),
            force_hosts=_list(get('force_hosts')),
            force_nodes=_list(get('force_nodes')),
            scheduler_hints={key: list(values) for key, values
                             in get('scheduler_hints', {}).items()},
            instance_group=server_group.ServerGroupPayload.from_spec_group(
                get('instance_group')),
            is_rebuild=bool(get('is_rebuild', False)))
        destination = get('requested_destination')
        if destination is not None:
            payload.requested_destination = DestinationPayload(
                host=destination.obj_get('host'),
                node=destination.obj_get('node'),
                aggregates=_list(destination.obj_get('aggregates')))
        retry = get('retry')
        if retry is not None:
            payload.retry = SchedulerRetriesPayload(
                num_attempts=retry.obj_get('num_attempts', 0),
                hosts=[list(pair) for pair in retry.obj_get('hosts', [])])
        return payload


def _list(values):
    return None if values is None else list(values)


@notifications.event
def select_destinations(ctxt, spec, phase):
    """``phase``: ``start`` or ``end``."""
    event_type = 'scheduler.select_destinations.%s' % phase
    if notifications.versioned_enabled():
        notifications.send(ctxt, event_type,
                           RequestSpecPayload.from_spec(spec), BINARY)
    if notifications.legacy_enabled():
        notifications.send(ctxt, event_type,
                           {'request_spec': RequestSpecPayload.from_spec(
                               spec).to_plain()},
                           BINARY, legacy=True)
