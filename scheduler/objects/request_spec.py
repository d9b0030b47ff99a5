"""RequestSpec and the objects it carries: what a boot asks of a host.

The conductor builds one RequestSpec per boot request (``num_instances``
servers of one flavor) and sends it to the scheduler. Older clients send
Nova's legacy ``request_spec`` and ``filter_properties`` dicts instead;
:meth:`RequestSpec.from_primitives` turns them into the same object::

    spec = RequestSpec.from_primitives(request_spec, filter_properties)
    spec.resources()   # Resources(vcpus=2, memory_mb=4096, disk_gb=41)
"""

import contextlib
import math

from oslo_utils import versionutils
from oslo_versionedobjects import fields

from scheduler import exception
from scheduler.numa import request as numa_request
from scheduler.objects import base
from scheduler import placement_types
from scheduler import validation

# The flavor's sizes, the least and the most each may ask for. As Nova's
# flavor create: at least 1 vCPU and 1 MB of RAM, no negative disk or
# swap (Nova's ceiling, the SQL int32, is above scheduler.validation's).
FLAVOR_SIZE_BOUNDS = (
    ('vcpus', 1, validation.MAX_VCPUS),
    ('memory_mb', 1, validation.MAX_MEMORY_MB),
    ('root_gb', 0, validation.MAX_DISK_GB),
    ('ephemeral_gb', 0, validation.MAX_DISK_GB),
    ('swap', 0, validation.MAX_SWAP_MB),
)


@base.GanttObjectRegistry.register
class Flavor(base.GanttObject):
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'name': fields.StringField(nullable=True, default=None),
        'flavorid': fields.StringField(nullable=True, default=None),
        'vcpus': fields.IntegerField(),
        'memory_mb': fields.IntegerField(),
        'root_gb': fields.IntegerField(default=0),
        'ephemeral_gb': fields.IntegerField(default=0),
        'swap': fields.IntegerField(default=0),
        'extra_specs': base.DictOfStringsField(default={}),
    }


@base.GanttObjectRegistry.register
class ImageMeta(base.GanttObject):
    # Version 1.0: Initial version
    # Version 1.1: disk_format
    VERSION = '1.1'

    fields = {
        'id': fields.StringField(nullable=True, default=None),
        'name': fields.StringField(nullable=True, default=None),
        'properties': base.DictOfNullableStringsField(default={}),
        # Glance's disk format (qcow2, raw...): the image type a host
        # must support ([scheduler] query_placement_for_image_type_support).
        'disk_format': fields.StringField(nullable=True, default=None),
    }

    def obj_make_compatible(self, primitive, target_version):
        """A 1.0 peer knows no disk format: no image type is asked."""
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('disk_format', None)


@base.GanttObjectRegistry.register
class CellMapping(base.GanttObject):
    """A cell, as a request names it (Nova's CellMapping, the fields the
    scheduler reads)."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'uuid': base.UUIDField(),
        'name': fields.StringField(nullable=True, default=None),
    }


@base.GanttObjectRegistry.register
class Destination(base.GanttObject):
    """Where a request must go: a host, a node, a set of aggregates, a
    cell.

    ``cell`` with ``allow_cross_cell_move`` False (Nova's default) keeps
    the request in that cell; with it True, hosts of that cell are only
    preferred (the CrossCellWeigher).
    """

    # Version 1.0: Initial version
    # Version 1.1: cell, allow_cross_cell_move
    VERSION = '1.1'

    fields = {
        'host': fields.StringField(nullable=True, default=None),
        'node': fields.StringField(nullable=True, default=None),
        'aggregates': base.ListOfStringsField(nullable=True, default=None),
        'cell': fields.ObjectField('CellMapping', nullable=True,
                                   default=None),
        'allow_cross_cell_move': fields.BooleanField(default=False),
    }

    # Which CellMapping version each Destination version carries.
    obj_relationships = {'cell': [('1.1', '1.0')]}

    def obj_make_compatible(self, primitive, target_version):
        """A 1.0 peer knows no cell: the request is not kept in one."""
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('cell', None)
            primitive.pop('allow_cross_cell_move', None)


@base.GanttObjectRegistry.register
class SchedulerRetries(base.GanttObject):
    """The hosts already tried for an instance, as ``[host, node]`` pairs."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'num_attempts': fields.IntegerField(default=0),
        'hosts': base.ListOfListsOfStringsField(default=[]),
    }


