"""Nova's ``nova_object`` primitives, read without importing Nova.

Nova's RPC payloads are oslo.versionedobjects primitives in the ``nova``
namespace::

    {'nova_object.name': 'Flavor', 'nova_object.namespace': 'nova',
     'nova_object.version': '1.2', 'nova_object.data': {...},
     'nova_object.changes': ['vcpus', ...]}

:func:`decode` turns one (and every object nested in its data, its lists
and dicts) into a :class:`NovaObject`: the name, the version as a tuple
and the data as plain values. It is tolerant: fields it does not know are
kept, a minor version newer than Nova 34's is read, ``changes`` is
ignored. It refuses, with :class:`scheduler.exception.InvalidRequest`
naming the field, what it cannot trust: another namespace (``gantt``
objects do not come this way), a major version other than the one Gantt
reads, a name or version that is not a string of the right form, data
that is not a dict::

    spec = primitives.decode(args['spec_obj'], 'spec_obj')
    spec.name, spec.version        # 'RequestSpec', (1, 15)
    spec.get('flavor').get('vcpus')
"""

import re

from scheduler import exception

PREFIX = 'nova_object.'
NAMESPACE = 'nova'
_KEYS = frozenset(PREFIX + key for key in ('name', 'namespace', 'version',
                                            'data', 'changes'))
_VERSION = re.compile(r'(\d{1,4})\.(\d{1,4})\Z')
# How deep objects, lists and dicts may nest (a RequestSpec is 6 deep).
MAX_DEPTH = 32

# The major version of each object Gantt reads, as Nova 34 sends them;
# an object not named here is kept as data whatever its version.
MAJOR_VERSIONS = {
    'Aggregate': 1, 'CellMapping': 1, 'ComputeNode': 1,
    'ComputeNodeList': 1, 'Destination': 1, 'Flavor': 1, 'ImageMeta': 1,
    'ImageMetaProps': 1, 'Instance': 2, 'InstanceGroup': 1,
    'InstanceList': 2, 'InstanceNUMACell': 1, 'InstanceNUMATopology': 1,
    'InstancePCIRequest': 1, 'InstancePCIRequests': 1,
    'NetworkMetadata': 1, 'NetworkRequest': 1, 'NetworkRequestList': 1,
    'RequestGroup': 1, 'RequestLevelParams': 1, 'RequestSpec': 1,
    'SchedulerLimits': 1, 'SchedulerRetries': 1, 'SecurityGroup': 1,
    'SecurityGroupList': 1, 'Selection': 1,
}


class NovaObject:
    """One decoded ``nova_object``: ``name``, ``version`` (a tuple of
    ints), ``data`` (field name -> plain value or NovaObject) and
    ``field``, where the payload carried it (for messages)."""

    __slots__ = ('name', 'version', 'data', 'field')

    def __init__(self, name, version, data, field):
        self.name = name
        self.version = version
        self.data = data
        self.field = field

    def get(self, key, default=None):
        """The field's value; ``default`` when unset or None."""
        value = self.data.get(key)
        return default if value is None else value

    def __contains__(self, key):
        return key in self.data

    def __repr__(self):
        return '<NovaObject %s %d.%d at %s>' % (
            self.name, self.version[0], self.version[1], self.field)

    def objects(self):
        """The items of a Nova ``...List`` object (its ``objects``)."""
        return list(self.get('objects', []))


def refuse(field, reason):
    raise exception.InvalidRequest(reason='%s %s' % (field, reason))


def is_primitive(value):
    """Whether ``value`` is (or claims to be) an object primitive of any
    namespace: a dict with ``<namespace>_object.name``."""
    return isinstance(value, dict) and any(
        isinstance(key, str) and key.endswith('_object.name')
        for key in value)


