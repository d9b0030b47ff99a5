"""Nova's legacy ``request_spec`` and ``filter_properties`` (API 4.0).

A Nova capped by ``[upgrade_levels] scheduler`` below 4.3 (``liberty``
or older) sends ``select_destinations`` the dicts of its
``RequestSpec.to_legacy_request_spec_dict`` and
``to_legacy_filter_properties_dict`` instead of the object, and no
``instance_uuids``. Nova's scheduler rebuilds its RequestSpec from them
(``RequestSpec.from_primitives``); :func:`to_nova_spec` does the same
into the decoded form :func:`scheduler.nova.request_spec.from_nova`
reads, so both forms go through one reader::

    decoded = legacy_spec.to_nova_spec(request_spec, filter_properties)
    spec = request_spec.from_nova(decoded, 'request_spec')

What the dicts carry: ``request_spec``: ``num_instances``, ``image`` (a
dict whose ``properties`` are ImageMetaProps' typed values),
``instance_type`` (a Flavor object), ``instance_properties`` (uuid,
project and user, availability zone, numa_topology, pci_requests);
``filter_properties``: ``ignore_hosts``, ``force_hosts``,
``force_nodes``, ``retry`` (``{num_attempts, hosts: [[host, node]]}``),
``limits``, ``scheduler_hints`` (a lone value for one-element lists),
``requested_destination`` (a Destination object) and the group, either
an InstanceGroup object (``instance_group``) or the ``group_*`` keys
(policies, hosts, members, uuid: the rules are not carried).
"""

from scheduler.nova import primitives

# The RequestSpec version the rebuilt spec claims (Nova 34's).
SPEC_VERSION = (1, 15)


def _object(name, data, field, version=(1, 0)):
    return primitives.NovaObject(name, version, data, field)


def _dict(value, field):
    if value is None:
        return {}
    if not isinstance(value, dict):
        primitives.refuse(field, 'must be a dict, not %s'
                          % type(value).__name__)
    return value


def _image(image, field):
    if not image:
        return None
    image = _dict(image, field)
    data = {name: image.get(name) for name in ('id', 'name', 'disk_format')}
    props = image.get('properties')
    if isinstance(props, primitives.NovaObject):
        data['properties'] = props
    elif props is not None:
        data['properties'] = _object('ImageMetaProps', _dict(
            props, '%s.properties' % field), '%s.properties' % field)
    return _object('ImageMeta', data, field)


def _retry(retry, field):
    if not retry:
        return None
    retry = _dict(retry, field)
    hosts = retry.get('hosts') or []
    if not isinstance(hosts, list):
        primitives.refuse('%s.hosts' % field, 'must be a list')
    nodes = []
    for index, pair in enumerate(hosts):
        if not (isinstance(pair, list) and len(pair) == 2):
            primitives.refuse('%s.hosts[%d]' % (field, index),
                              'must be a [host, node] pair')
        nodes.append(_object('ComputeNode', {
            'host': pair[0], 'hypervisor_hostname': pair[1]},
            '%s.hosts[%d]' % (field, index)))
    return _object('SchedulerRetries', {
        'num_attempts': retry.get('num_attempts', 0),
        'hosts': _object('ComputeNodeList', {'objects': nodes},
                         '%s.hosts' % field)}, field)


def _group(filter_properties, hints, field):
    group = filter_properties.get('instance_group')
    if group:
        return group
    if filter_properties.get('group_updated') is not True:
        return None
    policies = filter_properties.get('group_policies') or []
    if not isinstance(policies, list) or not policies:
        primitives.refuse('%s.group_policies' % field,
                          'must list the group\'s policy')
    uuid = filter_properties.get('group_uuid') or hints.get('group')
    if isinstance(uuid, list):
        uuid = uuid[0] if uuid else None
    return _object('InstanceGroup', {
        'uuid': uuid, 'policy': policies[0],
        'hosts': filter_properties.get('group_hosts') or [],
        'members': filter_properties.get('group_members') or []},
        '%s.group' % field)


def to_nova_spec(request_spec, filter_properties):
    """A decoded Nova RequestSpec (NovaObject) of the legacy dicts,
    already decoded by :func:`scheduler.nova.primitives.decode`."""
    request_spec = _dict(request_spec, 'request_spec')
    filter_properties = _dict(filter_properties, 'filter_properties')
    instance = _dict(request_spec.get('instance_properties'),
                     'request_spec.instance_properties')
    if isinstance(request_spec.get('instance_properties'),
                  primitives.NovaObject):
        instance = request_spec['instance_properties'].data
    hints = _dict(filter_properties.get('scheduler_hints'),
                  'filter_properties.scheduler_hints')
    data = {
        'num_instances': request_spec.get('num_instances', 1),
        'image': _image(request_spec.get('image'), 'request_spec.image'),
        'flavor': request_spec.get('instance_type'),
        'instance_uuid': instance.get('uuid'),
        'project_id': instance.get('project_id'),
        'user_id': instance.get('user_id'),
        'availability_zone': instance.get('availability_zone'),
        'numa_topology': instance.get('numa_topology'),
        'pci_requests': instance.get('pci_requests'),
        'ignore_hosts': filter_properties.get('ignore_hosts'),
        'force_hosts': filter_properties.get('force_hosts'),
        'force_nodes': filter_properties.get('force_nodes'),
        'retry': _retry(filter_properties.get('retry'),
                        'filter_properties.retry'),
        'instance_group': _group(filter_properties, hints,
                                 'filter_properties'),
        'scheduler_hints': hints,
        'requested_destination': filter_properties.get(
            'requested_destination'),
    }
    return _object('RequestSpec', data, 'request_spec', SPEC_VERSION)
