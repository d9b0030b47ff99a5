"""Nova 34's recorded payloads decoded into Gantt's objects."""

import copy
import logging

import pytest

from scheduler import exception
from scheduler import image_properties
from scheduler.nova import host_updates
from scheduler.nova import primitives
from scheduler.nova import request_spec
from scheduler.nova import wire
from tests.unit.nova import wire_fixtures

INSTANCES = ['1b5e7c3a-9d2f-4e6b-8a1c-2f3e4d5c6b7a',
             '2c6f8d4b-ae30-4f7c-9b2d-3a4f5e6d7c8b']


def _spec(name='select_destinations_4_5', change=None):
    raw = copy.deepcopy(wire_fixtures.args(name)['spec_obj'])
    if change:
        change(raw['nova_object.data'])
    return request_spec.from_nova(primitives.decode(raw, 'spec_obj'))


@pytest.mark.parametrize('name', ['select_destinations_4_5',
                                  'select_destinations_4_4',
                                  'select_destinations_4_3'])
def test_request_spec_fields(name):
    spec = _spec(name)
    spec.validate()
    assert spec.instance_uuid == INSTANCES[0]
    assert spec.num_instances == 2
    assert spec.project_id == '6f70656e737461636b20697320636f6f'
    assert spec.user_id == '8b3f4c7e0a9d4c5e9a1b2c3d4e5f6a7b'
    assert spec.availability_zone == 'az1'
    flavor = spec.flavor
    assert (flavor.vcpus, flavor.memory_mb, flavor.root_gb,
            flavor.ephemeral_gb, flavor.swap) == (4, 4096, 40, 10, 512)
    assert flavor.flavorid == 'm1.numa'
    assert flavor.extra_specs['hw:cpu_policy'] == 'dedicated'
    assert flavor.extra_specs['trait:HW_CPU_X86_AVX2'] == 'required'
    assert spec.scheduler_hints == {
        'group': ['3d7a9e5c-bf41-4a8d-8c3e-4b5a6f7e8d9c'],
        'different_host': [INSTANCES[1]]}
    assert spec.ignore_hosts == ['compute-9']
    assert spec.force_hosts is None and spec.force_nodes is None
    assert spec.is_bfv is False and spec.is_rebuild is False
    group = spec.instance_group
    assert (group.uuid, group.name, group.policy) == (
        '3d7a9e5c-bf41-4a8d-8c3e-4b5a6f7e8d9c', 'web', 'anti-affinity')
    assert group.rules == {'max_server_per_host': '2'}
    assert group.hosts == ['compute-2']
    assert group.members == ['9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d']
    dest = spec.requested_destination
    assert (dest.host, dest.node) == ('compute-1', 'compute-1')
    assert dest.aggregates == ['6a0dc1f8-e274-4db0-9f6b-7e8d9cab1a2f']
    assert dest.cell.uuid == '4e8bafd6-c052-4b9e-9d4f-5c6b7a8f9e0d'
    assert dest.allow_cross_cell_move is False
    assert spec.retry.num_attempts == 1
    assert spec.retry.hosts == [['compute-3', 'compute-3']]


def test_image_properties_read_as_nova_reads_them():
    image = _spec().image
    assert image.id == '7a1b2c3d-4e5f-4071-8293-a4b5c6d7e8f9'
    assert image.disk_format == 'qcow2'
    props = image_properties.normalise(image.properties)
    assert props['hw_architecture'] == 'x86_64'
    assert props['hw_cpu_cores'] == 2
    assert props['hw_qemu_guest_agent'] is True
    assert props['hw_vif_multiqueue_enabled'] is True
    assert props['hw_numa_cpus'] == [{0, 1}, {2, 3}]
    assert props['hw_numa_mem'] == [2048, 2048]
    assert props['traits_required'] == ['COMPUTE_NET_VIF_MODEL_VIRTIO']
    assert props['img_hv_type'] == 'kvm'


def test_resources_follow_the_pinned_flavor():
    # hw:cpu_policy=dedicated: no VCPU; 40 + 10 GB + 512 MB of swap.
    assert tuple(_spec().resources()) == (0, 4096, 51)


def test_rebuild_mark_sets_is_rebuild():
    def mark(data):
        data['scheduler_hints']['_nova_check_type'] = ['rebuild']
    assert _spec(change=mark).is_rebuild is True


