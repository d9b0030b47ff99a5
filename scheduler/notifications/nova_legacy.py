"""Nova's legacy (unversioned) ``scheduler.select_destinations`` payload,
and the request context Nova's notifications carry, from their wire forms.

nova-scheduler sends ``{"request_spec": spec.to_legacy_request_spec_dict()}``
through a JSON serializer that turns any object it meets into something
JSON can carry. The result is what consumers of Nova's legacy
notifications have always read, quirks included, and Gantt reproduces it:

* ``image`` is the ImageMeta as a plain dict (``{}`` without one), its
  dates as ``2026-01-02T03:04:05.000000``;
* ``instance_type`` is the flavor's set fields;
* ``instance_properties`` holds the spec's ``numa_topology`` (a plain dict,
  each cell's ``cpu_topology`` as the object's attribute dump) and
  ``pci_requests`` as the object's attribute dump (``VERSION``,
  ``_changed_fields``, ``_obj_<field>`` and ``_context``, the request
  context's attributes), the instance's project, user, zone and
  uuid, and the flavor's sizes;
* once a versioned RequestSpecPayload was built for the spec (format
  ``both``), the NUMA topology and the PCI requests carry the instance's
  uuid from then on: ``.end`` differs from ``.start``.

One deliberate difference: Nova's ``_context`` dump carries the caller's
keystone token (``auth_token``); Gantt sends it as null. ``_changed_fields``
is a set in Nova, so its order is not meaningful.
"""

import datetime

from oslo_utils import timeutils

from scheduler.notifications import nova_payloads

# Nova's RequestContext keeps only these parts of the service catalog.
_CATALOG_TYPES = ('image', 'block-storage', 'volumev3', 'key-manager',
                  'placement', 'network', 'accelerator', 'sharev2')
# How Nova's JSON serializer writes a datetime.
_JSON_TIME = '%Y-%m-%dT%H:%M:%S.%f'
_DATE_FIELDS = ('created_at', 'updated_at', 'deleted_at')
_INSTANCE_FIELDS = (('numa_topology', 'numa_topology'),
                    ('pci_requests', 'pci_requests'),
                    ('project_id', 'project_id'), ('user_id', 'user_id'),
                    ('availability_zone', 'availability_zone'),
                    ('instance_uuid', 'uuid'))
_FLAVOR_SIZES = ('root_gb', 'ephemeral_gb', 'memory_mb', 'vcpus')
# The spec's objects the legacy payload reads.
_OBJECTS = {'image': 'ImageMeta', 'flavor': 'Flavor',
            'numa_topology': 'InstanceNUMATopology',
            'pci_requests': 'InstancePCIRequests'}


def request_spec(spec, context, uuid_filled=False):
    """``{"request_spec": {...}}`` for a RequestSpec primitive.
    ``context``: the request's context as it came on the wire (a dict);
    ``uuid_filled``: whether a versioned payload was built for this spec
    before (see the module docstring)."""
    data = nova_payloads.object_data(spec, 'RequestSpec')
    for name, object_name in _OBJECTS.items():
        if data.get(name) is not None:
            nova_payloads.object_data(data[name], object_name,
                                      'request_spec.' + name)
    image = data.get('image')
    flavor = data.get('flavor')
    legacy = {
        'num_instances': data.get('num_instances', 1),
        'image': _plain(image) if image else {},
        'instance_properties': _instance(data, context, uuid_filled),
        'instance_type': _plain(flavor) if flavor is not None else {},
    }
    return {'request_spec': legacy}


def _instance(data, context, uuid_filled):
    instance = {}
    uuid = data.get('instance_uuid')
    for name, key in _INSTANCE_FIELDS:
        if name not in data:
            continue
        value = data[name]
        if name == 'numa_topology' and value is not None:
            value = _plain(value, fill_uuid=uuid if uuid_filled else None)
        elif name == 'pci_requests' and value is not None:
            value = _dump(value, _context_attributes(context),
                          fill_uuid=uuid if uuid_filled else None)
        instance[key] = value
    flavor = data.get('flavor')
    if flavor is not None:
        flavor_data = flavor['nova_object.data']
        for name in _FLAVOR_SIZES:
            instance[name] = flavor_data.get(name)
    return instance


