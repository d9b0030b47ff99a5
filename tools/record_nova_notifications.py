"""Record what Nova 34's scheduler sends around ``select_destinations``.

Run by hand, in a virtualenv of its own with ``nova==34.0.0`` installed
(never imported by Gantt, which does not depend on Nova)::

    python3 -m venv /tmp/nova-venv
    /tmp/nova-venv/bin/pip install nova==34.0.0
    /tmp/nova-venv/bin/python tools/record_nova_notifications.py \\
        tests/unit/notifications/fixtures/nova

For each request spec below it writes ``<name>.json`` holding

* ``context``: the request context as it travels on the wire;
* ``spec``: the RequestSpec as Nova's conductor puts it on the wire
  (NovaObjectSerializer's primitive, through JSON);
* ``request_filters``: for a spec that Nova's request filters change on
  the scheduler's side, what they added;
* ``notifications``: per ``notification_format``, what Nova's own
  ``SchedulerManager._select_destinations`` emitted (its ``_schedule``
  replaced by a stub: the notifications are all this records), captured by
  oslo.messaging's ``test`` notification driver, with the topics the
  notifier that sent each one was built with.

and ``notification_options.json``: Nova's ``[notifications]`` options
(defaults, choices, deprecated names).

The specs are built with Nova's objects the way its API and conductor
build them (``RequestSpec.from_components``), deserialized from the wire
primitive on the "scheduler side" before the notifications are sent, as
nova-scheduler does.
"""

import datetime
import json
import os
import sys

from oslo_messaging.notify import _impl_test
from oslo_messaging import opts as messaging_opts
from oslo_serialization import jsonutils

import nova.conf
from nova import context as nova_context
from nova import objects
from nova.objects import base as objects_base
from nova import rpc
from nova.scheduler import manager as scheduler_manager

CONF = nova.conf.CONF
HOST = 'sched-host-1'
FORMATS = ('unversioned', 'versioned', 'both')


def _context():
    return nova_context.RequestContext(
        user_id='8a7e2b1c4d5f4e6a9b0c1d2e3f4a5b6c',
        project_id='6f70656e737461636b20342065766572',
        request_id='req-4b1f0b6e-93a1-4c39-9f4c-5a0d3b5f2c11',
        global_request_id='req-1d6e5c8a-2f47-4b8e-a1d2-7c3b9e0f4a55',
        roles=['member', 'reader'], user_name='demo',
        auth_token='gAAAAAB-not-a-real-token',
        remote_address='198.51.100.4',
        service_catalog=[
            {'type': 'placement', 'name': 'placement',
             'endpoints': [{'region': 'RegionOne',
                            'publicURL': 'http://ctl/placement'}]},
            {'type': 'identity', 'name': 'keystone',
             'endpoints': [{'region': 'RegionOne',
                            'publicURL': 'http://ctl/identity'}]}],
        project_name='demo', is_admin=False,
        timestamp=datetime.datetime(2026, 12, 4, 13, 30, 5, 123456))


def _flavor(extra_specs, **values):
    flavor = objects.Flavor(
        id=7, flavorid='c1-m2', name='c1.m2', memory_mb=2048, vcpus=2,
        root_gb=20, ephemeral_gb=0, swap=0, rxtx_factor=1.0,
        vcpu_weight=0, disabled=False, is_public=True,
        extra_specs=extra_specs, description=None)
    flavor.update(values)
    return flavor


