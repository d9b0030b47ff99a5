"""``instance.<action>.start`` / ``.end`` / ``.error``: an instance is
built, moved, rebuilt or shelved.

``instance.create.*`` is sent by the gantt-compute agent that spawns the
instance (``.error`` with the fault when the spawn fails there). The
operations the conductor runs on existing servers send theirs from
gantt-conductor, under Nova's event names: a cold migration or resize
``instance.resize``, its confirm and revert ``instance.resize_confirm``
and ``instance.resize_revert``, a live migration
``instance.live_migration_post``, a rebuild or an evacuation
``instance.rebuild``, ``instance.shelve``, ``instance.shelve_offload``
and ``instance.unshelve``. The versioned payload is an
InstanceActionPayload (InstanceCreatePayload for create); the legacy
notification of the same name carries the same fields as a dict.
"""

import collections

from oslo_utils import timeutils
from oslo_versionedobjects import fields

from scheduler import notifications
from scheduler.notifications import base
from scheduler.objects import base as objects_base

BINARY_COMPUTE = 'gantt-compute'
BINARY_CONDUCTOR = 'gantt-conductor'

# A conductor operation (conductor.tasks.common.start's action) -> the
# event Nova sends for it.
CONDUCTOR_ACTIONS = {
    'migrate': 'resize', 'resize': 'resize',
    'confirm-resize': 'resize_confirm', 'revert-resize': 'resize_revert',
    'live-migrate': 'live_migration_post', 'rebuild': 'rebuild',
    'evacuate': 'rebuild', 'shelve': 'shelve',
    'shelve-offload': 'shelve_offload', 'unshelve': 'unshelve',
}


@base.PayloadRegistry.register
class InstanceActionPayload(base.NotificationPayload):
    VERSION = '1.0'
    fields = {
        'uuid': objects_base.UUIDField(),
        'display_name': fields.StringField(nullable=True),
        'tenant_id': fields.StringField(nullable=True),
        'user_id': fields.StringField(nullable=True),
        'host': fields.StringField(nullable=True),
        'node': fields.StringField(nullable=True),
        'state': fields.StringField(nullable=True),
        'task_state': fields.StringField(nullable=True),
        'availability_zone': fields.StringField(nullable=True),
        'flavor': fields.ObjectField('FlavorPayload', nullable=True),
        'launched_at': fields.DateTimeField(nullable=True),
        'fault': fields.ObjectField('ExceptionPayload', nullable=True),
        'action_initiator_user': fields.StringField(nullable=True),
        'action_initiator_project': fields.StringField(nullable=True),
    }

    @classmethod
    def from_row(cls, ctxt, row, fault=None, **overrides):
        """From an ``instances`` row (``overrides`` replace its fields:
        ``host``, ``node``, ``state``...); ``fault`` an exception or text."""
        values = dict(
            uuid=row.uuid, display_name=row.display_name,
            tenant_id=row.project_id, user_id=row.user_id, host=row.host,
            node=row.node, state=row.vm_state, task_state=row.task_state,
            availability_zone=row.availability_zone,
            flavor=base.FlavorPayload.from_values(row.flavor),
            launched_at=row.launched_at,
            action_initiator_user=getattr(ctxt, 'user_id', None),
            action_initiator_project=getattr(ctxt, 'project_id', None))
        values.update(overrides)
        if isinstance(fault, BaseException):
            values['fault'] = base.ExceptionPayload.from_exception(fault)
        elif fault:
            values['fault'] = base.ExceptionPayload.from_fault(fault)
        return cls(**values)


@base.PayloadRegistry.register
class InstanceCreatePayload(InstanceActionPayload):
    VERSION = '1.0'


@notifications.event
def action(ctxt, row, event, phase, binary, host=None, fault=None,
           **overrides):
    """``instance.<event>.<phase>`` for the instance ``row``; ``phase``:
    start, end or error (error goes with ``fault``)."""
    if row is None:
        return
    payload_class = (InstanceCreatePayload if event == 'create'
                     else InstanceActionPayload)
    payload = payload_class.from_row(ctxt, row, fault, **overrides)
    event_type = 'instance.%s.%s' % (event, phase)
    priority = 'error' if phase == 'error' else 'info'
    notifications.send(ctxt, event_type, payload, binary, host, priority)
    if notifications.legacy_enabled():
        legacy = payload.to_plain()
        # Nova's legacy names.
        legacy['instance_type'] = legacy.pop('flavor')
        legacy['instance_id'] = legacy['uuid']
        legacy.pop('fault')
        if payload.fault is not None:
            legacy['message'] = payload.fault.exception_message
        notifications.send(ctxt, event_type, legacy, binary, host, priority,
                           legacy=True)


@notifications.event
def create(ctxt, phase, instance_uuid, spec, host, node, fault=None):
    """``instance.create.<phase>`` from the compute building the instance
    (which knows its request spec, not its database row)."""
    row = _SpecRow(
        uuid=instance_uuid, display_name=None,
        project_id=spec.obj_get('project_id'),
        user_id=spec.obj_get('user_id'), host=host, node=node,
        vm_state={'start': 'building', 'end': 'active'}.get(phase, 'error'),
        task_state='spawning' if phase == 'start' else None,
        availability_zone=spec.obj_get('availability_zone'),
        flavor=spec.obj_get('flavor'),
        launched_at=timeutils.utcnow() if phase == 'end' else None)
    action(ctxt, row, 'create', phase, BINARY_COMPUTE, host, fault)


_SpecRow = collections.namedtuple(
    '_SpecRow', 'uuid display_name project_id user_id host node vm_state '
                'task_state availability_zone flavor launched_at')