def _plain(primitive, fill_uuid=None):
    """An object that reads as a dict of its set fields (Nova's
    ``obj_to_primitive`` and its dict-compatible objects); a nested object
    that does not is dumped with a null context."""
    data = dict(primitive['nova_object.data'])
    if fill_uuid and not data.get('instance_uuid'):
        data['instance_uuid'] = fill_uuid
    plain = {}
    for name, value in data.items():
        if name in _DATE_FIELDS and isinstance(value, str):
            value = _json_time(value)
        if name == 'cpu_topology' and isinstance(value, dict):
            value = _dump(value, None)
        elif _is_object(value):
            value = _plain(value)
        elif isinstance(value, list):
            value = [_plain(item) if _is_object(item) else item
                     for item in value]
        plain[name] = value
    return plain


def _dump(primitive, context, fill_uuid=None):
    """An object as Nova's JSON serializer writes one that is not
    dict-compatible: its instance attributes."""
    data = primitive['nova_object.data']
    changes = list(primitive.get('nova_object.changes', []))
    dump = {'VERSION': primitive['nova_object.version'],
            '_changed_fields': changes, '_context': context}
    if fill_uuid and not data.get('instance_uuid'):
        data = dict(data, instance_uuid=fill_uuid)
        if 'instance_uuid' not in changes:
            changes.append('instance_uuid')
    for name, value in data.items():
        if _is_object(value):
            value = _dump(value, context)
        elif isinstance(value, list):
            value = [_dump(item, context) if _is_object(item) else item
                     for item in value]
        dump['_obj_' + name] = value
    return dump


def _is_object(value):
    return isinstance(value, dict) and 'nova_object.data' in value


def _json_time(text):
    try:
        return timeutils.parse_isotime(text).strftime(_JSON_TIME)
    except ValueError:
        return text


def _context_attributes(context):
    """The attributes of the Nova RequestContext that nova-scheduler makes
    of the wire ``context`` (what a legacy ``_context`` dump shows), the
    token left out."""
    get = context.get
    catalog = [entry for entry in get('service_catalog') or []
               if entry.get('type') in _CATALOG_TYPES]
    attributes = {
        '_is_admin': get('is_admin'), '_read_deleted': get('read_deleted',
                                                            'no'),
        'auth_token': None, 'service_token': None, 'user_auth_plugin': None,
        'cell_uuid': None, 'db_connection': None, 'mq_connection': None,
        'domain_id': get('domain'), 'user_domain_id': get('user_domain'),
        'project_domain_id': get('project_domain'),
        'is_admin_project': get('is_admin_project', True),
        'read_only': get('read_only', False),
        'show_deleted': get('show_deleted', False),
        'roles': get('roles') or [], 'service_roles': [],
        'service_catalog': catalog,
        'timestamp': _context_time(get('timestamp')),
    }
    for name in ('domain_name', 'project_domain_name', 'user_domain_name',
                 'global_request_id', 'project_id', 'project_name',
                 'quota_class', 'remote_address', 'request_id',
                 'resource_uuid', 'system_scope', 'user_id', 'user_name',
                 'service_project_domain_id', 'service_project_domain_name',
                 'service_project_id', 'service_project_name',
                 'service_user_domain_id', 'service_user_domain_name',
                 'service_user_id', 'service_user_name'):
        attributes[name] = get(name)
    return attributes


def notification_context(context, now=None):
    """The context a Nova notification carries: oslo.messaging sends a
    redacted copy of the request's context (no token, catalog, address;
    a new timestamp), in Nova's ``to_dict`` form."""
    get = context.get
    user, project = get('user_id'), get('project_id')
    now = now or timeutils.utcnow()
    return {
        'user': user, 'user_id': user, 'project': project,
        'project_id': project, 'domain': get('domain'),
        'user_domain': get('user_domain'),
        'project_domain': get('project_domain'),
        'is_admin': get('is_admin'), 'read_only': False,
        'show_deleted': False, 'auth_token': None,
        'request_id': get('request_id'),
        'global_request_id': get('global_request_id'),
        'resource_uuid': None, 'roles': get('roles') or [],
        'user_identity': ' '.join(
            value or '-' for value in (user, project, get('domain'),
                                       get('user_domain'),
                                       get('project_domain'))),
        'is_admin_project': True, 'system_scope': get('system_scope'),
        'read_deleted': 'no', 'remote_address': None,
        'timestamp': now.strftime(_JSON_TIME),
        'quota_class': None, 'user_name': get('user_name'),
        'service_catalog': [], 'project_name': get('project_name'),
    }


def _context_time(text):
    if not text:
        return timeutils.utcnow().strftime(_JSON_TIME)
    try:
        return datetime.datetime.strptime(text, _JSON_TIME).strftime(
            _JSON_TIME)
    except ValueError:
        return text
