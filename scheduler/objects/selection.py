"""Selection: one host chosen (or offered as an alternate) for an instance.

``select_destinations`` answers, per instance, a list whose first Selection
is claimed and whose following ones are alternates: their
``allocation_request`` says what the conductor must claim to use them.
"""

from oslo_serialization import jsonutils
from oslo_utils import versionutils
from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields

from scheduler import exception
from scheduler.objects import base
from scheduler.resources import names
from scheduler import validation

# What an allocation_request may ask for, and the most of each.
_RESOURCE_BOUNDS = {'vcpus': validation.MAX_VCPUS,
                    'memory_mb': validation.MAX_MEMORY_MB,
                    'disk_gb': validation.MAX_DISK_GB}


# Every field holds a JSON-ready value once set (strings, a bool, a dict
# of floats), so the primitive is the values themselves.
_FIELD_NAMES = ('compute_node_uuid', 'service_host', 'nodename', 'limits',
                'allocation_request', 'claimed', 'cell_uuid')
_UNSET = object()


def _text(value):
    """A string field's value: the string (or None) as it is."""
    if value is None or type(value) is str:
        return value
    return str(value)


# {resources: allocation_request JSON}: requests of one flavor share it.
_request_jsons = {}


# The key of allocation_request that holds the classes beyond VCPU,
# MEMORY_MB and DISK_GB ({class: amount}), when the request asks any.
EXTRA_KEY = 'resource_classes'


def _request_json(resources, extra=None):
    if extra:
        request = dict(resources._asdict())
        request[EXTRA_KEY] = dict(extra)
        return jsonutils.dumps(request)
    key = (type(resources), resources)
    found = _request_jsons.get(key)
    if found is None:
        found = jsonutils.dumps(dict(resources._asdict()))
        if len(_request_jsons) > 256:
            _request_jsons.clear()
        _request_jsons[key] = found
    return found


def _limits(selection, limits):
    """``limits`` as the ``limits`` field of ``selection`` holds them (a
    dict coercing its values to floats): the field's own coercion, but
    for a dict of floats, which it would copy value by value."""
    coerced = base.as_coerced(selection, 'limits', limits or None)
    if coerced is None:
        coerced = Selection.fields['limits'].coerce(
            selection, 'limits', dict(limits or {}))
    return coerced


def _validate_extra(field, extra):
    validation.mapping(field, extra)
    for name, amount in extra.items():
        try:
            names.check_resource_class(name, where=field)
        except exception.InvalidResourceRequest as error:
            validation.refuse(field, str(error))
        validation.integer('%s.%s' % (field, name), amount,
                           high=validation.MAX_INT32)


@base.GanttObjectRegistry.register
class Selection(base.GanttObject):
    # Version 1.0: Initial version
    # Version 1.1: cell_uuid (the cell of the host; None: no cells)
    VERSION = '1.1'

    fields = {
        'compute_node_uuid': base.UUIDField(nullable=True),
        'service_host': fields.StringField(),
        'nodename': fields.StringField(),
        'limits': base.DictOfFloatsField(default={}),
        'allocation_request': fields.StringField(nullable=True),
        'claimed': fields.BooleanField(default=False),
        'cell_uuid': base.UUIDField(nullable=True, default=None),
    }

    @classmethod
    def for_host(cls, host_state, resources, claimed, limits=None,
                 extra=None):
        """Build a Selection for a HostState-like object and a request.

        Every answer builds one per host offered, so the values known to
        have their field's type are set without the fields' coercion
        (the host's strings from its database row, a bool, the request's
        JSON); ``limits`` still goes through its field unless its values
        are floats already.
        """
        selection = cls.__new__(cls)
        ovo_base.VersionedObject.__init__(selection)
        selection._obj_limits = _limits(selection, limits)
        selection._obj_compute_node_uuid = _text(host_state.uuid)
        selection._obj_service_host = _text(host_state.host)
        selection._obj_nodename = _text(host_state.nodename)
        selection._obj_allocation_request = _request_json(resources, extra)
        selection._obj_claimed = bool(claimed)
        selection._obj_cell_uuid = _text(getattr(host_state, 'cell_uuid',
                                                 None))
        selection._changed_fields.update(_FIELD_NAMES)
        return selection

    def obj_make_compatible(self, primitive, target_version):
        """A peer older than 1.1 knows no ``cell_uuid``: it finds the
        host's cell from its host mapping, as before."""
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('cell_uuid', None)

    def obj_to_primitive(self, target_version=None, version_manifest=None):
        """The same primitive as oslo.versionedobjects' generic walk, built
        directly: every answer of ``select_destinations`` carries one
        Selection per host offered, and the generic walk over the fields
        costs ten times more. Another target version takes the generic
        path."""
        if target_version not in (None, self.VERSION):
            return super().obj_to_primitive(target_version, version_manifest)
        data = {}
        for name in _FIELD_NAMES:
            value = getattr(self, '_obj_' + name, _UNSET)
            if value is not _UNSET:
                data[name] = dict(value) if name == 'limits' else value
        namespace = self.OBJ_SERIAL_NAMESPACE
        primitive = {namespace + '.name': self.obj_name(),
                     namespace + '.namespace': self.OBJ_PROJECT_NAMESPACE,
                     namespace + '.version': self.VERSION,
                     namespace + '.data': data}
        # No field holds an object: what changed is the changed fields
        # (sorted: equal Selections have equal primitives, see
        # ComparableVersionedObject).
        changes = self._changed_fields
        if changes:
            primitive[namespace + '.changes'] = sorted(changes)
        return primitive

    def requested_resources(self):
        """The resources ``allocation_request`` asks for, as a dict (the
        classes beyond the classic three under :data:`EXTRA_KEY`)."""
        if not self.allocation_request:
            return {}
        return jsonutils.loads(self.allocation_request)

    def validate(self, field='selection'):
        """Raise InvalidRequest naming the first field that is missing or
        malformed (a Selection sent back by a compute, e.g.)."""
        validation.fields_set(field, self, ('compute_node_uuid',
                                            'service_host', 'nodename'))
        validation.name('%s.service_host' % field, self.service_host)
        validation.name('%s.nodename' % field, self.nodename)
        request = validation.text('%s.allocation_request' % field,
                                  self.obj_get('allocation_request'),
                                  validation.MAX_NAME_LEN, nullable=True)
        if not request:
            return self
        try:
            wanted = jsonutils.loads(request)
        except ValueError:
            validation.refuse('%s.allocation_request' % field,
                              'is not JSON')
        validation.mapping('%s.allocation_request' % field, wanted)
        extra = wanted.get(EXTRA_KEY)
        if extra is not None:
            _validate_extra('%s.allocation_request.%s' % (field, EXTRA_KEY),
                            extra)
            wanted = {name: value for name, value in wanted.items()
                      if name != EXTRA_KEY}
        if set(wanted) != set(_RESOURCE_BOUNDS):
            validation.refuse('%s.allocation_request' % field,
                              'must name exactly %s'
                              % ', '.join(sorted(_RESOURCE_BOUNDS)))
        for name, high in _RESOURCE_BOUNDS.items():
            validation.integer('%s.allocation_request.%s' % (field, name),
                               wanted[name], high=high)
        return self

    def to_legacy_dict(self):
        """The ``{host, nodename, limits}`` dict of the 1.0 API."""
        return {'host': self.service_host, 'nodename': self.nodename,
                'limits': dict(self.limits)}
