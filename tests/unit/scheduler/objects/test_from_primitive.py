"""GanttObject's own deserialization and defaults equal
oslo.versionedobjects' generic ones, for every Gantt object."""

import gc
import weakref

from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields
import pytest

from scheduler import context
from scheduler import exception
from scheduler import objects
from scheduler.objects import base
from scheduler.objects import request_spec
from scheduler import rpc

objects.register_all()


def _classes():
    # (The registry is oslo.versionedobjects' one, shared with the
    # notification payloads.)
    registry = base.GanttObjectRegistry.obj_classes()
    return sorted((versions[0] for versions in registry.values()
                   if issubclass(versions[0], base.GanttObject)),
                  key=lambda cls: cls.obj_name())


def _generic_from_primitive(cls, primitive):
    """ovo's walk: a new object with every default set, then the data."""
    obj = cls.__new__(cls)
    ovo_base.VersionedObject.__init__(obj)
    obj.obj_set_defaults(*[name for name, field in cls.fields.items()
                           if field.default != fields.UnspecifiedDefault])
    data = primitive['gantt_object.data']
    for name, field in cls.fields.items():
        if name in data:
            setattr(obj, name, field.from_primitive(obj, name, data[name]))
    obj._changed_fields = {name for name in primitive.get(
        'gantt_object.changes', []) if name in cls.fields}
    return obj


def _state(obj):
    """Every set field's value, and the changed fields."""
    return ({name: getattr(obj, name) for name in obj.fields
             if obj.obj_attr_is_set(name)}, set(obj.obj_what_changed()))


@pytest.mark.parametrize('cls', _classes(), ids=lambda cls: cls.obj_name())
def test_defaults_of_a_new_object_are_ovos(cls):
    ours = cls()
    generic = cls.__new__(cls)
    ovo_base.VersionedObject.__init__(generic)
    generic.obj_set_defaults(*[name for name, field in cls.fields.items()
                               if field.default != fields.UnspecifiedDefault])
    assert _state(ours) == _state(generic)
    # Mutable defaults are not shared between objects.
    other = cls()
    for name in ours.fields:
        if ours.obj_attr_is_set(name) and isinstance(
                getattr(ours, name), (dict, list)):
            assert getattr(ours, name) is not getattr(other, name)


def _spec():
    return request_spec.RequestSpec(
        flavor=request_spec.Flavor(vcpus=2, memory_mb=2048, root_gb=20,
                                   name='m1', flavorid='m1',
                                   extra_specs={'hw:cpu_policy': 'dedicated'}),
        image=request_spec.ImageMeta(properties={'hw_disk_bus': 'scsi'}),
        num_instances=2, project_id='p', scheduler_hints={'group': ['g']},
        instance_group=request_spec.InstanceGroup(
            uuid='2a1b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
            policy='anti-affinity', members=['a'], hosts=['h']))


def test_a_request_spec_reads_back_as_ovos_walk_reads_it():
    ctxt = context.get_admin_context()
    serializer = rpc.get_serializer()
    primitive = serializer.serialize_entity(ctxt, _spec())
    ours = serializer.deserialize_entity(ctxt, primitive)
    generic = _generic_from_primitive(request_spec.RequestSpec, primitive)
    assert ours.obj_to_primitive() == generic.obj_to_primitive()
    assert _state(ours)[1] == _state(generic)[1]
    assert ours.flavor.extra_specs == {'hw:cpu_policy': 'dedicated'}
    # A field the primitive leaves out takes its default.
    del primitive['gantt_object.data']['scheduler_hints']
    assert serializer.deserialize_entity(
        ctxt, primitive).scheduler_hints == {}


def test_a_wrong_type_in_the_payload_is_still_refused():
    ctxt = context.get_admin_context()
    serializer = rpc.get_serializer()
    primitive = serializer.serialize_entity(ctxt, _spec())
    primitive['gantt_object.data']['num_instances'] = 'many'
    with pytest.raises(exception.InvalidRequest, match='num_instances|many'):
        serializer.deserialize_entity(ctxt, primitive)


def _changes_as_sets(primitive):
    """A primitive with its ``changes`` lists as sets, at every level (both
    walks list a set's members, in no particular order)."""
    if isinstance(primitive, dict):
        return {key: (set(value) if key == 'gantt_object.changes'
                      else _changes_as_sets(value))
                for key, value in primitive.items()}
    if isinstance(primitive, list):
        return [_changes_as_sets(value) for value in primitive]
    return primitive


