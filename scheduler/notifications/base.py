"""The versioned payloads' base class and the payloads every family shares.

A versioned notification carries its payload as Nova's do: a versioned
object serialized under the ``nova_object`` keys, so that a consumer
written for Nova's notifications reads Gantt's::

    {"nova_object.name": "FlavorPayload",
     "nova_object.namespace": "gantt",
     "nova_object.version": "1.0",
     "nova_object.data": {"flavorid": "42", "memory_mb": 512, ...}}

Payload names and fields follow Nova's where Gantt has the data; versions
start at 1.0 in the ``gantt`` namespace, and any field change bumps them.
Payloads are built from Gantt's RPC objects and database rows by the
``from_*`` constructors, and turned into primitives when queued (so that
what is sent is what was true when the event happened).
"""

from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields

from scheduler.objects import base as objects_base


class PayloadRegistry(ovo_base.VersionedObjectRegistry):
    pass


class NotificationPayload(ovo_base.VersionedObject):
    """Base of every versioned notification payload."""

    OBJ_SERIAL_NAMESPACE = 'nova_object'
    OBJ_PROJECT_NAMESPACE = 'gantt'

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # Every field is sent, unset ones as their default or None.
        for name, field in self.fields.items():
            if name in kwargs:
                continue
            if field.default != fields.UnspecifiedDefault:
                self.obj_set_defaults(name)
            elif field.nullable:
                setattr(self, name, None)


    def to_primitive(self):
        """The ``nova_object.*`` form a versioned notification carries
        (without ``nova_object.changes``, as Nova's samples)."""
        self.obj_reset_changes(recursive=True)
        return self.obj_to_primitive()

    def to_plain(self):
        """The fields as a plain dict, nested payloads too (what a legacy
        notification carries)."""
        return _unwrap(self.to_primitive())


def _unwrap(value):
    if isinstance(value, dict):
        if 'nova_object.data' in value:
            return _unwrap(value['nova_object.data'])
        return {key: _unwrap(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unwrap(item) for item in value]
    return value


@PayloadRegistry.register
class ExceptionPayload(NotificationPayload):
    """What failed: Gantt keeps a fault as text, so the exception's class
    name is read from its front (``NoValidHost: ...``) when it has one."""

    VERSION = '1.0'
    fields = {
        'module_name': fields.StringField(nullable=True),
        'function_name': fields.StringField(nullable=True),
        'exception': fields.StringField(nullable=True),
        'exception_message': fields.StringField(nullable=True),
        'traceback': fields.StringField(nullable=True),
    }

    @classmethod
    def from_exception(cls, error, function_name=None):
        # An exception raised by another service arrives as a subclass
        # named <class>_Remote in <module>_Remote: name the original.
        return cls(module_name=_original(type(error).__module__),
                   function_name=function_name,
                   exception=_original(type(error).__name__),
                   exception_message=_message(error))

    @classmethod
    def from_fault(cls, fault):
        name, sep, rest = (fault or '').partition(': ')
        if sep and name.isidentifier():
            return cls(exception=name, exception_message=rest)
        return cls(exception=None, exception_message=fault)


def _original(name):
    return name[:-len(_REMOTE)] if name.endswith(_REMOTE) else name


_REMOTE = '_Remote'


def _message(error):
    message = getattr(error, 'message', None)
    if not isinstance(message, str):
        message = str(error)
    return message.split('\nTraceback (most recent call last):', 1)[0]


@PayloadRegistry.register
class FlavorPayload(NotificationPayload):
    VERSION = '1.0'
    fields = {
        'flavorid': fields.StringField(nullable=True),
        'name': fields.StringField(nullable=True),
        'memory_mb': fields.IntegerField(nullable=True),
        'vcpus': fields.IntegerField(nullable=True),
        'root_gb': fields.IntegerField(nullable=True),
        'ephemeral_gb': fields.IntegerField(nullable=True),
        'swap': fields.IntegerField(nullable=True),
        'extra_specs': objects_base.DictOfStringsField(nullable=True),
    }

    @classmethod
    def from_values(cls, values):
        """From a Flavor object or the dict ``instances.flavor`` holds."""
        if values is None:
            return None
        get = (values.get if isinstance(values, dict)
               else lambda name: getattr(values, name, None))
        return cls(**{name: get(name) for name in cls.fields})


@PayloadRegistry.register
class ImageMetaPayload(NotificationPayload):
    VERSION = '1.0'
    fields = {
        'id': fields.StringField(nullable=True),
        'name': fields.StringField(nullable=True),
        'properties': objects_base.DictOfNullableStringsField(nullable=True),
    }

    @classmethod
    def from_image(cls, image):
        if image is None:
            return None
        return cls(id=image.obj_get('id'), name=image.obj_get('name'),
                   properties=dict(image.obj_get('properties', {})))
