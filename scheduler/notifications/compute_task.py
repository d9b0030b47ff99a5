"""``compute_task.<task>.error``: the conductor could not carry out a task
on an instance (no valid host, every attempt failed, the request was
refused...).

Sent by gantt-conductor when a build ends in ERROR without ever running
(``build_instances``), or when a cold migration or resize, live
migration, rebuild or evacuation, or unshelve fails to find or claim a
destination (``migrate_server``, ``rebuild_server``,
``unshelve_instance``). The versioned payload is a ComputeTaskPayload
whose ``reason`` holds the fault (NoValidHost's explanation: which filter
removed the last hosts); the legacy notification, named
``compute_task.<task>`` with priority ERROR as Nova's, carries
``instance_id``, ``state``, ``method``, ``reason`` and ``request_spec``.
"""

from oslo_versionedobjects import fields

from scheduler import notifications
from scheduler.notifications import base
from scheduler.notifications import request_spec as spec_notes
from scheduler.objects import base as objects_base

BINARY = 'gantt-conductor'


@base.PayloadRegistry.register
class ComputeTaskPayload(base.NotificationPayload):
    VERSION = '1.0'
    fields = {
        'instance_uuid': objects_base.UUIDField(),
        'reason': fields.ObjectField('ExceptionPayload'),
        'request_spec': fields.ObjectField('RequestSpecPayload',
                                           nullable=True),
        'state': fields.StringField(nullable=True),
    }


@notifications.event
def task_error(ctxt, task, instance_uuid, spec, reason, state):
    """``task``: build_instances, migrate_server, rebuild_server or
    unshelve_instance; ``reason``: the exception, or the fault's text;
    ``state``: the instance's vm_state after the failure."""
    if isinstance(reason, BaseException):
        exception = base.ExceptionPayload.from_exception(reason, task)
    else:
        exception = base.ExceptionPayload.from_fault(reason)
        exception.function_name = task
    spec_payload = spec_notes.RequestSpecPayload.from_spec(spec)
    notifications.send(
        ctxt, 'compute_task.%s.error' % task,
        ComputeTaskPayload(instance_uuid=instance_uuid, reason=exception,
                           state=state, request_spec=spec_payload),
        BINARY, priority='error')
    notifications.send(
        ctxt, 'compute_task.%s' % task,
        {'instance_id': instance_uuid, 'state': state, 'method': task,
         'reason': exception.exception_message,
         'request_spec': (None if spec_payload is None
                          else spec_payload.to_plain())},
        BINARY, priority='error', legacy=True)