def _variants():
    spec = _spec()
    yield 'new', spec
    spec = _spec()
    spec.obj_reset_changes(recursive=True)
    yield 'unchanged', spec
    spec = _spec()
    spec.obj_reset_changes(recursive=True)
    # A change inside a field's object only: the parent lists the field.
    spec.flavor.memory_mb = 4096
    yield 'nested change', spec
    spec = request_spec.RequestSpec()
    del spec.scheduler_hints
    yield 'unset fields', spec


@pytest.mark.parametrize('name, spec', list(_variants()),
                         ids=lambda value: value if isinstance(
                             value, str) else '')
def test_the_primitive_and_changes_are_ovos(name, spec):
    assert spec.obj_what_changed() == (
        ovo_base.VersionedObject.obj_what_changed(spec))
    ours = spec.obj_to_primitive()
    assert _changes_as_sets(ours) == _changes_as_sets(
        ovo_base.VersionedObject.obj_to_primitive(spec))
    # An explicit version takes ovo's own path, with the same result.
    assert _changes_as_sets(spec.obj_to_primitive(spec.VERSION)) == (
        _changes_as_sets(ours))
    for field in spec.fields:
        assert spec.obj_attr_is_set(field) == (
            ovo_base.VersionedObject.obj_attr_is_set(spec, field))
    with pytest.raises(AttributeError, match='no attribute'):
        spec.obj_attr_is_set('nope')


@pytest.mark.parametrize('cls', _classes(), ids=lambda cls: cls.obj_name())
def test_every_object_round_trips(cls):
    obj = cls()
    ctxt = context.get_admin_context()
    serializer = rpc.get_serializer()
    primitive = serializer.serialize_entity(ctxt, obj)
    assert _changes_as_sets(primitive) == _changes_as_sets(
        ovo_base.VersionedObject.obj_to_primitive(obj))
    again = serializer.deserialize_entity(ctxt, primitive)
    assert _state(again) == _state(obj)


def _selection_primitive(**data):
    values = {'compute_node_uuid': '5d903d60-78ff-4610-6a6a-de71f64110c8',
              'service_host': 'compute-1', 'nodename': 'compute-1',
              'limits': {'vcpu': 384.0, 'memory_mb': 262144.0},
              'allocation_request': '{"vcpus": 1}', 'claimed': True,
              'cell_uuid': None}
    values.update(data)
    return {'gantt_object.name': 'Selection',
            'gantt_object.namespace': 'gantt',
            'gantt_object.version': '1.1',
            'gantt_object.data': values,
            'gantt_object.changes': sorted(values)}


def _types(obj):
    return {name: type(getattr(obj, name)) for name in obj.fields
            if obj.obj_attr_is_set(name)}


# Values taken as they are (already of their field's type) and values the
# fields must still coerce: both read back as ovo's walk reads them.
@pytest.mark.parametrize('data', [
    {},
    {'cell_uuid': '2A1B3C4D-5E6F-4A7B-8C9D-0E1F2A3B4C5D'},
    {'limits': {'vcpu': 384, 'memory_mb': 1.5}},
    {'limits': {}},
    {'service_host': 42},
    {'claimed': 1},
    {'allocation_request': None},
], ids=str)
def test_a_selection_reads_back_as_ovos_walk_reads_it(data):
    ctxt = context.get_admin_context()
    primitive = _selection_primitive(**data)
    ours = rpc.get_serializer().deserialize_entity(ctxt, primitive)
    generic = _generic_from_primitive(type(ours), primitive)
    assert _state(ours) == _state(generic)
    assert _types(ours) == _types(generic)
    # The limits coerce what is set in them later, as the field's do.
    ours.limits['disk_gb'] = 2
    assert type(ours.limits['disk_gb']) is float


def test_a_selection_with_a_wrong_value_is_still_refused_or_warned():
    ctxt = context.get_admin_context()
    serializer = rpc.get_serializer()
    for data, error in (({'service_host': None}, 'service_host'),
                        ({'limits': {'vcpu': 'lots'}}, 'lots'),
                        ({'limits': {'vcpu': None}}, 'vcpu|None')):
        with pytest.raises(exception.InvalidRequest, match=error):
            serializer.deserialize_entity(ctxt, _selection_primitive(**data))
    # A UUID field keeps any string, as oslo.versionedobjects' does, and
    # says it is not a UUID.
    with pytest.warns(FutureWarning, match='invalid UUID'):
        selection = serializer.deserialize_entity(
            ctxt, _selection_primitive(compute_node_uuid='not-a-uuid'))
    assert selection.compute_node_uuid == 'not-a-uuid'


