"""RequestSpec: resources, legacy dicts, and refusal of malformed input."""

import re

import pytest

from scheduler import exception
from scheduler.objects import base
from scheduler.objects import request_spec
from scheduler.objects import selection


def _spec(**kwargs):
    flavor = request_spec.Flavor(vcpus=2, memory_mb=4096, root_gb=20,
                                 ephemeral_gb=5, swap=1536,
                                 extra_specs={'hw:cpu_policy': 'shared'})
    values = dict(flavor=flavor, num_instances=2, project_id='p1',
                  availability_zone='az1',
                  scheduler_hints={'group': ['g1'], 'k': ['a', 'b']},
                  ignore_hosts=['h9'], force_hosts=['h1'])
    values.update(kwargs)
    return request_spec.RequestSpec(**values)


def test_resources_round_swap_up_to_whole_gb():
    assert _spec().resources() == (2, 4096, 20 + 5 + 2)


def test_resources_held_answer_what_they_answered_on_entry():
    spec = _spec()
    with spec.resources_held() as held:
        assert held == (2, 4096, 27)
        spec.flavor.vcpus = 8
        assert spec.resources() is held
        with spec.resources_held() as inner:
            assert inner is held
        # The inner hold does not let go of the outer one's.
        assert spec.resources() is held
        # Never sent.
        assert '_held_resources' not in str(spec.obj_to_primitive())
    assert spec.resources() == (8, 4096, 27)


def test_resources_held_are_let_go_when_the_block_raises():
    spec = _spec()
    with pytest.raises(RuntimeError):
        with spec.resources_held():
            raise RuntimeError('the request failed')
    spec.flavor.memory_mb = 1024
    assert spec.resources() == (2, 1024, 27)


@pytest.mark.parametrize('extra_specs, image, vcpus', [
    ({'hw:cpu_policy': 'dedicated'}, {}, 0),
    ({}, {'hw_cpu_policy': 'dedicated'}, 0),
    ({'resources:PCPU': '4'}, {}, 0),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '^0'}, {}, 1),
    ({'hw:cpu_policy': 'shared'}, {'hw_cpu_policy': 'dedicated'}, 4),
    ({}, {}, 4),
], ids=['dedicated', 'image-dedicated', 'resources-pcpu', 'mixed',
        'flavor-wins', 'plain'])
def test_pinned_vcpus_are_not_asked_as_vcpu(extra_specs, image, vcpus):
    # Nova asks pinned vCPUs as PCPU: the VCPU claim (and CoreFilter)
    # count only the floating ones.
    spec = request_spec.RequestSpec(flavor=request_spec.Flavor(
        vcpus=4, memory_mb=512, extra_specs=extra_specs))
    if image:
        spec.image = request_spec.ImageMeta(properties=image)
    assert spec.resources().vcpus == vcpus


def test_scheduler_hint_unwraps_single_values():
    spec = _spec()
    assert spec.get_scheduler_hint('group') == 'g1'
    assert spec.get_scheduler_hint('k') == ['a', 'b']
    assert spec.get_scheduler_hint('missing', 'dflt') == 'dflt'


def test_unset_fields_take_defaults():
    spec = request_spec.RequestSpec(
        flavor=request_spec.Flavor(vcpus=1, memory_mb=512))
    assert spec.num_instances == 1
    assert spec.scheduler_hints == {}
    assert spec.force_hosts is None
    assert spec.flavor.swap == 0


def test_legacy_round_trip_keeps_what_scheduling_needs():
    spec = _spec()
    legacy = request_spec.RequestSpec.from_primitives(
        spec.to_legacy_request_spec_dict(['u1', 'u2']),
        spec.to_legacy_filter_properties_dict())
    assert legacy.resources() == spec.resources()
    assert legacy.num_instances == 2
    assert legacy.availability_zone == 'az1'
    assert legacy.scheduler_hints == spec.scheduler_hints
    assert legacy.ignore_hosts == ['h9']
    assert legacy.force_hosts == ['h1']
    assert legacy.flavor.extra_specs == {'hw:cpu_policy': 'shared'}


@pytest.mark.parametrize('request_spec_dict, filter_properties, words', [
    ('not a dict', {}, 'must be a dict'),
    ({'num_instances': 1}, {}, 'no instance_type'),
    ({'instance_type': {'vcpus': 'many', 'memory_mb': 1}}, {}, 'malformed'),
    ({'instance_type': {'vcpus': 1}}, {}, 'malformed'),
    ({'instance_type': {'vcpus': -1, 'memory_mb': 1}}, {},
         'flavor.vcpus must be at least 1'),
    ({'instance_type': {'vcpus': 1, 'memory_mb': 0}}, {},
         'flavor.memory_mb must be at least 1, not 0'),
    ({'instance_type': {'vcpus': 1, 'memory_mb': 1}}, 'x', 'must be a dict'),
])
def test_malformed_legacy_dicts_are_refused(request_spec_dict,
                                            filter_properties, words):
    with pytest.raises(exception.InvalidRequest, match=words):
        request_spec.RequestSpec.from_primitives(request_spec_dict,
                                                 filter_properties)