def spec_full(ctxt):
    """A boot of one server from an image with properties, in a server
    group, with hints, forced and ignored hosts and a retry."""
    image = {
        'id': '155d900f-4e14-4e4c-a73d-069cbf4541e6',
        'name': 'cirros-0.6.2-x86_64-disk', 'status': 'active',
        'visibility': 'public', 'protected': False,
        'checksum': 'c8fc807773e5354afe61636071771906',
        'owner': '6f70656e737461636b20342065766572',
        'size': 21430272, 'virtual_size': 117440512,
        'container_format': 'bare', 'disk_format': 'qcow2',
        'created_at': '2026-11-20T08:15:30Z',
        'updated_at': '2026-11-20T08:16:01Z',
        'tags': ['cirros', 'test'], 'min_ram': 128, 'min_disk': 1,
        'properties': {'hw_architecture': 'x86_64',
                       'hw_disk_bus': 'virtio', 'hw_vif_model': 'virtio',
                       'hw_machine_type': 'q35', 'os_distro': 'cirros',
                       'hw_cpu_cores': 2, 'hw_rng_model': 'virtio',
                       'img_hv_type': 'kvm',
                       'hw_ephemeral_encryption_secret_uuid':
                           '0f0e0d0c-0b0a-4908-8706-050403020100',
                       'traits_required': ['HW_CPU_X86_AVX2']},
    }
    group = objects.InstanceGroup(
        uuid='8d1c3c1e-7f2a-4e0c-9b1a-0a6f1f0c2d3e', name='web',
        user_id=ctxt.user_id, project_id=ctxt.project_id,
        policy='anti-affinity', rules={'max_server_per_host': '1'},
        members=['f4b2c1d0-1a2b-4c3d-8e9f-0a1b2c3d4e5f'],
        hosts=['cmp-3'])
    filter_properties = {
        'ignore_hosts': ['cmp-9'],
        'force_hosts': ['cmp-1', 'cmp-2'],
        'force_nodes': ['cmp-1.example.org'],
        'retry': {'num_attempts': 2,
                  'hosts': [['cmp-4', 'cmp-4.example.org']]},
        'limits': {'memory_mb': 4096},
        'scheduler_hints': {
            'group': group.uuid,
            'same_host': ['a2f0c7e8-6b1d-4e3f-9a8b-7c6d5e4f3a2b',
                          'b3e1d8f9-7c2e-4f4a-8b9c-8d7e6f5a4b3c'],
            'build_near_host_ip': '192.0.2.7'},
    }
    # As the API builds it from the names or ids a user asked for
    # (SecurityGroupList's constructor drops ``objects``).
    secgroups = objects.SecurityGroupList()
    secgroups.objects = [
        objects.SecurityGroup(name='default'),
        objects.SecurityGroup(uuid='3f6d2a0c-8e1b-4c7d-9a5f-2b4e6c8d0a1f')]
    return objects.RequestSpec.from_components(
        ctxt, 'f4b2c1d0-1a2b-4c3d-8e9f-0a1b2c3d4e5f', image,
        _flavor({'hw:cpu_policy': 'shared', 'quota:cpu_shares': '512'}),
        None, objects.InstancePCIRequests(requests=[]), filter_properties,
        group, 'nova-az1', security_groups=secgroups)


def spec_numa_pci(ctxt):
    """A boot from volume (no image properties) asking for a NUMA
    topology and a PCI device, sent to a given host (a destination with a
    cell and aggregates)."""
    numa = objects.InstanceNUMATopology(
        emulator_threads_policy='isolate',
        cells=[objects.InstanceNUMACell(
                   id=0, cpuset=set(), pcpuset={0, 1}, memory=1024,
                   pagesize=2048, cpu_policy='dedicated',
                   cpu_thread_policy='prefer',
                   cpu_topology=objects.VirtCPUTopology(
                       sockets=1, cores=2, threads=1),
                   cpu_pinning={0: 4, 1: 5}),
               objects.InstanceNUMACell(
                   id=1, cpuset={2, 3}, pcpuset=set(), memory=1024,
                   cpu_policy='shared')])
    pci = objects.InstancePCIRequests(requests=[
        objects.InstancePCIRequest(
            count=1, alias_name='a1',
            spec=[{'vendor_id': '8086', 'product_id': '1563'}],
            request_id='9c7a5e3b-1d2f-4a6b-8c0d-e1f2a3b4c5d6',
            numa_policy='preferred')])
    destination = objects.Destination(
        host='cmp-7', node='cmp-7.example.org',
        cell=objects.CellMapping(
            uuid='00000000-0000-0000-0000-000000000001', name='cell1',
            transport_url='rabbit://nova:secret@mq/cell1',
            database_connection='mysql+pymysql://nova:secret@db/cell1',
            disabled=False))
    destination.require_aggregates(['agg-1', 'agg-2'])
    spec = objects.RequestSpec.from_components(
        ctxt, 'a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d', {},
        _flavor({'hw:numa_nodes': '2', 'pci_passthrough:alias': 'a1:1',
                 'hw:cpu_policy': 'mixed'}, name='numa.2', flavorid='n2',
                description='two cells', vcpus=4),
        numa, pci, {'requested_destination': destination}, None, None)
    spec.is_bfv = True
    spec.num_instances = 2
    return spec