def decode(value, field, depth=0):
    """``value`` with every ``nova_object`` in it decoded (see the module
    docstring); InvalidRequest naming ``field`` (a dotted path) for what
    it refuses."""
    if depth > MAX_DEPTH:
        refuse(field, 'nests deeper than %d levels' % MAX_DEPTH)
    if isinstance(value, dict):
        if is_primitive(value):
            return _object(value, field, depth)
        decoded = {}
        for key, item in value.items():
            if not isinstance(key, str):
                refuse(field, 'has a key that is not a string: %r' % (key,))
            decoded[key] = decode(item, '%s[%r]' % (field, key), depth + 1)
        return decoded
    if isinstance(value, (list, tuple)):
        return [decode(item, '%s[%d]' % (field, index), depth + 1)
                for index, item in enumerate(value)]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    refuse(field, 'holds a %s, not JSON data' % type(value).__name__)


def _object(primitive, field, depth):
    if PREFIX + 'name' not in primitive:
        other = next(key for key in primitive
                     if isinstance(key, str) and key.endswith('_object.name'))
        refuse(field, 'is not a Nova object (a %s primitive)'
               % other[:-len('.name')])
    namespace = primitive.get(PREFIX + 'namespace')
    if namespace != NAMESPACE:
        refuse(field, 'is not a Nova object (namespace %r, expected %r)'
               % (namespace, NAMESPACE))
    name = primitive[PREFIX + 'name']
    if not isinstance(name, str) or not re.match(r'[A-Za-z]\w{0,63}\Z',
                                                 name):
        refuse(field, 'has a malformed object name %r' % (name,))
    version = primitive.get(PREFIX + 'version')
    match = _VERSION.match(version) if isinstance(version, str) else None
    if match is None:
        refuse(field, '(%s) has a malformed version %r' % (name, version))
    version = (int(match.group(1)), int(match.group(2)))
    major = MAJOR_VERSIONS.get(name)
    if major is not None and version[0] != major:
        refuse(field, '(%s) has version %d.%d; Gantt reads %s %d.x'
               % (name, version[0], version[1], name, major))
    data = primitive.get(PREFIX + 'data')
    if not isinstance(data, dict):
        refuse(field, '(%s) has no data dict' % name)
    unknown = set(primitive) - _KEYS
    if unknown:
        refuse(field, '(%s) has unknown keys %s' % (name, sorted(unknown)))
    values = {}
    for key, item in data.items():
        if not isinstance(key, str):
            refuse(field, '(%s) has a field name that is not a string'
                   % name)
        values[key] = decode(item, '%s.%s' % (field, key), depth + 1)
    return NovaObject(name, version, values, field)


def expect(value, field, name, nullable=False):
    """``value`` (decoded) checked to be a NovaObject named ``name``
    (None allowed with ``nullable``)."""
    if value is None and nullable:
        return None
    if not isinstance(value, NovaObject) or value.name != name:
        found = (value.name if isinstance(value, NovaObject)
                 else type(value).__name__)
        refuse(field, 'must be a Nova %s object, not %s' % (name, found))
    return value


def to_primitive(value):
    """``value`` (what :func:`decode` gave) as a ``nova_object``
    primitive again, for those that read primitives (Nova's
    notifications): every field of a decoded object counts as changed."""
    if isinstance(value, NovaObject):
        return encode(value.name, '%d.%d' % value.version,
                      {key: to_primitive(item)
                       for key, item in value.data.items()})
    if isinstance(value, dict):
        return {key: to_primitive(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_primitive(item) for item in value]
    return value


def encode(name, version, data, changes=None):
    """A ``nova_object`` primitive (the other way): ``changes`` defaults
    to every field in ``data``, as a freshly built Nova object sends."""
    primitive = {PREFIX + 'name': name, PREFIX + 'namespace': NAMESPACE,
                 PREFIX + 'version': version, PREFIX + 'data': data}
    changes = sorted(data) if changes is None else changes
    if changes:
        primitive[PREFIX + 'changes'] = list(changes)
    return primitive