@pytest.mark.parametrize('change, words', [
    (lambda d: d['flavor'].update({'nova_object.namespace': 'gantt'}),
     "spec_obj.flavor is not a Nova object (namespace 'gantt'"),
    (lambda d: d['flavor'].update({'nova_object.version': '2.0'}),
     'spec_obj.flavor (Flavor) has version 2.0; Gantt reads Flavor 1.x'),
    (lambda d: d['flavor'].update({'nova_object.version': 'one'}),
     "spec_obj.flavor (Flavor) has a malformed version 'one'"),
    (lambda d: d['flavor'].update({'nova_object.data': []}),
     'spec_obj.flavor (Flavor) has no data dict'),
    (lambda d: d['flavor']['nova_object.data'].update(vcpus='four'),
     'spec_obj.flavor.vcpus must be an integer, not str'),
    (lambda d: d.pop('flavor'), 'spec_obj.flavor is missing'),
    (lambda d: d['requested_destination']['nova_object.data'].update(
        forbidden_aggregates=['a']),
     'spec_obj.requested_destination.forbidden_aggregates is not '
     'honoured'),
    (lambda d: d['request_level_params']['nova_object.data'].update(
        root_required=['CUSTOM_X']),
     'spec_obj.request_level_params.root_required is set'),
    (lambda d: d.update(requested_resources=[{
        'nova_object.name': 'RequestGroup', 'nova_object.namespace': 'nova',
        'nova_object.version': '1.3',
        'nova_object.data': {'requester_id': 'port-1',
                             'resources': {'NET_BW_EGR_KILOBIT_PER_SEC':
                                           1000}}}]),
     'spec_obj.requested_resources asks 1 resource group(s) of ports or '
     'accelerators (port-1)'),
    (lambda d: d['instance_group']['nova_object.data'].pop('policy'),
     'spec_obj.instance_group.policy is missing'),
    (lambda d: d['image']['nova_object.data']['properties'][
        'nova_object.data'].update(hw_numa_cpus=[['x']]),
     'spec_obj.image.properties.hw_numa_cpus[0] must be a list of CPU'),
])
def test_malformed_or_unhonoured_spec_is_refused(change, words):
    with pytest.raises(exception.InvalidRequest) as info:
        _spec(change=change)
    assert words in str(info.value)


def test_port_pci_requests_are_warned_about(caplog, monkeypatch):
    monkeypatch.setattr(request_spec, '_WARNED', set())
    caplog.set_level(logging.DEBUG, logger=request_spec.__name__)
    def port(data):
        data['pci_requests']['nova_object.data']['requests'] = [{
            'nova_object.name': 'InstancePCIRequest',
            'nova_object.namespace': 'nova', 'nova_object.version': '1.4',
            'nova_object.data': {'count': 1, 'spec': [{}],
                                 'alias_name': None,
                                 'request_id': INSTANCES[1]}}]
    _spec(change=port)
    assert 'PCI request(s) of Neutron ports' in caplog.text
    warnings = [record for record in caplog.records
                if 'names physnets' in record.getMessage()]
    assert [record.levelname for record in warnings] == ['WARNING']
    _spec(change=port)
    warnings = [record for record in caplog.records
                if 'names physnets' in record.getMessage()]
    assert [record.levelname for record in warnings] == ['WARNING',
                                                         'DEBUG']


def test_aggregates_fanout():
    args = wire_fixtures.args('update_aggregates')
    found = host_updates.aggregates(
        primitives.decode(args['aggregates'], 'aggregates'), 'aggregates')
    assert len(found) == 1
    agg = found[0]
    assert (agg.id, agg.uuid, agg.name) == (
        4, '6a0dc1f8-e274-4db0-9f6b-7e8d9cab1a2f', 'ssd-hosts')
    assert agg.hosts == frozenset(['compute-1', 'compute-2'])
    assert agg.metadata == {'availability_zone': 'az1', 'ssd': 'true'}
    args = wire_fixtures.args('delete_aggregate')
    assert host_updates.aggregate(
        primitives.decode(args['aggregate'], 'aggregate'),
        'aggregate') == agg


def test_instance_info_fanout():
    args = wire_fixtures.args('update_instance_info')
    found = host_updates.instances(
        primitives.decode(args['instance_info'], 'instance_info'),
        'instance_info')
    assert list(found) == [INSTANCES[0]]
    info = found[INSTANCES[0]]
    assert info.flavor_id == 'm1.numa'
    assert info.image_properties == {'hw_qemu_guest_agent': 'yes',
                                     'os_distro': 'cirros'}


def test_nova_context_becomes_gantt_context():
    values = wire_fixtures.load('select_destinations_4_5')['context']
    ctxt = wire.NovaSerializer().deserialize_context(values)
    assert ctxt.request_id == 'req-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'
    assert ctxt.global_request_id == \
        'req-9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a'
    assert ctxt.user_id == '8b3f4c7e0a9d4c5e9a1b2c3d4e5f6a7b'
    assert ctxt.project_id == '6f70656e737461636b20697320636f6f'
    assert ctxt.roles == ['member', 'reader']
    assert ctxt.is_admin is False