def spec_sparse(ctxt):
    """A spec with much left unset, as a move operation's can be: a
    flavor without extra specs, an image without dates, a group without
    rules or hosts, a destination with a host only, a retry with no host
    yet, no security groups, hints, zone or ignored hosts."""
    spec = objects.RequestSpec(ctxt)
    spec.instance_uuid = '5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9'
    spec.project_id = ctxt.project_id
    spec.user_id = ctxt.user_id
    spec.num_instances = 3
    spec.flavor = objects.Flavor(
        flavorid='tiny', name='m1.tiny', memory_mb=512, vcpus=1, root_gb=1,
        ephemeral_gb=0, swap=0, disabled=False, is_public=True)
    spec.image = objects.ImageMeta.from_dict({
        'id': '0e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b', 'name': 'plain',
        'properties': {'hw_video_model': 'virtio'}})
    spec.numa_topology = None
    spec.pci_requests = None
    spec.requested_destination = objects.Destination(host='cmp-2')
    spec.retry = objects.SchedulerRetries(
        num_attempts=1, hosts=objects.ComputeNodeList(objects=[]))
    spec.instance_group = objects.InstanceGroup(
        uuid='6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d', policy='affinity',
        members=[])
    spec.force_hosts = []
    spec.force_nodes = None
    return spec


def spec_az(ctxt):
    """A boot into an availability zone: nova-scheduler's request filter
    ``map_az_to_placement_aggregate`` turns the zone into required
    aggregates (a requested destination the conductor did not send)
    before it notifies."""
    return objects.RequestSpec.from_components(
        ctxt, '7b8c9d0e-1f2a-4b3c-9d4e-5f6a7b8c9d0e', {},
        _flavor({}), None, objects.InstancePCIRequests(requests=[]), {},
        None, 'az-east', security_groups=objects.SecurityGroupList())


AZ_AGGREGATES = ['1a2b3c4d-0000-4000-8000-00000000000a',
                 '1a2b3c4d-0000-4000-8000-00000000000b']


def filter_az(server_ctxt, server_spec):
    """Run Nova's own request filter on the scheduler's spec, the
    aggregates of the zone (a database query in Nova) given."""
    from nova.scheduler import request_filter

    def by_metadata(ctxt, key, value):
        assert (key, value) == ('availability_zone', 'az-east')
        return [objects.Aggregate(uuid=uuid) for uuid in AZ_AGGREGATES]

    real = objects.AggregateList.get_by_metadata
    objects.AggregateList.get_by_metadata = by_metadata
    try:
        request_filter.map_az_to_placement_aggregate(server_ctxt,
                                                     server_spec)
    finally:
        objects.AggregateList.get_by_metadata = real
    return {'required_aggregates': [AZ_AGGREGATES]}


SPECS = {'spec_full': spec_full, 'spec_numa_pci': spec_numa_pci,
         'spec_sparse': spec_sparse, 'spec_az': spec_az}
# Nova's request filters to run on the scheduler's copy of a spec before
# notifying, as nova-scheduler does; what they added is recorded.
REQUEST_FILTERS = {'spec_az': filter_az}


def _init_rpc(notification_format):
    CONF.set_override('notification_format', notification_format,
                      group='notifications')
    if rpc.NOTIFIER is not None:
        rpc.cleanup()
    rpc.init(CONF)
    return {'legacy': _notifier_facts(rpc.LEGACY_NOTIFIER),
            'versioned': _notifier_facts(rpc.NOTIFIER)}


