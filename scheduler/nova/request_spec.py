"""Nova's RequestSpec (1.0 to 1.15, Nova 34's) as Gantt's RequestSpec.

:func:`from_nova` takes a RequestSpec decoded by
:mod:`scheduler.nova.primitives` and builds the
:class:`scheduler.objects.request_spec.RequestSpec` Gantt's drivers
read. What becomes what:

* ``flavor`` (sizes, ``extra_specs``), ``image`` (see
  :mod:`scheduler.nova.image_meta`), ``num_instances``, ``project_id``,
  ``user_id``, ``availability_zone``, ``scheduler_hints``,
  ``ignore_hosts``, ``force_hosts``, ``force_nodes``, ``instance_uuid``,
  ``is_bfv``: the same fields;
* ``instance_group``: uuid, name, policy (or the first of the older
  ``policies``), rules, members, hosts;
* ``requested_destination``: host, node, aggregates, cell,
  allow_cross_cell_move;
* ``retry``: ``num_attempts``, and its ComputeNodeList as ``[host,
  node]`` pairs;
* the hint ``_nova_check_type=rebuild`` (Nova's mark of a rebuild's
  request) sets ``is_rebuild``.

Gantt derives from the flavor and the image what Nova also derives from
them, so these are read there and Nova's copy is not used:
``numa_topology``, the flavor-alias ``pci_requests``, ``limits``, ``id``.
``security_groups`` and ``requested_networks`` ask nothing of a host
here; they are logged at debug level.

What would change the placement and Gantt cannot honour is never dropped
in silence. Refused (InvalidRequest naming the field; Nova's conductor
gets a NoValidHost saying so): ``requested_resources`` (ports' and
accelerators' resource groups), a non-empty ``request_level_params``
(``root_required``, ``root_forbidden``, ``same_subtree``), and a
``requested_destination.forbidden_aggregates``. Logged as a warning:
PCI requests of Neutron ports (SR-IOV; the compute still claims the
device, and a host without one fails the build into a reschedule) and,
once per process, a ``network_metadata`` naming physnets (NUMA affinity
of networks is not weighed).
"""

from oslo_log import log as logging

from scheduler import exception
from scheduler.nova import image_meta
from scheduler.nova import primitives
from scheduler.objects import request_spec as spec_obj
from scheduler import placement_types

LOG = logging.getLogger(__name__)

REBUILD_CHECK = 'rebuild'
# What this process has warned of once already.
_WARNED = set()


def _field(field, name):
    return '%s.%s' % (field, name)


def _string(obj, name, field, nullable=True):
    value = obj.data.get(name)
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        primitives.refuse(_field(field, name), 'must be a string, not %s'
                          % type(value).__name__)
    return value


def _integer(obj, name, field, default=None):
    value = obj.data.get(name)
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        primitives.refuse(_field(field, name), 'must be an integer, not %s'
                          % type(value).__name__)
    return value


def _boolean(obj, name, field, default=False):
    value = obj.data.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        primitives.refuse(_field(field, name), 'must be true or false')
    return value


def _strings(obj, name, field, nullable=True):
    value = obj.data.get(name)
    if value is None and nullable:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str)
                                              for item in value):
        primitives.refuse(_field(field, name), 'must be a list of strings')
    return list(value)


def _string_dict(obj, name, field):
    value = obj.data.get(name) or {}
    if not isinstance(value, dict) or not all(
            isinstance(item, str) for item in value.values()):
        primitives.refuse(_field(field, name),
                          'must be a dict of strings')
    return dict(value)


def flavor(obj, field):
    primitives.expect(obj, field, 'Flavor')
    sizes = {}
    for name in ('vcpus', 'memory_mb'):
        sizes[name] = _integer(obj, name, field)
    for name in ('root_gb', 'ephemeral_gb', 'swap'):
        sizes[name] = _integer(obj, name, field, default=0)
    return spec_obj.Flavor(
        name=_string(obj, 'name', field),
        flavorid=_string(obj, 'flavorid', field),
        extra_specs=_string_dict(obj, 'extra_specs', field), **sizes)


def instance_group(obj, field):
    if obj is None:
        return None
    primitives.expect(obj, field, 'InstanceGroup')
    policy = obj.get('policy')
    if policy is None:
        # InstanceGroup before 1.11 named its policy in a list.
        policies = _strings(obj, 'policies', field) or []
        policy = policies[0] if policies else None
    if not isinstance(policy, str):
        primitives.refuse(_field(field, 'policy'), 'is missing')
    rules_name = '_rules' if '_rules' in obj else 'rules'
    return spec_obj.InstanceGroup(
        uuid=_string(obj, 'uuid', field, nullable=False),
        name=_string(obj, 'name', field), policy=policy,
        rules=_string_dict(obj, rules_name, field),
        members=_strings(obj, 'members', field) or [],
        hosts=_strings(obj, 'hosts', field) or [])


def destination(obj, field):
    if obj is None:
        return None
    primitives.expect(obj, field, 'Destination')
    if obj.get('forbidden_aggregates'):
        primitives.refuse(_field(field, 'forbidden_aggregates'),
                          'is not honoured by Gantt (it runs its own '
                          'request filters, isolate_aggregates included)')
    cell = obj.get('cell')
    if cell is not None:
        where = _field(field, 'cell')
        primitives.expect(cell, where, 'CellMapping')
        cell = spec_obj.CellMapping(
            uuid=_string(cell, 'uuid', where, nullable=False),
            name=_string(cell, 'name', where))
    return spec_obj.Destination(
        host=_string(obj, 'host', field), node=_string(obj, 'node', field),
        aggregates=_strings(obj, 'aggregates', field), cell=cell,
        allow_cross_cell_move=_boolean(obj, 'allow_cross_cell_move',
                                       field))


