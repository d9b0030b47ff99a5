"""Record what Nova sends its scheduler, with Nova's own code.

Run by hand (or by the nova-interop environment) in a virtualenv that has
``nova==34.0.0`` installed; Gantt never imports this file::

    python tools/record_nova_wire.py tests/unit/nova/fixtures

It builds Nova objects as Nova's conductor, API and computes do and sends
them with Nova's own ``SchedulerAPI`` over oslo.messaging's in-process
``fake://`` driver, catching each message as the driver is handed it: the
context dict and the ``{method, args, version}`` message exactly as the
rabbit driver would put them on the wire. It also records a Selection
built by Nova's ``Selection.from_host_state`` and a ``NoValidHost`` as
oslo.messaging serializes a remote exception.

Each fixture is one JSON file: ``{"context": ..., "message": ...,
"target": {...}}`` for a message, ``{"primitive": ...}`` for the
Selection, ``{"failure": ...}`` for the exception (its traceback left
out: it names files of the machine that recorded it).
"""

import datetime
import json
import os
import sys

import oslo_messaging as messaging
from oslo_messaging._drivers import common as driver_common
from oslo_messaging._drivers import impl_fake
from oslo_serialization import jsonutils

import nova.conf
from nova import config
from nova import context as nova_context
from nova import exception
from nova import objects
from nova.objects import base as objects_base
from nova import rpc
from nova.scheduler import rpcapi

CONF = nova.conf.CONF

PROJECT = '6f70656e737461636b20697320636f6f'
USER = '8b3f4c7e0a9d4c5e9a1b2c3d4e5f6a7b'
INSTANCES = ['1b5e7c3a-9d2f-4e6b-8a1c-2f3e4d5c6b7a',
             '2c6f8d4b-ae30-4f7c-9b2d-3a4f5e6d7c8b']
GROUP = '3d7a9e5c-bf41-4a8d-8c3e-4b5a6f7e8d9c'
CELL = '4e8bafd6-c052-4b9e-9d4f-5c6b7a8f9e0d'
NODE = '5f9cb0e7-d163-4caf-8e5a-6d7c8b9a0f1e'
AGGREGATE = '6a0dc1f8-e274-4db0-9f6b-7e8d9cab1a2f'
REQUEST_ID = 'req-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'
GLOBAL_ID = 'req-9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a'


class Recorder:
    """Takes the place of the fake driver's send: keeps what it is
    given, answers nothing (a call gets a timeout, which is caught)."""

    def __init__(self):
        self.sent = []

    def __call__(self, driver, target, ctxt, message, wait_for_reply=None,
                 timeout=None, transport_options=None):
        driver._check_serialize(message)
        # As the rabbit driver puts it on the wire (sets become lists).
        sent = {'target': {'topic': target.topic,
                           'exchange': target.exchange,
                           'fanout': bool(target.fanout),
                           'version': target.version},
                'context': ctxt, 'message': message}
        self.sent.append(jsonutils.loads(jsonutils.dumps(sent)))
        if wait_for_reply:
            raise _Recorded()


class _Recorded(Exception):
    pass


def make_context():
    ctxt = nova_context.RequestContext(
        user_id=USER, project_id=PROJECT, is_admin=False,
        request_id=REQUEST_ID, global_request_id=GLOBAL_ID,
        roles=['member', 'reader'], user_name='demo', project_name='demo',
        remote_address='192.0.2.10',
        timestamp=datetime.datetime(2026, 12, 4, 13, 0, 0))
    return ctxt


def make_flavor():
    return objects.Flavor(
        id=7, flavorid='m1.numa', name='m1.numa', memory_mb=4096, vcpus=4,
        root_gb=40, ephemeral_gb=10, swap=512, rxtx_factor=1.0,
        vcpu_weight=0, disabled=False, is_public=True, description=None,
        extra_specs={'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '2',
                     'hw:mem_page_size': 'large',
                     'trait:HW_CPU_X86_AVX2': 'required',
                     'aggregate_instance_extra_specs:ssd': 'true'},
        projects=[], created_at=None, updated_at=None, deleted_at=None,
        deleted=False)


