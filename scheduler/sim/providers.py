"""What a cloud file's hosts report beyond vCPUs, RAM and disk: traits,
inventories of other resource classes, provider config files and
baremetal pools; and the checks of what flavors ask of them.

A host shape of a cloud file (see :mod:`scheduler.sim.cloud`) may add::

    [[hosts]]
    name = "gpu"
    count = 20
    vcpus = 32
    memory_mb = 131072
    disk_gb = 2000
    traits = ["HW_CPU_X86_AVX2", "CUSTOM_RACK_A"]   # standard or custom
    # Classes beyond VCPU, MEMORY_MB and DISK_GB (PCPU, VGPU, CUSTOM_*),
    # with Placement's inventory fields; only total is required.
    inventories = {VGPU = {total = 4, max_unit = 2}}
    # Nova provider config files (one name or a list), relative to the
    # cloud file: their providers apply to this shape's hosts as a
    # compute's files apply to its nodes ($COMPUTE_NODE: every host of
    # the shape that no entry names; a name: that host, gpu-000003).
    provider_config = "provider-config/gpu.yaml"

    [[hosts]]
    name = "gold"
    count = 8
    # An Ironic node since Stein: no vCPUs, RAM or disk (leave them
    # out), one unit of CUSTOM_BAREMETAL_GOLD (Nova's normalization).
    resource_class = "baremetal-gold"

Every host also reports the ``COMPUTE_NODE`` trait, as Nova's resource
tracker (and gantt-compute) adds it. :func:`parse_shape` checks the keys
(a :class:`errors.CloudError` names the key: a class or trait that is
neither standard nor custom, a field out of Placement's ranges, a
provider config file Nova would refuse, a class both the shape and its
provider config define); :func:`reports` gives each host's
``{'inventories', 'traits'}`` for :func:`scheduler.db.inventories.report`.

Flavors ask for them with extra specs (``resources[N]:CLASS``,
``trait[N]:NAME``, ``group_policy``): :func:`check_flavor` refuses at
load time what Nova's API refuses and what Placement would refuse every
time (a group of traits only...), and :func:`classic_amounts` says how
much vCPU, RAM and disk an instance really takes (a baremetal flavor's
``resources:VCPU=0`` takes none).
"""

import functools
import os

import os_resource_classes
import os_traits
import sqlalchemy as sa

from compute import baremetal
from compute import provider_config
from compute import resources as compute_resources
from scheduler.db import inventories as db_inventories
from scheduler.db import models
from scheduler import exception
from scheduler.objects import request_spec
from scheduler.resources import from_spec
from scheduler.resources import names
from scheduler.sim import errors

SHAPE_KEYS = ('traits', 'inventories', 'resource_class', 'provider_config')
# Placement's lowest value of each inventory field.
_MINIMUM = {'total': 1, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
            'step_size': 1}
# Extra spec keys that make the resource request (the others are the
# filters' and the hardware checks').
_GRANULAR_PREFIXES = ('resources', 'trait', from_spec.GROUP_POLICY_KEY)


def _name_problem(error):
    return error.kwargs.get('reason', str(error))


def _traits(table, where):
    value = table.get('traits', [])
    if not isinstance(value, list):
        raise errors.CloudError('%s.traits: must be a list of trait names, '
                                'not %r' % (where, value))
    for trait in value:
        try:
            names.check_trait(trait)
        except exception.InvalidResourceRequest as error:
            raise errors.CloudError('%s.traits: %s'
                                    % (where, _name_problem(error)))
    return tuple(sorted(set(value)))


def _inventory(fields, where):
    """One class's inventory, checked against Placement's ranges."""
    if not isinstance(fields, dict):
        raise errors.CloudError('%s: must be a table of %s' % (
            where, ', '.join(db_inventories.FIELDS)))
    unknown = sorted(set(fields) - set(db_inventories.FIELDS))
    if unknown:
        raise errors.CloudError('%s.%s: unknown field (known: %s)' % (
            where, unknown[0], ', '.join(db_inventories.FIELDS)))
    if 'total' not in fields:
        raise errors.CloudError('%s.total: required' % where)
    for field, value in fields.items():
        if field == 'allocation_ratio':
            if isinstance(value, bool) or not isinstance(
                    value, (int, float)) or value <= 0:
                raise errors.CloudError('%s.allocation_ratio: must be a '
                                        'number > 0, not %r' % (where, value))
        elif isinstance(value, bool) or not isinstance(value, int) or \
                not _MINIMUM[field] <= value <= db_inventories.MAX_INT:
            raise errors.CloudError('%s.%s: must be an integer from %d to '
                                    '%d, not %r' % (
                                        where, field, _MINIMUM[field],
                                        db_inventories.MAX_INT, value))
    return dict(fields)


