"""Registry, base class and RPC serializer of Gantt's versioned objects.

Objects are serialized by oslo.versionedobjects under the namespace
``gantt_object``. A payload that cannot be turned back into an object (an
unknown class, a wrong field type, a newer version than this service knows)
becomes :class:`scheduler.exception.InvalidRequest`, so the caller reads why
its message was refused.
"""

from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import exception as ovo_exception
from oslo_versionedobjects import fields

from scheduler import exception


class GanttObjectRegistry(ovo_base.VersionedObjectRegistry):
    pass


class GanttObject(ovo_base.VersionedObject,
                  ovo_base.ComparableVersionedObject):
    OBJ_SERIAL_NAMESPACE = 'gantt_object'
    OBJ_PROJECT_NAMESPACE = 'gantt'

    def __init__(self, context=None, **kwargs):
        super().__init__(context, **kwargs)
        # Fields left out take their declared defaults, so that readers
        # never meet an unset field that has a default.
        self.obj_set_defaults(*[name for name, field in self.fields.items()
                                if field.default != fields.UnspecifiedDefault
                                and name not in kwargs])

    def obj_get(self, name, default=None):
        """The field's value, or ``default`` when unset or None."""
        if name in self.fields:
            # oslo.versionedobjects keeps a set field's value in
            # ``_obj_<name>``: one lookup, where obj_attr_is_set builds
            # the list of every field name first (filters ask per request).
            value = getattr(self, '_obj_' + name, None)
        elif self.obj_attr_is_set(name):
            value = getattr(self, name)
        else:
            return default
        return default if value is None else value


class DictOfFloatsField(fields.AutoTypedField):
    AUTO_TYPE = fields.Dict(fields.Float())


class GanttObjectSerializer(ovo_base.VersionedObjectSerializer):
    OBJ_BASE_CLASS = GanttObject

    def deserialize_entity(self, context, entity):
        try:
            return super().deserialize_entity(context, entity)
        except (ovo_exception.VersionedObjectsException, ValueError,
                TypeError, KeyError) as error:
            raise exception.InvalidRequest(
                reason='cannot read the payload as a Gantt object: %s: %s'
                % (type(error).__name__, error))