def _notifier_facts(notifier):
    return {'topics': list(notifier._topics),
            'drivers': list(notifier._driver_names)}


def _emit(server_ctxt, server_spec):
    """Nova's own code path: SchedulerManager._select_destinations with
    the scheduling itself stubbed out."""
    manager = scheduler_manager.SchedulerManager.__new__(
        scheduler_manager.SchedulerManager)
    manager.notifier = rpc.get_notifier('scheduler')
    manager._schedule = lambda *args, **kwargs: []
    _impl_test.reset()
    manager._select_destinations(server_ctxt, server_spec, [
        server_spec.instance_uuid], {}, {})
    return [{'ctxt': ctxt, 'message': message, 'priority': priority}
            for ctxt, message, priority, _retry in _impl_test.NOTIFICATIONS]


def record(name, build):
    ctxt = _context()
    serializer = objects_base.NovaObjectSerializer()
    spec = build(ctxt)
    wire_ctxt = json.loads(jsonutils.dumps(ctxt.to_dict()))
    wire_spec = json.loads(jsonutils.dumps(
        serializer.serialize_entity(ctxt, spec)))
    result = {'nova_version': _nova_version(), 'host': HOST,
              'context': wire_ctxt, 'spec': wire_spec,
              'notifications': {}}
    for notification_format in FORMATS:
        notifiers = _init_rpc(notification_format)
        server_ctxt = nova_context.RequestContext.from_dict(wire_ctxt)
        server_spec = serializer.deserialize_entity(server_ctxt, wire_spec)
        if name in REQUEST_FILTERS:
            result['request_filters'] = REQUEST_FILTERS[name](server_ctxt,
                                                              server_spec)
        sent = _emit(server_ctxt, server_spec)
        # Through JSON, as the messaging driver would send them.
        sent = json.loads(jsonutils.dumps(sent))
        for item in sent:
            kind = ('versioned' if 'nova_object.name' in
                    item['message']['payload'] else 'legacy')
            item['topics'] = notifiers[kind]['topics']
        result['notifications'][notification_format] = {
            'notifiers': notifiers, 'sent': sent}
    return result


def _nova_version():
    from importlib import metadata
    return metadata.version('nova')


def notification_options():
    """Nova's ``[notifications]`` options: default, choices and the
    deprecated names a nova.conf may still use."""
    from nova.conf import notifications as nova_notifications
    options = {}
    for opt in nova_notifications.ALL_OPTS:
        choices = getattr(opt.type, 'choices', None)
        options[opt.dest] = {
            'default': opt.default,
            'choices': list(choices) if choices else None,
            'deprecated': sorted([old.group or 'notifications',
                                  old.name or opt.dest]
                                 for old in opt.deprecated_opts)}
    return options


def main(argv):
    out = argv[1] if len(argv) > 1 else '.'
    for group, opts in messaging_opts.list_opts():
        if group in (None, 'DEFAULT', 'oslo_messaging_notifications'):
            CONF.register_opts(opts, group=group)
    CONF([], project='nova')
    CONF.set_override('host', HOST)
    CONF.set_override('transport_url', 'fake:/')
    CONF.set_override('driver', ['test'],
                      group='oslo_messaging_notifications')
    objects.register_all()
    os.makedirs(out, exist_ok=True)
    for name, build in SPECS.items():
        path = os.path.join(out, name + '.json')
        with open(path, 'w') as stream:
            json.dump(record(name, build), stream, indent=1, sort_keys=True)
            stream.write('\n')
        sys.stdout.write('wrote %s\n' % path)
    path = os.path.join(out, 'notification_options.json')
    with open(path, 'w') as stream:
        json.dump(notification_options(), stream, indent=1, sort_keys=True)
        stream.write('\n')
    sys.stdout.write('wrote %s\n' % path)


if __name__ == '__main__':
    main(sys.argv)
