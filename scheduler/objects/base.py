"""Registry, base class and RPC serializer of Gantt's versioned objects.

Objects are serialized by oslo.versionedobjects under the namespace
``gantt_object``. A payload that cannot be turned back into an object (an
unknown class, a wrong field type, a newer version than this service knows)
becomes :class:`scheduler.exception.InvalidRequest`, so the caller reads why
its message was refused; a version it does not serve is named with those
it does::

    Invalid request: RequestSpec version 1.99 is not served here; versions
    served: 1.0

(An RPC server logs that refusal in one line: see ``scheduler.rpc``.)
"""

import copy
import re

from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import exception as ovo_exception
from oslo_versionedobjects import fields

from scheduler import exception


class GanttObjectRegistry(ovo_base.VersionedObjectRegistry):
    pass


# Values a default may share between objects without a copy.
_IMMUTABLE = (type(None), bool, int, float, str, bytes, tuple, frozenset)


class GanttObject(ovo_base.VersionedObject,
                  ovo_base.ComparableVersionedObject):
    OBJ_SERIAL_NAMESPACE = 'gantt_object'
    OBJ_PROJECT_NAMESPACE = 'gantt'

    def __init__(self, context=None, **kwargs):
        super().__init__(context, **kwargs)
        # Fields left out take their declared defaults, so that readers
        # never meet an unset field that has a default.
        self._set_defaults(kwargs)

    def _set_defaults(self, given):
        """Set each field with a declared default that ``given`` (names)
        lacks to that default, as a changed field.

        The same as oslo.versionedobjects' ``obj_set_defaults`` on a new
        object, without its per-field cost (it coerces and deep-copies
        each default and lists every field name to check it is unset):
        each class coerces its immutable defaults once; a mutable one is
        copied and set through the field per object."""
        defaults = type(self).__dict__.get('_gantt_defaults')
        if defaults is None:
            defaults = []
            for name, field in self.fields.items():
                if field.default == fields.UnspecifiedDefault:
                    continue
                value = field.default
                if isinstance(value, _IMMUTABLE):
                    defaults.append((name, '_obj_' + name,
                                     field.coerce(self, name, value), False))
                else:
                    defaults.append((name, name, value, True))
            type(self)._gantt_defaults = defaults
        changed = self._changed_fields
        for name, attribute, value, mutable in defaults:
            if name in given:
                continue
            if mutable:
                # Through the field's setter, on a copy, as ovo does.
                setattr(self, name, copy.deepcopy(value))
            else:
                setattr(self, attribute, value)
                changed.add(name)

    @classmethod
    def _obj_from_primitive(cls, context, objver, primitive):
        """An object from its primitive (see oslo.versionedobjects): the
        fields the primitive carries are coerced (a wrong type is
        refused), the others take their defaults. Unlike the
        generic path, no default is set first only to be overwritten:
        every RPC request pays this."""
        self = cls.__new__(cls)
        ovo_base.VersionedObject.__init__(self, context)
        self.VERSION = objver
        data = cls._obj_primitive_field(primitive, 'data')
        values = self.__dict__
        plain = _plain_kinds(cls)
        for name, field in self.fields.items():
            if name not in data:
                continue
            value = data[name]
            kind = plain[name]
            if kind is not None:
                # Values already of the field's type, taken as they are.
                taken = _plain_value(self, name, kind, field, value)
                if taken is not _NOT_PLAIN:
                    values['_obj_' + name] = taken
                    continue
            # What the field's setter does, less its bookkeeping (the
            # changed fields are the primitive's, below).
            values['_obj_' + name] = field.coerce(
                self, name, field.from_primitive(self, name, value))
        self._set_defaults(data)
        changes = cls._obj_primitive_field(primitive, 'changes', [])
        self._changed_fields = {name for name in changes
                                if name in self.fields}
        return self

    def obj_to_primitive(self, target_version=None, version_manifest=None):
        """oslo.versionedobjects' primitive, built without its per-field
        overhead when no other version is asked for (the caller of every
        request serializes its spec; see obj_what_changed). Another
        version, or a manifest, takes the generic path."""
        if (target_version not in (None, self.VERSION)
                or version_manifest):
            return super().obj_to_primitive(target_version,
                                            version_manifest)
        values = self.__dict__
        data = {}
        for name, field in self.fields.items():
            key = '_obj_' + name
            if key in values:
                data[name] = field.to_primitive(self, name, values[key])
        key = self._obj_primitive_key
        primitive = {key('name'): self.obj_name(),
                     key('namespace'): self.OBJ_PROJECT_NAMESPACE,
                     key('version'): self.VERSION,
                     key('data'): data}
        changes = [name for name in self.obj_what_changed() if name in data]
        if changes:
            primitive[key('changes')] = changes
        return primitive

    def obj_what_changed(self):
        """The fields changed, here or inside a field's object (as
        oslo.versionedobjects says), reading each set value once."""
        fields_ = self.fields
        changes = {name for name in self._changed_fields if name in fields_}
        values = self.__dict__
        for name in fields_:
            value = values.get('_obj_' + name)
            if (name not in changes
                    and isinstance(value, ovo_base.VersionedObject)
                    and value.obj_what_changed()):
                changes.add(name)
        return changes

    def obj_attr_is_set(self, attrname):
        """oslo.versionedobjects' check, without building the list of
        every field name at each call: serializing a request spec asks
        it for each field of each object, several times over (its
        ``obj_what_changed`` too)."""
        if attrname not in self.fields and (
                attrname not in self.obj_extra_fields):
            raise AttributeError("%s object has no attribute '%s'"
                                 % (self.obj_name(), attrname))
        return hasattr(self, '_obj_' + attrname)

    def obj_shallow_copy(self):
        """A new object of this class with the same field values (the
        same objects: what is written inside one is written inside
        both) and the same changed fields. Setting a field of the copy
        leaves this object as it is: for a caller that sets a few fields
        anew where ``obj_clone`` would copy every nested object."""
        copied = type(self).__new__(type(self))
        copied.__dict__.update(self.__dict__)
        copied._changed_fields = set(self._changed_fields)
        return copied

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


