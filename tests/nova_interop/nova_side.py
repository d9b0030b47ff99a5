"""What nova-api would do, done with Nova's own objects and RPC clients.

Run in a process of its own (Nova and Gantt register their options on
the same global ConfigOpts, so a process holds one of them), with the
environment's nova.conf, one command per run; it prints one JSON
document::

    python nova_side.py --config-file nova.conf flavor m1.tiny 1 512 1
    python nova_side.py --config-file nova.conf boot m1.tiny 20
    python nova_side.py --config-file nova.conf wait UUID... --timeout 120
    python nova_side.py --config-file nova.conf delete UUID...
    python nova_side.py --config-file nova.conf select m1.tiny 20
    python nova_side.py --config-file nova.conf resize UUID [m1.small]
    python nova_side.py --config-file nova.conf confirm UUID

``boot`` builds what nova-api builds for a server create (a BuildRequest,
a RequestSpec and an InstanceMapping per instance, in Nova's API
database) and casts ``schedule_and_build_instances`` to Nova's conductor
through Nova's ``ComputeTaskAPI``: no network (``none``), an image the
fake driver need not fetch. ``select`` times Nova's own scheduler client
(``SchedulerQueryClient.select_destinations``) as the conductor calls it,
one instance per call, and removes each call's claim afterwards.
"""

import argparse
import json
import sys
import time
import uuid

IMAGE_ID = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
IMAGE = {'id': IMAGE_ID, 'name': 'cirros', 'status': 'active',
         'container_format': 'bare', 'disk_format': 'raw', 'size': 0,
         'min_disk': 0, 'min_ram': 0, 'properties': {}}
PROJECT = 'interop-project'
USER = 'interop-user'


def _setup(conf_file):
    from nova import config
    from nova import context
    from nova import objects

    objects.register_all()
    config.parse_args(['nova_side', '--config-file', conf_file])
    return context.RequestContext(user_id=USER, project_id=PROJECT,
                                  is_admin=True)


def flavor(ctxt, name, vcpus, memory_mb, root_gb):
    from nova import exception
    from nova import objects

    try:
        found = objects.Flavor.get_by_name(ctxt, name)
        return {'flavorid': found.flavorid}
    except exception.FlavorNotFound:
        pass
    made = objects.Flavor(context=ctxt, name=name, flavorid=name,
                          vcpus=int(vcpus), memory_mb=int(memory_mb),
                          root_gb=int(root_gb), ephemeral_gb=0, swap=0,
                          rxtx_factor=1.0, vcpu_weight=0, disabled=False,
                          is_public=True, extra_specs={})
    made.create()
    return {'flavorid': made.flavorid}


def _instance(ctxt, the_flavor, instance_uuid, index, name):
    from nova.compute import power_state
    from nova.compute import task_states
    from nova.compute import vm_states
    from nova.network import model as network_model
    from nova import objects

    instance = objects.Instance(context=ctxt)
    instance.uuid = instance_uuid
    instance.project_id = PROJECT
    instance.user_id = USER
    instance.flavor = the_flavor
    instance.old_flavor = None
    instance.new_flavor = None
    instance.instance_type_id = the_flavor.id
    instance.vcpus = the_flavor.vcpus
    instance.memory_mb = the_flavor.memory_mb
    instance.root_gb = the_flavor.root_gb
    instance.ephemeral_gb = the_flavor.ephemeral_gb
    instance.image_ref = IMAGE_ID
    instance.display_name = '%s-%d' % (name, index)
    instance.hostname = instance.display_name
    instance.launch_index = index
    instance.vm_state = vm_states.BUILDING
    instance.task_state = task_states.SCHEDULING
    instance.power_state = power_state.NOSTATE
    instance.availability_zone = None
    instance.metadata = {}
    instance.system_metadata = {}
    instance.config_drive = ''
    instance.key_name = None
    instance.key_data = None
    instance.reservation_id = 'r-interop'
    instance.locked = False
    instance.root_device_name = None
    # As nova-api leaves it: an empty network cache (the compute reads it
    # when it tears the server down).
    instance.info_cache = objects.InstanceInfoCache(
        instance_uuid=instance_uuid, network_info=network_model.NetworkInfo())
    return instance