def retry(obj, field):
    if obj is None:
        return None
    primitives.expect(obj, field, 'SchedulerRetries')
    hosts = []
    nodes = obj.get('hosts')
    if nodes is not None:
        where = _field(field, 'hosts')
        primitives.expect(nodes, where, 'ComputeNodeList')
        for index, node in enumerate(nodes.objects()):
            at = '%s[%d]' % (where, index)
            primitives.expect(node, at, 'ComputeNode')
            hosts.append([_string(node, 'host', at, nullable=False),
                          _string(node, 'hypervisor_hostname', at,
                                  nullable=False)])
    return spec_obj.SchedulerRetries(
        num_attempts=_integer(obj, 'num_attempts', field, default=0),
        hosts=hosts)


def _hints(obj, field):
    hints = obj.get('scheduler_hints', {})
    where = _field(field, 'scheduler_hints')
    if not isinstance(hints, dict):
        primitives.refuse(where, 'must be a dict')
    found = {}
    for key, values in hints.items():
        if not isinstance(values, list):
            values = [values]
        if not all(isinstance(value, str) for value in values):
            primitives.refuse('%s[%r]' % (where, key),
                              'must be a list of strings')
        found[key] = list(values)
    return found


def _refuse_unhonoured(obj, field):
    groups = obj.get('requested_resources') or []
    if groups:
        names = sorted({group.get('requester_id') or '?'
                        for group in groups
                        if isinstance(group, primitives.NovaObject)})
        primitives.refuse(
            _field(field, 'requested_resources'),
            'asks %d resource group(s) of ports or accelerators (%s); '
            'Gantt cannot claim them' % (len(groups), ', '.join(names)))
    params = obj.get('request_level_params')
    if params is not None:
        primitives.expect(params, _field(field, 'request_level_params'),
                          'RequestLevelParams')
        for name in ('root_required', 'root_forbidden', 'same_subtree'):
            if params.get(name):
                primitives.refuse(
                    _field(field, 'request_level_params.%s' % name),
                    'is set (%s); Gantt cannot honour it'
                    % params.get(name))


def _note_unread(obj, field):
    pci = obj.get('pci_requests')
    if isinstance(pci, primitives.NovaObject):
        ports = [request for request in pci.get('requests', [])
                 if isinstance(request, primitives.NovaObject)
                 and not request.get('alias_name')]
        if ports:
            LOG.warning('%s: %d PCI request(s) of Neutron ports (SR-IOV) '
                        'are not weighed by Gantt; the compute claims the '
                        'devices and reschedules if it has none',
                        _field(field, 'pci_requests'), len(ports))
    metadata = obj.get('network_metadata')
    if isinstance(metadata, primitives.NovaObject) and metadata.get(
            'physnets'):
        # Every boot on a provider network names one: said once at
        # WARNING, then at DEBUG.
        log = LOG.debug if 'physnets' in _WARNED else LOG.warning
        _WARNED.add('physnets')
        log('%s names physnets %s: Gantt does not weigh the NUMA affinity '
            'of networks ([neutron_physnet_*] numa_nodes of the computes)',
            _field(field, 'network_metadata'),
            sorted(metadata.get('physnets')))
    for name in ('security_groups', 'requested_networks', 'numa_topology',
                 'limits'):
        if obj.get(name) is not None:
            LOG.debug('%s is not read: Gantt derives what it needs from '
                      'the flavor and image, or needs none', _field(field,
                                                                   name))


def from_nova(obj, field='spec_obj'):
    """Gantt's RequestSpec of a decoded Nova RequestSpec; InvalidRequest
    naming the field for what is malformed or cannot be honoured."""
    primitives.expect(obj, field, 'RequestSpec')
    if obj.get('flavor') is None:
        primitives.refuse(_field(field, 'flavor'), 'is missing')
    _refuse_unhonoured(obj, field)
    _note_unread(obj, field)
    hints = _hints(obj, field)
    try:
        spec = spec_obj.RequestSpec(
            instance_uuid=_string(obj, 'instance_uuid', field),
            num_instances=_integer(obj, 'num_instances', field, default=1),
            project_id=_string(obj, 'project_id', field),
            user_id=_string(obj, 'user_id', field),
            availability_zone=_string(obj, 'availability_zone', field),
            flavor=flavor(obj.get('flavor'), _field(field, 'flavor')),
            image=image_meta.image(obj.get('image'), _field(field, 'image')),
            scheduler_hints=hints,
            ignore_hosts=_strings(obj, 'ignore_hosts', field),
            force_hosts=_strings(obj, 'force_hosts', field),
            force_nodes=_strings(obj, 'force_nodes', field),
            requested_destination=destination(
                obj.get('requested_destination'),
                _field(field, 'requested_destination')),
            retry=retry(obj.get('retry'), _field(field, 'retry')),
            instance_group=instance_group(obj.get('instance_group'),
                                          _field(field, 'instance_group')),
            is_bfv=_boolean(obj, 'is_bfv', field),
            is_rebuild=hints.get(placement_types.CHECK_TYPE_HINT) == [
                REBUILD_CHECK])
    except (ValueError, TypeError) as error:
        # A value a Gantt field refuses (a UUID field given "x"...).
        raise exception.InvalidRequest(reason='%s: %s' % (field, error))
    return spec