@pytest.fixture
def no_cyclic_collector():
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    if enabled:
        gc.enable()


def test_objects_read_from_a_message_are_freed_without_the_collector(
        no_cyclic_collector):
    """A request spec with every kind of collection field (dicts, lists,
    a dict of lists, nested objects with theirs) and a selection with
    its limits, read from their primitives, are freed as soon as the
    last reference goes: no reference cycle waits for the cyclic
    garbage collector, whose passes stall requests."""
    ctxt = context.get_admin_context()
    serializer = rpc.get_serializer()
    spec = _spec()
    spec.retry = request_spec.SchedulerRetries(num_attempts=1,
                                               hosts=[['h', 'n']])
    spec.requested_destination = request_spec.Destination(
        host='h', aggregates=['a'])
    spec.force_hosts = ['h']
    primitives = [serializer.serialize_entity(ctxt, spec),
                  _selection_primitive()]
    for primitive in primitives:
        obj = serializer.deserialize_entity(ctxt, primitive)
        gone = weakref.ref(obj)
        parts = [weakref.ref(getattr(obj, name)) for name in obj.fields
                 if isinstance(getattr(obj, name, None), base.GanttObject)]
        del obj
        assert gone() is None
        assert all(part() is None for part in parts)


def test_collections_still_coerce_what_is_set_in_them_later():
    spec = _spec()
    spec.flavor.extra_specs['hw:numa_nodes'] = 2
    assert spec.flavor.extra_specs['hw:numa_nodes'] == '2'
    spec.scheduler_hints['same_host'] = ('a', 'b')
    assert spec.scheduler_hints['same_host'] == ['a', 'b']
    spec.scheduler_hints['same_host'].append(3)
    assert spec.scheduler_hints['same_host'][-1] == '3'
    with pytest.raises(ValueError, match='list is required'):
        spec.scheduler_hints['group'] = 'g'
    spec.instance_group.members.append(7)
    assert spec.instance_group.members[-1] == '7'
    with pytest.raises(ValueError):
        spec.image.properties['hw_disk_bus'] = object()


def test_a_uuid_field_takes_a_canonical_uuid_as_it_is_and_warns_otherwise(
        recwarn):
    spec = request_spec.RequestSpec()
    canonical = '2a1b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d'
    spec.instance_uuid = canonical
    assert spec.instance_uuid is canonical
    assert 'instance_uuid' in spec.obj_what_changed()
    assert not recwarn.list
    # Anything else takes oslo.versionedobjects' coercion: a string, with
    # its warning for what is not a UUID.
    spec.instance_uuid = 'not-a-uuid'
    assert spec.instance_uuid == 'not-a-uuid'
    assert any('invalid UUID' in str(warning.message)
               for warning in recwarn.list)
    spec.instance_uuid = None
    assert spec.instance_uuid is None


def test_a_list_of_strings_takes_strings_as_they_are(monkeypatch):
    """A list of ``str`` is set without an item's coercion (each would
    give the same ``str`` back); anything else in it is coerced or
    refused as oslo.versionedobjects does; and the list set still
    coerces what is added to it later."""
    group = request_spec.InstanceGroup(policy='anti-affinity')
    coerced = []
    real_coerce = fields.String.coerce

    def counted(self, obj, attr, value):
        coerced.append(value)
        return real_coerce(self, obj, attr, value)

    monkeypatch.setattr(fields.String, 'coerce', counted)
    hosts = ['host-1', 'host-2']
    group.hosts = hosts
    assert group.hosts == hosts and group.hosts is not hosts
    assert coerced == [] and 'hosts' in group.obj_what_changed()
    group.hosts.append(3)
    assert group.hosts == ['host-1', 'host-2', '3'] and coerced == [3]
    # Not all str (or not a list): the generic coercion, item by item.
    group.members = ('a', 5)
    assert group.members == ['a', '5'] and coerced[1:] == ['a', 5]
    with pytest.raises(ValueError, match='string is required'):
        group.hosts = ['host-1', object()]
    with pytest.raises(ValueError, match='list is required'):
        group.hosts = 'host-1'
    # As the generic coercion gives it: a list that coerces.
    assert isinstance(group.hosts, fields.CoercedList)
    assert group.obj_to_primitive()['gantt_object.data']['hosts'] == [
        'host-1', 'host-2', '3']