def boot(ctxt, flavor_name, count, requests=1):
    """``requests`` server creates of ``count`` instances each, cast one
    after the other; the instances' uuids."""
    uuids = []
    for number in range(int(requests)):
        uuids += _boot_one(ctxt, flavor_name, int(count),
                           'interop%d' % number)
    return {'uuids': uuids}


def _boot_one(ctxt, flavor_name, count, name):
    from nova.conductor import api as conductor_api
    from nova import objects

    the_flavor = objects.Flavor.get_by_name(ctxt, flavor_name)
    uuids = [str(uuid.uuid4()) for _ in range(count)]
    image_meta = objects.ImageMeta.from_dict(IMAGE)
    bdms = objects.BlockDeviceMappingList(objects=[
        objects.BlockDeviceMapping(
            source_type='image', destination_type='local',
            image_id=IMAGE_ID, boot_index=0, delete_on_termination=True,
            device_type='disk', volume_size=None, volume_id=None,
            snapshot_id=None, guest_format=None, disk_bus=None,
            device_name=None, no_device=False, tag=None,
            connection_info=None, attachment_id=None, volume_type=None,
            encrypted=False)])
    build_requests, specs = [], []
    for index, instance_uuid in enumerate(uuids):
        instance = _instance(ctxt, the_flavor, instance_uuid, index, name)
        spec = objects.RequestSpec.from_components(
            ctxt, instance_uuid, image_meta, the_flavor, None,
            objects.InstancePCIRequests(requests=[]), {}, None, None,
            security_groups=objects.SecurityGroupList(objects=[]))
        spec.num_instances = count
        spec.project_id = PROJECT
        spec.user_id = USER
        spec.create()
        build = objects.BuildRequest(
            context=ctxt, instance=instance, instance_uuid=instance_uuid,
            project_id=PROJECT, block_device_mappings=bdms,
            tags=objects.TagList())
        build.create()
        objects.InstanceMapping(
            context=ctxt, instance_uuid=instance_uuid, cell_mapping=None,
            project_id=PROJECT, user_id=USER).create()
        build_requests.append(build)
        specs.append(spec)
    networks = objects.NetworkRequestList(
        objects=[objects.NetworkRequest(network_id='none')])
    conductor_api.ComputeTaskAPI().schedule_and_build_instances(
        ctxt, build_requests=build_requests, request_spec=specs,
        image=IMAGE, admin_password='', injected_files=[],
        requested_networks=networks, block_device_mapping=bdms,
        tags=objects.TagList())
    return uuids


def _state(ctxt, instance_uuid):
    from nova import context as nova_context
    from nova import exception
    from nova import objects

    mapping = objects.InstanceMapping.get_by_instance_uuid(
        ctxt, instance_uuid)
    if mapping.cell_mapping is None:
        return {'uuid': instance_uuid, 'cell': None}
    with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
        try:
            instance = objects.Instance.get_by_uuid(cctxt, instance_uuid)
        except exception.InstanceNotFound:
            return {'uuid': instance_uuid, 'cell': mapping.cell_mapping.name,
                    'deleted': True}
        faults = objects.InstanceFaultList.get_by_instance_uuids(
            cctxt, [instance_uuid])
        fault = faults[0].message if len(faults) else None
        return {'uuid': instance_uuid, 'cell': mapping.cell_mapping.name,
                'vm_state': instance.vm_state,
                'task_state': instance.task_state, 'host': instance.host,
                'node': instance.node, 'fault': fault,
                'flavor': {'vcpus': instance.flavor.vcpus,
                           'memory_mb': instance.flavor.memory_mb,
                           'root_gb': instance.flavor.root_gb}}


def wait(ctxt, *uuids, timeout=120):
    """Each instance's state once none is building any more."""
    deadline = time.time() + float(timeout)
    while True:
        states = [_state(ctxt, instance_uuid) for instance_uuid in uuids]
        settled = [state for state in states
                   if state.get('deleted') or state.get('vm_state') in (
                       'active', 'error', 'resized')
                   and not state.get('task_state')]
        if len(settled) == len(states) or time.time() > deadline:
            return {'states': states, 'at': time.time()}
        time.sleep(0.2)