def make_image():
    return objects.ImageMeta.from_dict({
        'id': '7a1b2c3d-4e5f-4071-8293-a4b5c6d7e8f9',
        'name': 'cirros-0.6.2', 'status': 'active',
        'container_format': 'bare', 'disk_format': 'qcow2',
        'size': 21430272, 'min_disk': 1, 'min_ram': 256,
        'checksum': 'c8fc807773e5354afe61636071771906',
        'owner': PROJECT, 'visibility': 'public', 'protected': False,
        'properties': {'hw_architecture': 'x86_64',
                       'architecture': 'x86_64',
                       'hw_qemu_guest_agent': 'yes',
                       'hw_vif_multiqueue_enabled': 'true',
                       'hw_disk_bus': 'virtio', 'os_distro': 'cirros',
                       'hw_cpu_cores': '2',
                       'hw_numa_cpus.0': '0,1', 'hw_numa_cpus.1': '2,3',
                       'hw_numa_mem.0': '2048', 'hw_numa_mem.1': '2048',
                       'trait:COMPUTE_NET_VIF_MODEL_VIRTIO': 'required',
                       'img_hv_type': 'kvm'}})


def make_group():
    return objects.InstanceGroup(
        id=3, uuid=GROUP, name='web', user_id=USER, project_id=PROJECT,
        policy='anti-affinity', rules={'max_server_per_host': '2'},
        members=['9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d'],
        hosts=['compute-2'])


def make_spec(ctxt):
    """A boot of two servers, as the conductor's schedule_and_build
    sends it (with a destination, as an admin's ``--host`` asks)."""
    flavor = make_flavor()
    image = make_image()
    from nova.virt import hardware
    numa = hardware.numa_get_constraints(flavor, image)
    spec = objects.RequestSpec.from_components(
        ctxt, INSTANCES[0], image, flavor, numa,
        objects.InstancePCIRequests(instance_uuid=INSTANCES[0], requests=[]),
        {'scheduler_hints': {'group': [GROUP],
                             'different_host': [INSTANCES[1]]}},
        make_group(), 'az1',
        security_groups=objects.SecurityGroupList(objects=[
            objects.SecurityGroup(name='default')]),
        project_id=PROJECT, user_id=USER)
    spec.num_instances = 2
    spec.is_bfv = False
    spec.ignore_hosts = ['compute-9']
    spec.network_metadata = objects.NetworkMetadata(
        physnets=set(['physnet1']), tunneled=True)
    spec.requested_destination = objects.Destination(
        host='compute-1', node='compute-1',
        cell=objects.CellMapping(uuid=CELL, name='cell1'),
        aggregates=[AGGREGATE], allow_cross_cell_move=False)
    spec.retry = objects.SchedulerRetries(
        num_attempts=1, hosts=objects.ComputeNodeList(objects=[
            objects.ComputeNode(host='compute-3',
                                hypervisor_hostname='compute-3')]))
    return spec


def make_instance():
    flavor = make_flavor()
    return objects.Instance(
        uuid=INSTANCES[0], host='compute-1', node='compute-1',
        project_id=PROJECT, user_id=USER, vm_state='active',
        task_state=None, power_state=1, flavor=flavor,
        instance_type_id=flavor.id, image_ref=make_image().id,
        availability_zone='az1', display_name='web-1',
        system_metadata={'image_hw_qemu_guest_agent': 'yes',
                         'image_os_distro': 'cirros'},
        created_at=datetime.datetime(2026, 12, 4, 12, 0, 0,
                                     tzinfo=datetime.timezone.utc))


def make_aggregate():
    return objects.Aggregate(
        id=4, uuid=AGGREGATE, name='ssd-hosts',
        hosts=['compute-1', 'compute-2'],
        metadata={'availability_zone': 'az1', 'ssd': 'true'})


