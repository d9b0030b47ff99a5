"""InstanceInfo: what computes tell schedulers of an instance."""

from scheduler import host_cache
from scheduler.objects import base
from scheduler.objects import instance_info
from scheduler.objects import request_spec

UUID = '7d9e3c1a-2b4f-4e6d-8a0c-1f2e3d4c5b6a'


def test_from_spec_takes_the_flavor_id_else_its_name_and_image_props():
    flavor = request_spec.Flavor(vcpus=1, memory_mb=512, name='small')
    spec = request_spec.RequestSpec(
        flavor=flavor, image=request_spec.ImageMeta(
            properties={'hw_architecture': 'x86_64', 'empty': None}))
    info = instance_info.InstanceInfo.from_spec(UUID, spec)
    assert (info.uuid, info.flavor_id) == (UUID, 'small')
    assert info.to_host_info() == host_cache.InstanceInfo(
        'small', {'hw_architecture': 'x86_64', 'empty': None})
    flavor.flavorid = '42'
    spec.image = None
    assert instance_info.InstanceInfo.from_spec(UUID, spec).to_host_info() \
        == host_cache.InstanceInfo('42', {})


def test_round_trips_through_the_serializer():
    info = instance_info.InstanceInfo(uuid=UUID, flavor_id='f',
                                      image_properties={'a': 'b'})
    serializer = base.GanttObjectSerializer()
    back = serializer.deserialize_entity(
        None, serializer.serialize_entity(None, [info]))
    assert back[0].to_host_info() == host_cache.InstanceInfo(
        'f', {'a': 'b'})
