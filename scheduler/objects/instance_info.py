"""InstanceInfo: an instance as compute agents report it to the schedulers.

Compute agents cast ``update_instance_info`` (scheduler RPC API 1.3) with
one or more of these when instances appear on their host, so that the
affinity filters and weighers know at once what runs where::

    info = instance_info.InstanceInfo.from_spec(instance_uuid, spec)
    scheduler_api.update_instance_info(ctxt, host, [info])
"""

from oslo_versionedobjects import fields

from scheduler import placement_types
from scheduler.objects import base


@base.GanttObjectRegistry.register
class InstanceInfo(base.GanttObject):
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'uuid': base.UUIDField(),
        'flavor_id': fields.StringField(nullable=True, default=None),
        'image_properties': base.DictOfNullableStringsField(default={}),
    }

    @classmethod
    def from_spec(cls, instance_uuid, spec):
        """The instance ``instance_uuid`` built from RequestSpec ``spec``."""
        image = spec.obj_get('image')
        info = placement_types.info_from_flavor_and_image(
            spec.obj_get('flavor'),
            image.obj_get('properties') if image else None)
        return cls(uuid=instance_uuid, flavor_id=info.flavor_id,
                   image_properties=info.image_properties)

    def to_host_info(self):
        """The :class:`scheduler.placement_types.InstanceInfo` kept per
        host."""
        return placement_types.InstanceInfo(
            self.obj_get('flavor_id'), dict(self.obj_get('image_properties',
                                                         {})))