# Field types whose coercion and from_primitive give back a value of this
# Python type (exactly) unchanged: a primitive's value of that type is
# taken as it is. (A UUID field keeps any string, warning when it is not
# a UUID: only a UUID's canonical form is taken as it is.)
_PLAIN_TYPES = {fields.String: str, fields.UUID: str, fields.Boolean: bool,
                fields.Integer: int, fields.Float: float}
_UUID = re.compile(r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-'
                   r'[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z')
# A dict field of floats (see _plain_kind); a value _plain_value refuses.
_FLOATS = 'dict of floats'
_NOT_PLAIN = object()


def _plain_kind(field):
    """What :func:`_plain_value` needs of ``field``: the Python type its
    values already have when coercion would not change them, ``_FLOATS``
    for a dict of floats, or None (every value goes through the
    field)."""
    field_type = type(field._type)
    if issubclass(field_type, fields.Dict) and type(
            field._type._element_type._type) is fields.Float:
        return _FLOATS
    return _PLAIN_TYPES.get(field_type)


def _plain_kinds(cls):
    """``{field name: _plain_kind}`` of a class, built once."""
    kinds = cls.__dict__.get('_gantt_plain')
    if kinds is None:
        kinds = cls._gantt_plain = {name: _plain_kind(field)
                                    for name, field in cls.fields.items()}
    return kinds


def _plain_value(obj, name, kind, field, value):
    """What ``field`` would make of ``value`` (from a primitive) for
    ``obj``'s field ``name``, when that is ``value`` itself (for a dict
    of floats, the same values in the dict that coerces what is set in
    it later); else ``_NOT_PLAIN``."""
    if value is None:
        return None if field.nullable else _NOT_PLAIN
    if kind is _FLOATS:
        if type(value) is not dict or not all(
                type(key) is str and type(item) is float
                for key, item in value.items()):
            return _NOT_PLAIN
        coerced = fields.CoercedDict(value)
        # (Not pointing back at ``obj``: see Dict.)
        coerced.enable_coercing(field._type._element_type, None, name)
        return coerced
    if type(value) is not kind or (isinstance(field._type, fields.UUID)
                                   and not _UUID.match(value)):
        return _NOT_PLAIN
    return value


def as_coerced(obj, name, value):
    """``value`` as ``obj``'s field ``name`` holds it once set, when that
    is ``value`` itself (see :func:`_plain_value`), else None: a caller
    that builds objects by the hundred sets it without the field's
    coercion."""
    kind = _plain_kinds(type(obj))[name]
    taken = (_NOT_PLAIN if kind is None or value is None
             else _plain_value(obj, name, kind, obj.fields[name], value))
    return None if taken is _NOT_PLAIN else taken


