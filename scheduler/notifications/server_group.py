"""``server_group.create``, ``server_group.delete`` and
``server_group.add_member``: a server group was made, removed, or got a
member.

Sent by ``gantt-manage server-group`` (create, delete) and by
gantt-conductor when a build's instances join their group; the payload is
the group (ServerGroupPayload). The legacy notifications of the same
names carry the group as a plain dict.
"""

from oslo_versionedobjects import fields

from scheduler import notifications
from scheduler.notifications import base
from scheduler.objects import base as objects_base


@base.PayloadRegistry.register
class ServerGroupPayload(base.NotificationPayload):
    VERSION = '1.0'
    fields = {
        'uuid': objects_base.UUIDField(nullable=True),
        'name': fields.StringField(nullable=True),
        'user_id': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'policy': fields.StringField(nullable=True),
        'rules': objects_base.DictOfStringsField(nullable=True),
        'members': objects_base.ListOfStringsField(nullable=True),
        'hosts': objects_base.ListOfStringsField(nullable=True),
    }

    @classmethod
    def from_spec_group(cls, group):
        """From a request spec's InstanceGroup."""
        if group is None:
            return None
        return cls(uuid=group.uuid, name=group.obj_get('name'),
                   policy=group.obj_get('policy'),
                   rules=dict(group.obj_get('rules', {})),
                   members=list(group.obj_get('members', [])),
                   hosts=list(group.obj_get('hosts', [])))

    @classmethod
    def from_row(cls, row, members=(), hosts=()):
        """From an ``instance_groups`` row and its members' uuids."""
        return cls(uuid=row.uuid, name=row.name, user_id=row.user_id,
                   project_id=row.project_id, policy=row.policy,
                   rules={key: str(value)
                          for key, value in (row.rules or {}).items()},
                   members=list(members), hosts=list(hosts))


@notifications.event
def group_action(ctxt, action, group, binary, host=None, hosts=()):
    """``server_group.<action>`` (create, delete or add_member) for
    ``group`` as ``scheduler.db.instance_groups`` returns it."""
    payload = ServerGroupPayload.from_row(group, group.members, hosts)
    event_type = 'server_group.%s' % action
    notifications.send(ctxt, event_type, payload, binary, host)
    notifications.send(ctxt, event_type, payload.to_plain(), binary, host,
                       legacy=True)