def test_validate_refuses_missing_flavor_and_zero_instances():
    with pytest.raises(exception.InvalidRequest, match='flavor is missing'):
        request_spec.RequestSpec(num_instances=1).validate()
    with pytest.raises(exception.InvalidRequest, match='at least 1'):
        _spec(num_instances=0).validate()


@pytest.mark.parametrize('mutate, words', [
    (lambda spec: spec.flavor.obj_reset_changes(), None),
    (lambda spec: delattr(spec.flavor, 'memory_mb'),
     'flavor.memory_mb is missing'),
    (lambda spec: setattr(spec.flavor, 'swap', 10 ** 400),
     'flavor.swap must be at most'),
    # Nova's flavor create: vcpus and memory_mb at least 1, disks and swap
    # at least 0.
    (lambda spec: setattr(spec.flavor, 'vcpus', 0),
     'flavor.vcpus must be at least 1, not 0'),
    (lambda spec: setattr(spec.flavor, 'memory_mb', 0),
     'flavor.memory_mb must be at least 1, not 0'),
    (lambda spec: setattr(spec.flavor, 'root_gb', 0), None),
    (lambda spec: setattr(spec.flavor, 'ephemeral_gb', -1),
     'flavor.ephemeral_gb must be at least 0, not -1'),
    (lambda spec: setattr(spec.flavor, 'swap', -1),
     'flavor.swap must be at least 0, not -1'),
    (lambda spec: setattr(spec, 'num_instances', 10 ** 6),
     'num_instances must be at most'),
    (lambda spec: setattr(spec, 'scheduler_hints', {'q': ['x' * 70000]}),
     "scheduler_hints['q'][0] is 70000 characters long"),
    (lambda spec: setattr(spec, 'project_id', 'p\x00'),
     'project_id contains a NUL'),
    (lambda spec: setattr(spec, 'instance_group',
                          request_spec.InstanceGroup(name='g')),
     'instance_group.uuid is missing'),
])
def test_validate_names_the_field_a_filter_could_not_read(mutate, words):
    spec = _spec()
    mutate(spec)
    if words is None:
        assert spec.validate() is None
        return
    with pytest.raises(exception.InvalidRequest, match=re.escape(words)):
        spec.validate()


def test_serializer_round_trip_and_refusal():
    serializer = base.GanttObjectSerializer()
    primitive = serializer.serialize_entity(None, _spec())
    again = serializer.deserialize_entity(None, primitive)
    assert again.resources() == _spec().resources()
    primitive['gantt_object.name'] = 'NoSuchObject'
    with pytest.raises(exception.InvalidRequest, match='NoSuchObject'):
        serializer.deserialize_entity(None, primitive)


def test_selection_legacy_dict_and_requested_resources():
    class Host:
        uuid = '7a3c3e5e-3f5a-4d43-9a52-3b8b9bb8f9a1'
        host = 'h1'
        nodename = 'n1'
    chosen = selection.Selection.for_host(Host, _spec().resources(),
                                          claimed=True,
                                          limits={'memory_mb': 1024.0})
    assert chosen.to_legacy_dict() == {'host': 'h1', 'nodename': 'n1',
                                       'limits': {'memory_mb': 1024.0}}
    assert chosen.requested_resources() == {'vcpus': 2, 'memory_mb': 4096,
                                            'disk_gb': 27}


def test_a_1_0_peer_gets_no_is_bfv_and_no_disk_format():
    spec = request_spec.RequestSpec(
        flavor=request_spec.Flavor(vcpus=1, memory_mb=64),
        image=request_spec.ImageMeta(disk_format='raw', properties={}),
        is_bfv=True)
    old = spec.obj_to_primitive(target_version='1.0')
    assert old['gantt_object.version'] == '1.0'
    assert 'is_bfv' not in old['gantt_object.data']
    image = old['gantt_object.data']['image']
    assert image['gantt_object.version'] == '1.0'
    assert 'disk_format' not in image['gantt_object.data']
    again = request_spec.RequestSpec.obj_from_primitive(old)
    assert again.is_bfv is False and again.image.disk_format is None
    current = request_spec.RequestSpec.obj_from_primitive(
        spec.obj_to_primitive())
    assert current.is_bfv is True and current.image.disk_format == 'raw'
