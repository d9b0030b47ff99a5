"""Selection: one host chosen (or offered as an alternate) for an instance.

``select_destinations`` answers, per instance, a list whose first Selection
is claimed and whose following ones are alternates: their
``allocation_request`` says what the conductor must claim to use them.
"""

from oslo_serialization import jsonutils
from oslo_versionedobjects import fields

from scheduler.objects import base


@base.GanttObjectRegistry.register
class Selection(base.GanttObject):
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'compute_node_uuid': fields.UUIDField(nullable=True),
        'service_host': fields.StringField(),
        'nodename': fields.StringField(),
        'limits': base.DictOfFloatsField(default={}),
        'allocation_request': fields.StringField(nullable=True),
        'claimed': fields.BooleanField(default=False),
    }

    @classmethod
    def for_host(cls, host_state, resources, claimed, limits=None):
        """Build a Selection for a HostState-like object and a request."""
        return cls(compute_node_uuid=host_state.uuid,
                   service_host=host_state.host,
                   nodename=host_state.nodename,
                   limits=dict(limits or {}),
                   allocation_request=jsonutils.dumps(
                       dict(resources._asdict())),
                   claimed=claimed)

    def requested_resources(self):
        """The resources ``allocation_request`` asks for, as a dict."""
        if not self.allocation_request:
            return {}
        return jsonutils.loads(self.allocation_request)

    def to_legacy_dict(self):
        """The ``{host, nodename, limits}`` dict of the 1.0 API."""
        return {'host': self.service_host, 'nodename': self.nodename,
                'limits': dict(self.limits)}
