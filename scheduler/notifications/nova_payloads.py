"""Nova's versioned ``RequestSpecPayload``, built from a RequestSpec as it
came on the wire from Nova's conductor.

In Nova mode (``[scheduler] backend = nova``) Gantt answers an unchanged
Nova's ``select_destinations``, and consumers of Nova's notifications
expect what nova-scheduler sends. This module turns the RequestSpec's
wire primitive (``nova_object.*`` dicts, RequestSpec 1.15 and its nested
objects) into the payload Nova 34 builds for it: names, versions and
namespace ``nova`` as Nova's, and each field filled by Nova's rules, which
are not always the obvious ones:

* an unset field of the spec is sent as null (Nova's payloads read every
  field of their source and default what cannot be read to None), except
  in ``ImageMetaPropsPayload`` and ``DestinationPayload``, which carry
  only what was set;
* ``force_hosts`` and ``force_nodes`` carry the first entry only;
* a server group's ``rules`` keep ``max_server_per_host`` alone, as text;
* a retry's ``hosts`` are the hypervisor host names tried;
* ``security_groups`` is each group's uuid, or its name when it has none;
* ``image_meta`` is declared by the payload but never set (so absent);
* the spec's NUMA topology and PCI requests carry the instance's uuid
  when their own is unset.

Nothing here imports Nova; ``tests/unit/notifications/fixtures/nova``
holds what the real Nova produced for the same specs::

    payload = nova_payloads.request_spec_payload(spec_primitive)
    payload['nova_object.version']          # '1.1'
"""

from scheduler import exception

NAMESPACE = 'nova'

# Nova 34's payload versions.
VERSIONS = {
    'RequestSpecPayload': '1.1',
    'FlavorPayload': '1.4',
    'ImageMetaPayload': '1.0',
    'ImageMetaPropsPayload': '1.20',
    'InstanceNUMATopologyPayload': '1.0',
    'InstanceNUMACellPayload': '1.2',
    'VirtCPUTopologyPayload': '1.0',
    'InstancePCIRequestsPayload': '1.0',
    'InstancePCIRequestPayload': '1.1',
    'DestinationPayload': '1.0',
    'CellMappingPayload': '2.0',
    'SchedulerRetriesPayload': '1.0',
    'ServerGroupPayload': '1.1',
}

_FLAVOR_FIELDS = ('flavorid', 'memory_mb', 'vcpus', 'root_gb',
                  'ephemeral_gb', 'name', 'swap', 'rxtx_factor',
                  'vcpu_weight', 'disabled', 'is_public', 'extra_specs',
                  'projects', 'description')
_IMAGE_FIELDS = ('id', 'name', 'status', 'visibility', 'protected',
                 'checksum', 'owner', 'size', 'virtual_size',
                 'container_format', 'disk_format', 'created_at',
                 'updated_at', 'tags', 'direct_url', 'min_ram', 'min_disk')
# An image property Nova keeps out of notifications (a secret's id).
_HIDDEN_IMAGE_PROPERTIES = ('hw_ephemeral_encryption_secret_uuid',)
_NUMA_CELL_FIELDS = ('id', 'cpuset', 'pcpuset', 'cpuset_reserved',
                     'memory', 'pagesize', 'cpu_pinning_raw', 'cpu_policy',
                     'cpu_thread_policy')
_PCI_REQUEST_FIELDS = ('count', 'spec', 'alias_name', 'request_id',
                       'numa_policy')
_GROUP_FIELDS = ('uuid', 'name', 'user_id', 'project_id', 'policies',
                 'members', 'hosts', 'policy')
_SPEC_FIELDS = ('instance_uuid', 'project_id', 'user_id',
                'availability_zone', 'ignore_hosts', 'scheduler_hints')


def object_data(primitive, name, where='request_spec'):
    """The ``nova_object.data`` of a Nova object primitive named ``name``;
    an InvalidRequest naming ``where`` when it is something else."""
    if not isinstance(primitive, dict) or not isinstance(
            primitive.get('nova_object.data'), dict):
        raise exception.InvalidRequest(
            reason='%s: expected a Nova %s object primitive, got %s'
            % (where, name, type(primitive).__name__))
    if primitive.get('nova_object.name') != name:
        raise exception.InvalidRequest(
            reason='%s: expected a Nova %s object, got %r'
            % (where, name, primitive.get('nova_object.name')))
    if primitive.get('nova_object.namespace') != NAMESPACE:
        raise exception.InvalidRequest(
            reason='%s: expected namespace %r, got %r'
            % (where, NAMESPACE, primitive.get('nova_object.namespace')))
    return primitive['nova_object.data']


def _payload(name, data):
    return {'nova_object.name': name,
            'nova_object.namespace': NAMESPACE,
            'nova_object.version': VERSIONS[name],
            'nova_object.data': data}


def _pick(data, names):
    return {name: data.get(name) for name in names}