def record_messages(ctxt):
    recorder = Recorder()
    original = impl_fake.FakeDriver._send
    impl_fake.FakeDriver._send = (
        lambda driver, *args, **kwargs: recorder(driver, *args, **kwargs))
    found = {}
    try:
        api = rpcapi.SchedulerAPI()
        spec = make_spec(ctxt)
        for name, kwargs in (
                ('select_destinations_4_5', {'return_objects': True,
                                             'return_alternates': True}),):
            try:
                api.select_destinations(ctxt, spec, INSTANCES, **kwargs)
            except _Recorded:
                found[name] = recorder.sent[-1]
        CONF.set_override('scheduler', 'pike', group='upgrade_levels')
        try:
            rpcapi.SchedulerAPI().select_destinations(ctxt, spec, INSTANCES)
        except _Recorded:
            found['select_destinations_4_4'] = recorder.sent[-1]
        CONF.set_override('scheduler', 'ocata', group='upgrade_levels')
        try:
            rpcapi.SchedulerAPI().select_destinations(ctxt, spec, INSTANCES)
        except _Recorded:
            found['select_destinations_4_3'] = recorder.sent[-1]
        CONF.set_override('scheduler', 'liberty', group='upgrade_levels')
        try:
            rpcapi.SchedulerAPI().select_destinations(ctxt, spec, INSTANCES)
        except _Recorded:
            found['select_destinations_4_0'] = recorder.sent[-1]
        CONF.clear_override('scheduler', group='upgrade_levels')
        admin = ctxt.elevated()
        aggregate = make_aggregate()
        api.update_aggregates(admin, [aggregate])
        found['update_aggregates'] = recorder.sent[-1]
        api.delete_aggregate(admin, aggregate)
        found['delete_aggregate'] = recorder.sent[-1]
        instances = objects.InstanceList(objects=[make_instance()])
        api.update_instance_info(admin, 'compute-1', instances)
        found['update_instance_info'] = recorder.sent[-1]
        api.delete_instance_info(admin, 'compute-1', INSTANCES[1])
        found['delete_instance_info'] = recorder.sent[-1]
        api.sync_instance_info(admin, 'compute-1', INSTANCES)
        found['sync_instance_info'] = recorder.sent[-1]
    finally:
        impl_fake.FakeDriver._send = original
    return found


class _HostState:
    """What Selection.from_host_state reads of Nova's HostState."""

    uuid = NODE
    host = 'compute-1'
    nodename = 'compute-1'
    cell_uuid = CELL
    limits = {'vcpu': 16, 'memory_mb': 98304, 'disk_gb': 900}

    @property
    def aggregates(self):
        return [make_aggregate()]


def record_selection():
    from nova.scheduler.client import report
    allocation_request = {
        'allocations': {NODE: {'resources': {'VCPU': 4, 'MEMORY_MB': 4096,
                                             'DISK_GB': 51}}},
        'mappings': {'': [NODE]}}
    selection = objects.Selection.from_host_state(
        _HostState(), allocation_request, report.SAME_SUBTREE_VERSION)
    numa_host = _HostState()
    numa_host.limits = dict(numa_host.limits, numa_topology=(
        objects.NUMATopologyLimits(
            cpu_allocation_ratio=16.0, ram_allocation_ratio=1.5,
            network_metadata=objects.NetworkMetadata(
                physnets=set(['physnet1']), tunneled=True))))
    numa_selection = objects.Selection.from_host_state(
        numa_host, allocation_request, report.SAME_SUBTREE_VERSION)
    serializer = objects_base.NovaObjectSerializer()
    return {'primitive': serializer.serialize_entity(None, [[selection]]),
            'numa_primitive': serializer.serialize_entity(
                None, [[numa_selection]])}


def record_failure():
    try:
        raise exception.NoValidHost(reason='There are not enough hosts '
                                           'available.')
    except exception.NoValidHost:
        failure = jsonutils.loads(
            driver_common.serialize_remote_exception(sys.exc_info()))
    failure['tb'] = []
    return {'failure': failure}


def _sorted_changes(value):
    """``value`` with each object's ``changes`` sorted (Nova lists a
    set, in no stable order): fixtures recorded twice are the same."""
    if isinstance(value, dict):
        return {key: sorted(item) if key.endswith('_object.changes')
                else _sorted_changes(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_sorted_changes(item) for item in value]
    return value


def main(argv):
    out = argv[1] if len(argv) > 1 else 'tests/unit/nova/fixtures'
    os.makedirs(out, exist_ok=True)
    # As nova-conductor starts: Nova's defaults (control_exchange nova),
    # no database, the in-process transport.
    config.parse_args(['record_nova_wire'], default_config_files=[],
                      configure_db=False, init_rpc=False)
    messaging.TransportURL.parse(CONF)  # registers transport_url
    CONF.set_override('transport_url', 'fake:/')
    objects.register_all()
    rpc.init(CONF)
    found = record_messages(make_context())
    found['selection'] = record_selection()
    found['no_valid_host'] = record_failure()
    for name, value in sorted(found.items()):
        path = os.path.join(out, 'nova34_%s.json' % name)
        with open(path, 'w') as handle:
            json.dump(_sorted_changes(value), handle, indent=1,
                      sort_keys=True)
            handle.write('\n')
        sys.stdout.write(path + '\n')


if __name__ == '__main__':
    main(sys.argv)