class Dict(fields.Dict):
    """oslo.versionedobjects' Dict, whose dicts do not point back at the
    object that holds them.

    Its CoercedDict keeps the object only to pass it to the element
    type's coercion of a value set in the dict later, and no element
    type of these objects reads it (strings, floats, lists of strings).
    That reference made each object with a dict field a reference cycle
    (the object, its dict, the object), freed only by the cyclic garbage
    collector: every request's spec and every selection, whose
    collections stalled requests. Without it they are freed when the
    last reference goes. (Same class name: the objects' fingerprints do
    not change.)"""

    def coerce(self, obj, attr, value):
        return super().coerce(None, attr, value)


class List(fields.List):
    """oslo.versionedobjects' List without the reference back to its
    object (see Dict); a list of strings whose items are all ``str``
    taken as they are (the generic coercion converts each item with
    ``str()``, which gives a ``str`` back unchanged, for a microsecond
    an item: a server group's members and hosts are set again for each
    instance a request places)."""

    def __init__(self, element_type, **field_args):
        super().__init__(element_type, **field_args)
        self._strings = type(element_type) is fields.String

    def coerce(self, obj, attr, value):
        if self._strings and type(value) is list and all(
                type(item) is str for item in value):
            # What the generic coercion returns: a list that coerces
            # what is added to it later.
            coerced = fields.CoercedList()
            coerced.enable_coercing(self._element_type, None, attr)
            list.extend(coerced, value)
            return coerced
        return super().coerce(None, attr, value)


class UUID(fields.UUID):
    """oslo.versionedobjects' UUID, which takes a UUID in its canonical
    form as it is: the generic coercion sets up a context for its
    warning about a malformed one (and resets the process's warning
    filters) on every value, several microseconds each time a request's
    later instance is named in its spec. Any other value goes through
    the generic coercion, warning included."""

    def coerce(self, obj, attr, value):
        if type(value) is str and _UUID.match(value):
            return value
        return super().coerce(obj, attr, value)


_PLAIN_TYPES[UUID] = str


class UUIDField(fields.AutoTypedField):
    AUTO_TYPE = UUID()


class DictOfStringsField(fields.AutoTypedField):
    AUTO_TYPE = Dict(fields.String())


class DictOfNullableStringsField(fields.AutoTypedField):
    AUTO_TYPE = Dict(fields.String(), nullable=True)


class ListOfStringsField(fields.AutoTypedField):
    AUTO_TYPE = List(fields.String())


class ListOfListsOfStringsField(fields.AutoTypedField):
    AUTO_TYPE = List(List(fields.String()))


class DictOfListOfStringsField(fields.AutoTypedField):
    AUTO_TYPE = Dict(List(fields.String()))


class DictOfFloatsField(fields.AutoTypedField):
    AUTO_TYPE = Dict(fields.Float())


def served_versions(objname):
    """The versions of the object ``objname`` this process reads, for a
    message: ``'1.0 to 1.1'`` (a minor version reads the lower ones of
    its major version), ``'none'`` for a name it does not know."""
    versions = []
    for cls in GanttObjectRegistry.obj_classes().get(objname, ()):
        major, minor = cls.VERSION.split('.')
        versions.append(cls.VERSION if minor == '0'
                        else '%s.0 to %s' % (major, cls.VERSION))
    return ', '.join(sorted(versions)) or 'none'


class GanttObjectSerializer(ovo_base.VersionedObjectSerializer):
    OBJ_BASE_CLASS = GanttObject

    def deserialize_entity(self, context, entity):
        try:
            return super().deserialize_entity(context, entity)
        except ovo_exception.IncompatibleObjectVersion as error:
            objname = error.kwargs.get('objname')
            raise exception.InvalidRequest(
                reason='%s version %s is not served here; versions '
                'served: %s' % (objname, error.kwargs.get('objver'),
                                served_versions(objname)))
        except (ovo_exception.VersionedObjectsException, ValueError,
                TypeError, KeyError, AttributeError) as error:
            # AttributeError: a dict field given a number, say (the
            # field's from_primitive calls its items()).
            raise exception.InvalidRequest(
                reason='cannot read the payload as a Gantt object: %s: %s'
                % (type(error).__name__, error))