@base.GanttObjectRegistry.register
class InstanceGroup(base.GanttObject):
    """A server group as the scheduler sees it (policy, members' hosts)."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'uuid': base.UUIDField(),
        'name': fields.StringField(nullable=True, default=None),
        'policy': fields.StringField(),
        'rules': base.DictOfStringsField(default={}),
        'members': base.ListOfStringsField(default=[]),
        'hosts': base.ListOfStringsField(default=[]),
    }


def validate_flavor(flavor, field='flavor'):
    """Raise InvalidRequest unless ``flavor`` is a Flavor whose sizes are
    set and within FLAVOR_SIZE_BOUNDS (a flavor of 0 vCPUs or 0 MB of RAM
    is refused, as Nova refuses to create one)."""
    validation.instance_of(field, flavor, Flavor)
    for size, low, high in FLAVOR_SIZE_BOUNDS:
        if not flavor.obj_attr_is_set(size):
            validation.refuse('%s.%s' % (field, size), 'is missing')
        validation.integer('%s.%s' % (field, size), getattr(flavor, size),
                           low=low, high=high)
    for name in ('name', 'flavorid'):
        validation.text('%s.%s' % (field, name), flavor.obj_get(name),
                        validation.MAX_NAME_LEN, nullable=True)
    validation.string_dict('%s.extra_specs' % field,
                           flavor.obj_get('extra_specs', {}))
    return flavor


def validate_image(image, field='image'):
    """Raise InvalidRequest unless ``image`` is an ImageMeta with bounded
    strings."""
    validation.instance_of(field, image, ImageMeta)
    for name in ('id', 'name'):
        validation.text('%s.%s' % (field, name), image.obj_get(name),
                        validation.MAX_NAME_LEN, nullable=True)
    validation.string_dict('%s.properties' % field,
                           image.obj_get('properties', {}),
                           nullable_values=True)
    return image


# The extra specs that replace the flavor's sizes, in Resources' order.
_OVERRIDES = ('resources:VCPU', 'resources:MEMORY_MB', 'resources:DISK_GB')
# Extra specs that may make pinned vCPUs PCPU rather than VCPU.
_PINNING = frozenset(('resources:PCPU', 'hw:cpu_policy'))


def _shared_vcpus(flavor, extra_specs, properties):
    """The flavor's vCPUs that are not pinned (Nova's VCPU amount)."""
    if 'resources:PCPU' in extra_specs:
        return 0
    policy = extra_specs.get('hw:cpu_policy') or properties.get(
        'hw_cpu_policy')
    if policy == 'dedicated':
        return 0
    if policy != 'mixed':
        return flavor.vcpus
    try:
        numa = numa_request.get_request(flavor.vcpus, flavor.memory_mb,
                                        extra_specs, properties)
    except exception.InvalidRequest:
        # Refused, naming the problem, when the request is read.
        return flavor.vcpus
    pinned = sum(len(cell.pcpuset) for cell in numa.cells) if numa else 0
    return flavor.vcpus - pinned


# Where RequestSpec.resources_held keeps the resources (not a field: never
# sent, never compared).
_HELD = '_held_resources'


@base.GanttObjectRegistry.register
class RequestSpec(base.GanttObject):
    # Version 1.0: Initial version
    # Version 1.1: is_bfv; ImageMeta 1.1
    VERSION = '1.1'

    fields = {
        'instance_uuid': base.UUIDField(nullable=True, default=None),
        'num_instances': fields.IntegerField(default=1),
        'project_id': fields.StringField(nullable=True, default=None),
        'user_id': fields.StringField(nullable=True, default=None),
        'availability_zone': fields.StringField(nullable=True,
                                                default=None),
        'flavor': fields.ObjectField('Flavor'),
        'image': fields.ObjectField('ImageMeta', nullable=True,
                                    default=None),
        'scheduler_hints': base.DictOfListOfStringsField(default={}),
        'ignore_hosts': base.ListOfStringsField(nullable=True,
                                                  default=None),
        'force_hosts': base.ListOfStringsField(nullable=True,
                                                 default=None),
        'force_nodes': base.ListOfStringsField(nullable=True,
                                                 default=None),
        'requested_destination': fields.ObjectField(
            'Destination', nullable=True, default=None),
        'retry': fields.ObjectField('SchedulerRetries', nullable=True,
                                    default=None),
        'instance_group': fields.ObjectField('InstanceGroup',
                                             nullable=True, default=None),
        'is_rebuild': fields.BooleanField(default=False),
        # Booted from a volume: the image's disk format asks nothing of
        # the host's local storage.
        'is_bfv': fields.BooleanField(default=False),
    }

    # Which version of each object each RequestSpec version carries.
    obj_relationships = {
        'flavor': [('1.0', '1.0')],
        'image': [('1.0', '1.0'), ('1.1', '1.1')],
        'requested_destination': [('1.0', '1.1')],
        'retry': [('1.0', '1.0')],
        'instance_group': [('1.0', '1.0')],
    }

    def obj_make_compatible(self, primitive, target_version):
        """A 1.0 peer knows no is_bfv (a server booted from a volume is
        then asked for its image's type, if that filter is on)."""
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('is_bfv', None)

    def resources(self):
        """The claim one instance of this spec needs of VCPU, MEMORY_MB
        and DISK_GB: the flavor's sizes, or what its extra specs
        ``resources:VCPU``, ``resources:MEMORY_MB`` and
        ``resources:DISK_GB`` ask instead (0 for a baremetal flavor, as
        Nova's request asks). Pinned vCPUs are PCPU, not VCPU, as Nova
        asks them (``hw:cpu_policy=dedicated`` or ``resources:PCPU``: no
        VCPU; ``mixed``: the shared ones); on a host that reports no PCPU
        the placement stage's fallback claims VCPU instead. A malformed
        amount is left to the placement stage, which refuses the
        request. Within :meth:`resources_held`, what it answered on
        entry."""
        held = self.__dict__.get(_HELD)
        if held is not None:
            return held
        return self._resources()

    @contextlib.contextmanager
    def resources_held(self):
        """Within, :meth:`resources` answers what it answered on entry
        without reading the flavor, its extra specs and the image again
        (a request's capacity filters, its placement stage and its
        claims each ask: four times a request, 6 us each). For a caller
        that changes none of them meanwhile: a scheduler's request.
        Yields the resources."""
        held = self.__dict__.get(_HELD)
        if held is not None:
            # Held already (a request within a request): the outer one
            # lets go.
            yield held
            return
        held = self.__dict__[_HELD] = self._resources()
        try:
            yield held
        finally:
            self.__dict__.pop(_HELD, None)

    def _resources(self):
        flavor = self.flavor
        disk_gb = (flavor.root_gb + flavor.ephemeral_gb
                   + int(math.ceil(flavor.swap / 1024.0)))
        sizes = [flavor.vcpus, flavor.memory_mb, disk_gb]
        extra_specs = flavor.obj_get('extra_specs', {}) or {}
        image = self.obj_get('image')
        properties = (image.obj_get('properties', {}) or {}) if image else {}
        if _PINNING.intersection(extra_specs) or 'hw_cpu_policy' in properties:
            sizes[0] = _shared_vcpus(flavor, extra_specs, properties)
        if extra_specs:
            for position, key in enumerate(_OVERRIDES):
                value = extra_specs.get(key)
                if value is not None and value.strip().isdigit():
                    sizes[position] = int(value)
        return placement_types.Resources(*sizes)

    def get_scheduler_hint(self, name, default=None):
        """A hint's value: a lone value for one-element lists, as Nova."""
        values = self.obj_get('scheduler_hints', {}).get(name)
        if not values:
            return default
        return values[0] if len(values) == 1 else values

    def validate(self):
        """Raise InvalidRequest naming the first field that a filter, a
        weigher or the claim could not read as given: a missing flavor
        size, a size out of ``scheduler.validation``'s bounds, a string
        too long, too many hints or hosts."""
        if self.obj_get('flavor') is None:
            validation.refuse('flavor', 'is missing')
        validate_flavor(self.flavor)
        validation.integer('num_instances', self.obj_get('num_instances', 1),
                           low=1, high=validation.MAX_NUM_INSTANCES)
        for field in ('project_id', 'user_id', 'availability_zone'):
            validation.text(field, self.obj_get(field),
                            validation.MAX_NAME_LEN, nullable=True)
        if self.obj_get('image') is not None:
            validate_image(self.image)
        hints = validation.mapping('scheduler_hints',
                                   self.obj_get('scheduler_hints', {}))
        for key, values in hints.items():
            validation.text('scheduler_hints key', key,
                            validation.MAX_NAME_LEN)
            validation.strings('scheduler_hints[%r]' % key, values,
                               max_len=validation.MAX_VALUE_LEN)
        for field in ('ignore_hosts', 'force_hosts', 'force_nodes'):
            validation.strings(field, self.obj_get(field), nullable=True)
        self._validate_parts()

    def _validate_parts(self):
        destination = self.obj_get('requested_destination')
        if destination is not None:
            for field in ('host', 'node'):
                validation.name('requested_destination.%s' % field,
                                destination.obj_get(field), nullable=True)
            validation.strings('requested_destination.aggregates',
                               destination.obj_get('aggregates'),
                               nullable=True)
        retry = self.obj_get('retry')
        if retry is not None:
            validation.integer('retry.num_attempts',
                               retry.obj_get('num_attempts', 0),
                               high=validation.MAX_ITEMS)
            for index, pair in enumerate(validation.sequence(
                    'retry.hosts', retry.obj_get('hosts', []))):
                validation.strings('retry.hosts[%d]' % index, pair,
                                   max_items=2)
        group = self.obj_get('instance_group')
        if group is not None:
            for field in ('uuid', 'policy'):
                if not group.obj_attr_is_set(field):
                    validation.refuse('instance_group.%s' % field,
                                      'is missing')
            validation.text('instance_group.policy', group.policy,
                            validation.MAX_NAME_LEN)
            validation.text('instance_group.name', group.obj_get('name'),
                            validation.MAX_NAME_LEN, nullable=True)
            validation.string_dict('instance_group.rules',
                                   group.obj_get('rules', {}))
            for field in ('members', 'hosts'):
                validation.strings('instance_group.%s' % field,
                                   group.obj_get(field, []),
                                   max_items=validation.MAX_ITEMS * 10)

    # -- Nova's legacy dicts (scheduler RPC API 1.0) ------------------------

    @classmethod
    def from_primitives(cls, request_spec, filter_properties):
        """Build a spec from the legacy ``request_spec`` and
        ``filter_properties`` dicts; InvalidRequest if they are malformed.
        """
        if not isinstance(request_spec, dict):
            raise exception.InvalidRequest(
                reason='request_spec must be a dict, not %s'
                % type(request_spec).__name__)
        filter_properties = filter_properties or {}
        if not isinstance(filter_properties, dict):
            raise exception.InvalidRequest(
                reason='filter_properties must be a dict')
        try:
            return cls._from_legacy(request_spec, filter_properties)
        except (KeyError, TypeError, ValueError, AttributeError,
                OverflowError) as error:
            raise exception.InvalidRequest(
                reason='malformed legacy request_spec: %s: %s'
                % (type(error).__name__, error))

    @classmethod
    def _from_legacy(cls, request_spec, filter_properties):
        flavor_dict = (request_spec.get('instance_type')
                       or filter_properties.get('instance_type'))
        if not isinstance(flavor_dict, dict):
            raise exception.InvalidRequest(
                reason='request_spec has no instance_type (flavor) dict')
        flavor = Flavor(
            name=flavor_dict.get('name'),
            flavorid=flavor_dict.get('flavorid'),
            vcpus=int(flavor_dict['vcpus']),
            memory_mb=int(flavor_dict['memory_mb']),
            root_gb=int(flavor_dict.get('root_gb') or 0),
            ephemeral_gb=int(flavor_dict.get('ephemeral_gb') or 0),
            swap=int(flavor_dict.get('swap') or 0),
            extra_specs={str(k): str(v) for k, v in
                         (flavor_dict.get('extra_specs') or {}).items()})
        props = request_spec.get('instance_properties') or {}
        image = request_spec.get('image') or {}
        hints = {}
        for key, value in (filter_properties.get('scheduler_hints')
                           or {}).items():
            values = value if isinstance(value, list) else [value]
            hints[str(key)] = [str(v) for v in values]
        spec = cls(
            instance_uuid=props.get('uuid'),
            num_instances=int(request_spec.get('num_instances') or 1),
            project_id=props.get('project_id'),
            user_id=props.get('user_id'),
            availability_zone=props.get('availability_zone'),
            flavor=flavor,
            image=ImageMeta(id=image.get('id'), name=image.get('name'),
                            properties={str(k): None if v is None else str(v)
                                        for k, v in (image.get('properties')
                                                     or {}).items()}),
            scheduler_hints=hints,
            ignore_hosts=filter_properties.get('ignore_hosts'),
            force_hosts=filter_properties.get('force_hosts'),
            force_nodes=filter_properties.get('force_nodes'))
        retry = filter_properties.get('retry')
        if retry:
            spec.retry = SchedulerRetries(
                num_attempts=int(retry.get('num_attempts', 0)),
                hosts=[[str(h) for h in pair]
                       for pair in retry.get('hosts', [])])
        spec.validate()
        return spec

    def to_legacy_request_spec_dict(self, instance_uuids=None):
        flavor = self.flavor
        flavor_dict = {name: getattr(flavor, name) for name in flavor.fields
                       if flavor.obj_attr_is_set(name)}
        image = self.obj_get('image')
        return {
            'num_instances': self.num_instances,
            'instance_uuids': list(instance_uuids or []),
            'instance_type': flavor_dict,
            'image': {'id': image.obj_get('id'),
                      'name': image.obj_get('name'),
                      'properties': dict(image.obj_get('properties', {}))}
            if image else {},
            'instance_properties': {
                'uuid': self.obj_get('instance_uuid'),
                'project_id': self.obj_get('project_id'),
                'user_id': self.obj_get('user_id'),
                'availability_zone': self.obj_get('availability_zone'),
                'vcpus': flavor.vcpus,
                'memory_mb': flavor.memory_mb,
                'root_gb': flavor.root_gb,
                'ephemeral_gb': flavor.ephemeral_gb,
            },
        }

    def to_legacy_filter_properties_dict(self):
        props = {'scheduler_hints': dict(self.obj_get('scheduler_hints',
                                                      {}))}
        for name in ('ignore_hosts', 'force_hosts', 'force_nodes'):
            if self.obj_get(name):
                props[name] = list(getattr(self, name))
        retry = self.obj_get('retry')
        if retry:
            props['retry'] = {'num_attempts': retry.num_attempts,
                              'hosts': [list(pair) for pair in retry.hosts]}
        return props
