"""Selection's own obj_to_primitive equals oslo.versionedobjects' walk."""

import collections

from oslo_versionedobjects import base as ovo_base
import pytest

from scheduler import context
from scheduler import objects
from scheduler.objects import selection
from scheduler import placement_types
from scheduler import rpc

objects.register_all()

UUID = '7c3a5c3e-7d1c-4a1f-9d0b-1b2c3d4e5f60'


def _generic(obj, *args):
    return ovo_base.VersionedObject.obj_to_primitive(obj, *args)


def _normalised(primitive):
    """Order of the changes list aside (a set in both walks)."""
    primitive = dict(primitive)
    key = 'gantt_object.changes'
    if key in primitive:
        primitive[key] = sorted(primitive[key])
    return primitive


SELECTIONS = [
    dict(compute_node_uuid=UUID, service_host='node-1', nodename='node-1',
         limits={'vcpu': 16.0, 'memory_mb': 4096}, claimed=True,
         allocation_request='{"vcpus": 1, "memory_mb": 512, "disk_gb": 1}'),
    dict(compute_node_uuid=None, service_host='h', nodename='n',
         allocation_request=None),
    dict(service_host='only-host'),
    dict(),
]


@pytest.mark.parametrize('fields', SELECTIONS)
def test_primitive_is_the_generic_one(fields):
    chosen = selection.Selection(**fields)
    assert _normalised(chosen.obj_to_primitive()) == \
        _normalised(_generic(chosen))


def test_no_changes_key_once_reset_as_the_generic_walk():
    chosen = selection.Selection(**SELECTIONS[0])
    chosen.obj_reset_changes()
    assert 'gantt_object.changes' not in chosen.obj_to_primitive()
    assert chosen.obj_to_primitive() == _generic(chosen)


def test_limits_are_copied_not_shared():
    chosen = selection.Selection(**SELECTIONS[0])
    primitive = chosen.obj_to_primitive()
    primitive['gantt_object.data']['limits']['vcpu'] = 0.0
    assert chosen.limits['vcpu'] == 16.0


def test_another_target_version_takes_the_generic_path():
    chosen = selection.Selection(**SELECTIONS[0])
    with pytest.raises(Exception) as error:
        chosen.obj_to_primitive(target_version='2.0')
    assert 'Invalid target version' in str(error.value) or \
        'target' in str(error.value).lower()


def test_round_trip_through_the_rpc_serializer():
    ctxt = context.get_admin_context()
    serializer = rpc.get_serializer()
    chosen = [[selection.Selection(**SELECTIONS[0]),
               selection.Selection(**SELECTIONS[1])]]
    back = serializer.deserialize_entity(
        ctxt, serializer.serialize_entity(ctxt, chosen))
    assert back == chosen
    assert back[0][0].limits == {'vcpu': 16.0, 'memory_mb': 4096.0}
    assert back[0][1].compute_node_uuid is None


class _Host:
    def __init__(self, **values):
        self.__dict__.update(values)


HOSTS = [
    _Host(uuid=UUID, host='node-1', nodename='node-1', cell_uuid=None),
    _Host(uuid=UUID, host='node-2', nodename='node-2b',
          cell_uuid='0d5b7a5e-8f6c-4f1e-9a3b-2c4d6e8f0a1b'),
    _Host(uuid=None, host='ironic', nodename='bm-1'),     # no cell_uuid
]


@pytest.mark.parametrize('host', HOSTS)
@pytest.mark.parametrize('claimed', [True, False])
@pytest.mark.parametrize('limits', [
    None, {}, {'vcpu': 16, 'memory_mb': 4096.5},
    {'vcpu': 16.0, 'memory_mb': 4096.5}])
def test_for_host_is_the_generic_construction(host, claimed, limits):
    resources = placement_types.Resources(2, 2048, 20)
    fast = selection.Selection.for_host(host, resources, claimed, limits)
    generic = selection.Selection(
        compute_node_uuid=host.uuid, service_host=host.host,
        nodename=host.nodename, limits=dict(limits or {}),
        allocation_request='{"vcpus": 2, "memory_mb": 2048, "disk_gb": 20}',
        claimed=claimed, cell_uuid=getattr(host, 'cell_uuid', None))
    assert _normalised(fast.obj_to_primitive()) == \
        _normalised(_generic(generic))
    assert fast.obj_what_changed() == generic.obj_what_changed()
    # limits are floats, as the field makes them.
    assert all(type(value) is float for value in fast.limits.values())
    # And it reads back, through the serializer, as the generic one.
    serializer = rpc.get_serializer()
    ctxt = context.get_admin_context()
    back = serializer.deserialize_entity(
        ctxt, serializer.serialize_entity(ctxt, fast))
    assert _normalised(back.obj_to_primitive()) == \
        _normalised(generic.obj_to_primitive())


def test_allocation_requests_of_equal_amounts_in_other_shapes_differ():
    # The JSON is cached per resources: a tuple type with other field
    # names but equal values gets its own.
    other = collections.namedtuple('Other', 'a b c')(2, 2048, 20)
    ours = placement_types.Resources(2, 2048, 20)
    first = selection.Selection.for_host(HOSTS[0], ours, True)
    second = selection.Selection.for_host(HOSTS[0], other, True)
    assert first.requested_resources() == {'vcpus': 2, 'memory_mb': 2048,
                                           'disk_gb': 20}
    assert second.requested_resources() == {'a': 2, 'b': 2048, 'c': 20}


@pytest.mark.parametrize('limits', [{'vcpu': 16.0}, {'vcpu': 16}, None])
def test_for_host_limits_coerce_later_values_as_the_field_does(limits):
    fast = selection.Selection.for_host(
        HOSTS[0], placement_types.Resources(1, 512, 1), True, limits)
    generic = selection.Selection(limits=dict(limits or {}))
    for chosen in (fast, generic):
        assert type(chosen.limits) is type(generic.limits)
        chosen.limits['disk_gb'] = '40'
        assert chosen.limits['disk_gb'] == 40.0
        assert type(chosen.limits['disk_gb']) is float
        with pytest.raises(ValueError):
            chosen.limits['memory_mb'] = 'lots'
    assert fast.limits == generic.limits
    # The caller's dict is not the Selection's.
    if limits:
        assert 'disk_gb' not in limits