def _inventories(table, where):
    value = table.get('inventories', {})
    if not isinstance(value, dict):
        raise errors.CloudError('%s.inventories: must be a table of '
                                'resource classes' % where)
    found = {}
    for name, fields in value.items():
        if name in db_inventories.CLASSIC:
            raise errors.CloudError(
                '%s.inventories.%s: give vcpus, memory_mb and disk_gb as '
                'keys of the shape instead' % (where, name))
        try:
            names.check_resource_class(name)
        except exception.InvalidResourceRequest as error:
            raise errors.CloudError('%s.inventories: %s'
                                    % (where, _name_problem(error)))
        found[name] = _inventory(fields, '%s.inventories.%s'
                                 % (where, name))
    return found


def baremetal_class(value, where):
    """The custom class of a shape's ``resource_class``, normalized as
    Nova's Ironic driver does (``baremetal-gold`` ->
    ``CUSTOM_BAREMETAL_GOLD``)."""
    if not isinstance(value, str) or not value:
        raise errors.CloudError('%s.resource_class: must be a non-empty '
                                'string, not %r' % (where, value))
    normalized = os_resource_classes.normalize_name(value)
    if not names.is_custom(normalized):
        raise errors.CloudError('%s.resource_class: %r does not make a '
                                'resource class name' % (where, value))
    return normalized


def _provider_configs(table, where, base_dir):
    value = table.get('provider_config')
    if value is None:
        return {}
    paths = [value] if isinstance(value, str) else value
    if not isinstance(paths, list) or not paths or not all(
            isinstance(path, str) and path for path in paths):
        raise errors.CloudError('%s.provider_config: must be a file name '
                                'or a list of them, not %r' % (where, value))
    try:
        return provider_config.load_files(
            [os.path.join(base_dir, path) for path in paths])
    except exception.ConfigError as error:
        raise errors.CloudError('%s.provider_config: %s'
                                % (where, _name_problem(error)))


def parse_shape(table, where, base_dir='.'):
    """``{traits, inventories, resource_class, provider_configs}`` of a
    ``[[hosts]]`` table (the keys of :data:`SHAPE_KEYS`; the caller
    checks the others); ``inventories`` holds the baremetal class's unit
    too. ``base_dir``: where provider config file names start from."""
    inventories = _inventories(table, where)
    resource_class = None
    if 'resource_class' in table:
        resource_class = baremetal_class(table['resource_class'], where)
        if resource_class in inventories:
            raise errors.CloudError(
                '%s.inventories.%s: the baremetal resource_class is that '
                'class already' % (where, resource_class))
        inventories.update(compute_resources.baremetal_inventory(
            resource_class, in_use=False))
    configs = _provider_configs(table, where, base_dir)
    for added, _traits_, path in configs.values():
        owned = sorted(set(added) & set(inventories))
        if owned:
            raise errors.CloudError(
                '%s.provider_config: %s defines %s, which the shape '
                'reports itself' % (where, path, ', '.join(owned)))
    return {'traits': _traits(table, where), 'inventories': inventories,
            'resource_class': resource_class, 'provider_configs': configs}


def reports(group, nodes):
    """``[{'inventories', 'traits'}]`` of ``nodes`` (``[{'uuid',
    'nodename'}]``, hosts of the shape ``group``), in their order: the
    shape's own, ``COMPUTE_NODE``, then its provider configs'."""
    found = [{'uuid': node['uuid'], 'nodename': node['nodename'],
              'inventories': {name: dict(fields) for name, fields
                              in group.inventories.items()},
              'traits': sorted(set(group.traits)
                               | {os_traits.COMPUTE_NODE})}
             for node in nodes]
    if group.provider_configs:
        try:
            provider_config.ProviderConfigs(group.provider_configs).apply(
                found)
        except exception.ConfigError as error:
            raise errors.CloudError('hosts %s: provider_config: %s'
                                    % (group.name, _name_problem(error)))
    return [{'inventories': node['inventories'], 'traits': node['traits']}
            for node in found]