def delete(ctxt, *uuids):
    """Delete the instances as nova-api does (the compute tears them
    down and removes their allocations)."""
    from nova.compute import api as compute_api
    from nova import context as nova_context
    from nova import objects

    api = compute_api.API()
    for instance_uuid in uuids:
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            ctxt, instance_uuid)
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            instance = objects.Instance.get_by_uuid(cctxt, instance_uuid)
            api.delete(cctxt, instance)
    return {'deleted': list(uuids)}


def _instance_of(ctxt, instance_uuid):
    from nova import context as nova_context
    from nova import objects

    mapping = objects.InstanceMapping.get_by_instance_uuid(
        ctxt, instance_uuid)
    cctxt = nova_context.RequestContext(
        user_id=USER, project_id=PROJECT, is_admin=True)
    nova_context.set_target_cell(cctxt, mapping.cell_mapping)
    return cctxt, objects.Instance.get_by_uuid(
        cctxt, instance_uuid, expected_attrs=['flavor'])


def resize(ctxt, instance_uuid, flavor_name=None):
    """Resize to ``flavor_name`` as nova-api does, or cold-migrate
    without one; the migration's uuid once the conductor made it."""
    from nova.compute import api as compute_api
    from nova import objects

    cctxt, instance = _instance_of(ctxt, instance_uuid)
    flavor_id = None
    if flavor_name:
        flavor_id = objects.Flavor.get_by_name(ctxt, flavor_name).flavorid
    compute_api.API().resize(cctxt, instance, flavor_id=flavor_id)
    deadline = time.time() + 60
    while time.time() < deadline:
        migrations = objects.MigrationList.get_by_filters(
            cctxt, {'instance_uuid': instance_uuid})
        fresh = [migration for migration in migrations
                 if migration.status not in ('confirmed', 'reverted',
                                             'error', 'failed')]
        if fresh:
            return {'migration': fresh[0].uuid,
                    'source': fresh[0].source_node}
        time.sleep(0.2)
    raise RuntimeError('no migration of %s appeared' % instance_uuid)


def confirm(ctxt, instance_uuid):
    from nova.compute import api as compute_api

    cctxt, instance = _instance_of(ctxt, instance_uuid)
    compute_api.API().confirm_resize(cctxt, instance)
    return {'confirmed': instance_uuid}


def select(ctxt, flavor_name, calls):
    """Nova's scheduler client, timed: one instance per call, as the
    conductor asks (objects and alternates); each claim removed after."""
    from nova import objects
    from nova.scheduler.client import query
    from nova.scheduler.client import report

    the_flavor = objects.Flavor.get_by_name(ctxt, flavor_name)
    image_meta = objects.ImageMeta.from_dict(IMAGE)
    client = query.SchedulerQueryClient()
    placement = report.report_client_singleton()
    times = []
    hosts = []
    for _ in range(int(calls)):
        instance_uuid = str(uuid.uuid4())
        spec = objects.RequestSpec.from_components(
            ctxt, instance_uuid, image_meta, the_flavor, None,
            objects.InstancePCIRequests(requests=[]), {}, None, None,
            security_groups=objects.SecurityGroupList(objects=[]))
        spec.project_id = PROJECT
        spec.user_id = USER
        started = time.perf_counter()
        answer = client.select_destinations(
            ctxt, spec, [instance_uuid], return_objects=True,
            return_alternates=True)
        times.append(time.perf_counter() - started)
        hosts.append(answer[0][0].service_host)
        placement.delete_allocation_for_instance(ctxt, instance_uuid,
                                                 force=True)
    return {'seconds': times, 'hosts': hosts}


COMMANDS = {'flavor': flavor, 'boot': boot, 'wait': wait, 'delete': delete,
            'select': select, 'resize': resize, 'confirm': confirm}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--config-file', required=True)
    parser.add_argument('--timeout', default=120)
    parser.add_argument('command', choices=sorted(COMMANDS))
    parser.add_argument('args', nargs='*')
    args = parser.parse_args(argv)
    ctxt = _setup(args.config_file)
    kwargs = {'timeout': args.timeout} if args.command == 'wait' else {}
    result = COMMANDS[args.command](ctxt, *args.args, **kwargs)
    json.dump(result, sys.stdout)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