def request_spec_payload(spec):
    """Nova's RequestSpecPayload for a RequestSpec primitive."""
    data = object_data(spec, 'RequestSpec')
    payload = _pick(data, _SPEC_FIELDS)
    payload['num_instances'] = data.get('num_instances', 1)
    instance_uuid = data.get('instance_uuid')
    payload['flavor'] = (flavor_payload(data['flavor'])
                         if data.get('flavor') is not None else None)
    payload['image'] = (image_payload(data['image'])
                        if data.get('image') else None)
    payload['numa_topology'] = (
        numa_topology_payload(data['numa_topology'], instance_uuid)
        if data.get('numa_topology') is not None else None)
    payload['pci_requests'] = (
        pci_requests_payload(data['pci_requests'], instance_uuid)
        if data.get('pci_requests') is not None else None)
    payload['requested_destination'] = (
        destination_payload(data['requested_destination'])
        if data.get('requested_destination') else None)
    payload['retry'] = (retries_payload(data['retry'])
                        if data.get('retry') else None)
    payload['security_groups'] = security_group_ids(
        data.get('security_groups'))
    payload['instance_group'] = (
        server_group_payload(data['instance_group'])
        if data.get('instance_group') else None)
    for name in ('force_hosts', 'force_nodes'):
        values = data.get(name)
        payload[name] = values[0] if values else None
    return _payload('RequestSpecPayload', payload)


def flavor_payload(flavor):
    data = object_data(flavor, 'Flavor', 'request_spec.flavor')
    return _payload('FlavorPayload', _pick(data, _FLAVOR_FIELDS))


def image_payload(image):
    data = object_data(image, 'ImageMeta', 'request_spec.image')
    payload = _pick(data, _IMAGE_FIELDS)
    properties = {}
    if data.get('properties') is not None:
        properties = object_data(data['properties'], 'ImageMetaProps',
                                 'request_spec.image.properties')
    payload['properties'] = _payload(
        'ImageMetaPropsPayload',
        {name: value for name, value in properties.items()
         if name not in _HIDDEN_IMAGE_PROPERTIES})
    return _payload('ImageMetaPayload', payload)


def numa_topology_payload(topology, instance_uuid):
    where = 'request_spec.numa_topology'
    data = object_data(topology, 'InstanceNUMATopology', where)
    cells = []
    for cell in data.get('cells') or []:
        cell_data = object_data(cell, 'InstanceNUMACell', where + '.cells')
        payload = _pick(cell_data, _NUMA_CELL_FIELDS)
        cpu_topology = cell_data.get('cpu_topology')
        payload['cpu_topology'] = None
        if cpu_topology is not None:
            payload['cpu_topology'] = _payload(
                'VirtCPUTopologyPayload',
                _pick(object_data(cpu_topology, 'VirtCPUTopology', where),
                      ('sockets', 'cores', 'threads')))
        cells.append(_payload('InstanceNUMACellPayload', payload))
    return _payload('InstanceNUMATopologyPayload', {
        'instance_uuid': data.get('instance_uuid') or instance_uuid,
        'cells': cells,
        'emulator_threads_policy': data.get('emulator_threads_policy')})


def pci_requests_payload(pci_requests, instance_uuid):
    where = 'request_spec.pci_requests'
    data = object_data(pci_requests, 'InstancePCIRequests', where)
    requests = [
        _payload('InstancePCIRequestPayload', _pick(
            object_data(request, 'InstancePCIRequest', where + '.requests'),
            _PCI_REQUEST_FIELDS))
        for request in data.get('requests') or []]
    return _payload('InstancePCIRequestsPayload', {
        'instance_uuid': data.get('instance_uuid') or instance_uuid,
        'requests': requests})


def destination_payload(destination):
    where = 'request_spec.requested_destination'
    data = object_data(destination, 'Destination', where)
    payload = {name: data[name] for name in ('host', 'node')
               if data.get(name) is not None}
    if data.get('cell') is not None:
        cell = object_data(data['cell'], 'CellMapping', where + '.cell')
        payload['cell'] = _payload('CellMappingPayload', {
            'uuid': cell.get('uuid'), 'name': cell.get('name'),
            'disabled': cell.get('disabled', False)})
    payload['aggregates'] = data.get('aggregates')
    return _payload('DestinationPayload', payload)


def retries_payload(retry):
    where = 'request_spec.retry'
    data = object_data(retry, 'SchedulerRetries', where)
    hosts = []
    if data.get('hosts') is not None:
        nodes = object_data(data['hosts'], 'ComputeNodeList', where)
        hosts = [object_data(node, 'ComputeNode', where + '.hosts').get(
                     'hypervisor_hostname')
                 for node in nodes.get('objects') or []]
    return _payload('SchedulerRetriesPayload', {
        'num_attempts': data.get('num_attempts'), 'hosts': hosts})


def server_group_payload(group):
    data = object_data(group, 'InstanceGroup', 'request_spec.instance_group')
    payload = _pick(data, _GROUP_FIELDS)
    # Nova reads the group's ``rules`` property, which keeps one rule,
    # as an integer, that the payload turns back into text.
    rules = data.get('_rules') or {}
    payload['rules'] = (
        {'max_server_per_host': str(int(rules['max_server_per_host']))}
        if 'max_server_per_host' in rules else {})
    return _payload('ServerGroupPayload', payload)


def security_group_ids(groups):
    """Each group's uuid, or its name when it has no uuid (Nova's
    ``SecurityGroup.identifier``)."""
    if groups is None:
        return []
    where = 'request_spec.security_groups'
    data = object_data(groups, 'SecurityGroupList', where)
    ids = []
    for group in data.get('objects') or []:
        group_data = object_data(group, 'SecurityGroup', where)
        ids.append(group_data['uuid'] if 'uuid' in group_data
                   else group_data.get('name'))
    return ids