def whole_machine(group):
    """What Nova's Ironic driver reports of a baremetal node beyond its
    sizes (ratios of 1.0, hypervisor type ``ironic``); None for the
    others (the columns' defaults)."""
    if group.resource_class is None:
        return {'hypervisor_type': None, 'cpu_allocation_ratio': None,
                'ram_allocation_ratio': None, 'disk_allocation_ratio': None}
    return {'hypervisor_type': baremetal.HYPERVISOR_TYPE,
            'cpu_allocation_ratio': 1.0, 'ram_allocation_ratio': 1.0,
            'disk_allocation_ratio': 1.0}


def node_reports(groups, nodes):
    """``{uuid: {'inventories', 'traits'}}`` of the node rows ``nodes``
    (:func:`scheduler.sim.cloud.node_rows`, the hosts of ``groups`` in
    their order): see :func:`reports`."""
    found = {}
    start = 0
    for group in groups:
        rows = [{'uuid': row['uuid'], 'nodename': row['hypervisor_hostname']}
                for row in nodes[start:start + group.count]]
        start += group.count
        for row, report in zip(rows, reports(group, rows)):
            found[row['uuid']] = report
    return found


def write_reports(session, by_uuid):
    """Write the inventories and traits of the nodes just inserted
    (``{uuid: {'inventories', 'traits'}}``) in ``session``, as the
    conductor writes a compute's report."""
    node = models.ComputeNode.__table__
    uuids = sorted(by_uuid)
    for start in range(0, len(uuids), 500):
        for node_id, node_uuid in session.execute(
                sa.select(node.c.id, node.c.uuid).where(
                    node.c.uuid.in_(uuids[start:start + 500]))):
            db_inventories.report(session, node_id, **by_uuid[node_uuid])


def _spec(vcpus, memory_mb, disk_gb, extra_specs):
    return request_spec.RequestSpec(
        flavor=request_spec.Flavor(vcpus=vcpus, memory_mb=memory_mb,
                                   root_gb=disk_gb,
                                   extra_specs=dict(extra_specs)),
        num_instances=1)


def resource_problem(vcpus, memory_mb, disk_gb, extra_specs):
    """Why Nova's API or Placement would refuse the resource request of
    a flavor with these sizes and ``extra_specs`` (a string), or None."""
    try:
        from_spec.resource_request(_spec(vcpus, memory_mb, disk_gb,
                                         extra_specs))
    except exception.ResourceRequestRefused as error:
        return 'Placement would refuse every request: %s' % (
            error.kwargs.get('reason', error))
    except exception.InvalidRequest as error:
        return _name_problem(error)
    return None


def check_flavor(flavor, where):
    """Refuse (CloudError naming ``where``) a flavor whose ``resources``,
    ``trait`` and ``group_policy`` extra specs are wrong; the CPU
    policies and PCI aliases are checked with the configuration, by
    :func:`scheduler.sim.cloud.check_extra_specs`."""
    granular = {key: value for key, value in flavor.extra_specs.items()
                if key.startswith(_GRANULAR_PREFIXES)}
    if not granular:
        return
    problem = resource_problem(flavor.vcpus, flavor.memory_mb,
                               flavor.disk_gb, granular)
    if problem:
        raise errors.CloudError('%s.extra_specs: %s' % (where, problem))


@functools.lru_cache(maxsize=256)
def _classic(vcpus, memory_mb, disk_gb, extra_specs):
    try:
        wanted = from_spec.resource_request(_spec(
            vcpus, memory_mb, disk_gb, dict(extra_specs))).all_resources()
    except (exception.InvalidRequest, exception.NoValidHost):
        return vcpus, memory_mb, disk_gb
    return (wanted.get(os_resource_classes.VCPU, 0)
            + wanted.get(os_resource_classes.PCPU, 0),
            wanted.get(os_resource_classes.MEMORY_MB, 0),
            wanted.get(os_resource_classes.DISK_GB, 0))


def classic_amounts(vcpus, memory_mb, disk_gb, extra_specs):
    """``(CPUs, memory_mb, disk_gb)`` an instance of this flavor takes of
    a host, as its resource request asks them (dedicated and shared CPUs
    together; a baremetal flavor's ``resources:VCPU=0``... none); the
    flavor's sizes when it asks nothing special or cannot be asked."""
    if not extra_specs:
        return vcpus, memory_mb, disk_gb
    return _classic(vcpus, memory_mb, disk_gb,
                    tuple(sorted(extra_specs.items())))
