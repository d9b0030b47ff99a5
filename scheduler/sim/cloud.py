"""A cloud to schedule on: host shapes, aggregates, zones, flavors.

What ``gantt-sim``, ``gantt-demo`` and the benchmarks build their clouds
from. A cloud is described in a small TOML file (``tomllib``)::

    # Hosts: one table per shape; names are <name>-<number>.
    [[hosts]]
    name = "general"
    count = 600
    vcpus = 32
    memory_mb = 131072
    disk_gb = 2000
    zone = "az1"                 # optional: an availability zone
    aggregates = ["ssd"]         # optional: aggregates it is in
    # Hardware (optional), in the shapes of [fake_virt] numa_topology
    # and pci_device_pools (scheduler/host_inputs.py): TOML tables, or
    # the JSON text a gantt-compute's configuration holds
    # (numa_topology = '{"cells": [...]}'). With NUMA cells, vcpus and
    # memory_mb may be left out: the cells' sums.
    [[hosts]]
    name = "pinned"
    count = 100
    disk_gb = 1000
    [[hosts.numa_topology.cells]]
    id = 0
    cpuset = [0, 1]
    pcpuset = [2, 3]
    memory_mb = 65536
    [[hosts.pci_device_pools]]
    vendor_id = "8086"
    product_id = "0443"
    count = 2
    tags = {dev_type = "type-PCI"}
    # Traits, other resource classes, Nova provider config files and
    # baremetal pools (see scheduler/sim/providers.py).
    [[hosts]]
    name = "avx2"
    count = 50
    vcpus = 32
    memory_mb = 131072
    disk_gb = 2000
    traits = ["HW_CPU_X86_AVX2"]
    inventories = {CUSTOM_FPGA = {total = 2, max_unit = 1}}
    [[hosts]]
    name = "gold"
    count = 8
    resource_class = "baremetal-gold"

    # Aggregates and their metadata (strings, as Nova stores them).
    [aggregates.ssd]
    ssd = "true"
    ram_weight_multiplier = "2.0"

    # Flavors the workload generator draws from, by weight (optional).
    [[flavors]]
    name = "m1.small"
    vcpus = 1
    memory_mb = 2048
    disk_gb = 20
    weight = 4
    extra_specs = {"hw:cpu_policy" = "dedicated"}   # optional
    [[flavors]]
    name = "bm.gold"             # Nova's baremetal flavor
    vcpus = 1
    memory_mb = 1
    disk_gb = 0
    [flavors.extra_specs]
    "resources:CUSTOM_BAREMETAL_GOLD" = "1"
    "resources:VCPU" = "0"
    "resources:MEMORY_MB" = "0"
    "resources:DISK_GB" = "0"
    "trait:HW_CPU_X86_AVX2" = "forbidden"

    # PCI aliases the flavors' pci_passthrough:alias name (optional;
    # else the configuration's [pci] alias): JSON text as in nova.conf,
    # or tables.
    [pci]
    alias = [{name = "qat", vendor_id = "8086", product_id = "0443"}]

:func:`load_cloud` reads and checks it (a :class:`CloudError` names the
key that is wrong), :func:`default_cloud` is the built-in one, and
:func:`populate` writes a cloud into the database (nodes mapped, compute
services up, their inventories of other classes and traits, aggregates
with their hosts) in batches::

    cloud = sim_cloud.load_cloud('cloud.toml').scaled(10000)
    sim_cloud.populate(cloud)
"""

import dataclasses
import json
import os
import tomllib
import uuid

import sqlalchemy as sa

from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.db import services as db_services
from scheduler import exception
from scheduler import hardware
from scheduler import host_cache
from scheduler.objects import request_spec
from scheduler.pci import alias as pci_alias
from scheduler.sim import errors
from scheduler.sim import providers

# (name, vcpus, memory_mb, root_gb): the flavors the demo boots and the
# default workload draws from.
FLAVORS = [('m1.small', 1, 2048, 20), ('m1.medium', 2, 4096, 40),
           ('m1.large', 4, 8192, 80), ('m1.xlarge', 8, 16384, 160)]
# How often the default workload asks for each of FLAVORS.
FLAVOR_WEIGHTS = (4, 3, 2, 1)
# The host shapes the demo's computes cycle through, and the default
# cloud's shapes.
HOST_SHAPES = [{'vcpus': 16, 'memory_mb': 65536, 'local_gb': 1000},
               {'vcpus': 32, 'memory_mb': 131072, 'local_gb': 2000},
               {'vcpus': 8, 'memory_mb': 32768, 'local_gb': 500}]
DEFAULT_ZONES = ('az1', 'az2', 'az3', 'az4')
# Rows per INSERT when populating.
BATCH = 2000


# The cloud file is wrong; the message names the key.
CloudError = errors.CloudError


@dataclasses.dataclass(frozen=True)
class HostGroup:
    name: str
    count: int
    vcpus: int
    memory_mb: int
    disk_gb: int
    zone: str | None = None
    aggregates: tuple = ()
    numa_topology: dict | None = None
    pci_device_pools: list | None = None
    # Placement-era reports (scheduler.sim.providers): traits, the
    # inventories of classes beyond the classic three (a baremetal
    # node's unit included), the baremetal class, and the provider
    # configs {uuid or name: (inventories, traits, file)}.
    traits: tuple = ()
    inventories: dict = dataclasses.field(default_factory=dict)
    resource_class: str | None = None
    provider_configs: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Flavor:
    name: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    weight: float = 1.0
    extra_specs: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Cloud:
    groups: tuple
    aggregates: dict
    flavors: tuple
    # [pci] alias values (JSON text), or () to keep the configuration's.
    pci_aliases: tuple = ()

    @property
    def host_count(self):
        return sum(group.count for group in self.groups)

    def scaled(self, hosts):
        """The same mix of shapes with ``hosts`` hosts in all (each
        group keeps its share, at least one host)."""
        total = self.host_count
        groups = [dataclasses.replace(
            group, count=max(1, round(group.count * hosts / total)))
            for group in self.groups]
        # Rounding: the last group takes up the difference.
        extra = hosts - sum(group.count for group in groups)
        last = groups[-1]
        groups[-1] = dataclasses.replace(last,
                                         count=max(1, last.count + extra))
        return dataclasses.replace(self, groups=tuple(groups))

    def flavor(self, name):
        for flavor in self.flavors:
            if flavor.name == name:
                return flavor
        return None

    def most_common_flavor(self):
        return max(self.flavors, key=lambda flavor: flavor.weight)

    def host_names(self):
        """Every host's name, in the order :func:`populate` writes them."""
        return [host_name(group, number) for group in self.groups
                for number in range(group.count)]


def host_name(group, number):
    return '%s-%06d' % (group.name, number + 1)


def default_cloud(hosts=1000):
    """HOST_SHAPES in equal shares over four zones, FLAVORS."""
    groups = []
    for zone in DEFAULT_ZONES:
        for number, shape in enumerate(HOST_SHAPES):
            groups.append(HostGroup(
                name='%s-shape%d' % (zone, number + 1), count=1,
                vcpus=shape['vcpus'], memory_mb=shape['memory_mb'],
                disk_gb=shape['local_gb'], zone=zone))
    flavors = tuple(Flavor(name, vcpus, ram, disk, weight)
                    for (name, vcpus, ram, disk), weight
                    in zip(FLAVORS, FLAVOR_WEIGHTS))
    return Cloud(tuple(groups), {}, flavors).scaled(hosts)


def _positive_int(table, key, where, minimum=1):
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or \
            value < minimum:
        raise CloudError('%s.%s: must be an integer >= %d, not %r'
                         % (where, key, minimum, value))
    return value


def _string(table, key, where, required=True):
    value = table.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise CloudError('%s.%s: must be a non-empty string, not %r'
                         % (where, key, value))
    return value


def _check_keys(table, allowed, where):
    if not isinstance(table, dict):
        raise CloudError('%s: must be a table' % where)
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise CloudError('%s.%s: unknown key (known: %s)'
                         % (where, unknown[0], ', '.join(sorted(allowed))))


def _document(table, key, where):
    """A host group's ``numa_topology`` or ``pci_device_pools``, checked
    as a compute's report is (None: not given)."""
    value = table.get(key)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as error:
            raise CloudError('%s.%s: not valid JSON: %s' % (where, key,
                                                            error))
    try:
        return host_cache.REPORT_CHECKS[key]('%s.%s' % (where, key), value)
    except exception.InvalidRequest as error:
        raise CloudError(error.kwargs['reason'])


def _sizes(table, where, topology):
    """``(vcpus, memory_mb)``: given, or the NUMA cells' sums (which
    must agree with the given ones)."""
    if topology is None:
        return (_positive_int(table, 'vcpus', where),
                _positive_int(table, 'memory_mb', where))
    cells = topology['cells']
    sums = {'vcpus': sum(len(cell.get('cpuset', ()))
                         + len(cell.get('pcpuset', ())) for cell in cells),
            'memory_mb': sum(cell['memory_mb'] for cell in cells)}
    for key, total in sums.items():
        if key in table and _positive_int(table, key, where) != total:
            raise CloudError('%s.%s: %d, but the numa_topology cells '
                             'hold %d' % (where, key, table[key], total))
    return sums['vcpus'], sums['memory_mb']


_BAREMETAL_LEAVES_OUT = ('vcpus', 'memory_mb', 'disk_gb', 'numa_topology',
                         'pci_device_pools')


def _host_group(table, where, aggregates, base_dir):
    _check_keys(table, ('name', 'count', 'zone', 'aggregates')
                + _BAREMETAL_LEAVES_OUT + providers.SHAPE_KEYS, where)
    names = table.get('aggregates', [])
    if not isinstance(names, list) or not all(
            isinstance(name, str) for name in names):
        raise CloudError('%s.aggregates: must be a list of names' % where)
    for name in names:
        if name not in aggregates:
            raise CloudError('%s.aggregates: %r is not in [aggregates]'
                             % (where, name))
    placement = providers.parse_shape(table, where, base_dir)
    common = dict(name=_string(table, 'name', where),
                  count=_positive_int(table, 'count', where),
                  zone=_string(table, 'zone', where, required=False),
                  aggregates=tuple(names), **placement)
    if placement['resource_class']:
        # Nova's Ironic driver reports a node's class instead.
        for key in _BAREMETAL_LEAVES_OUT:
            if key in table:
                raise CloudError('%s.%s: a baremetal shape (resource_class)'
                                 ' reports no vCPUs, RAM, disk, NUMA cells '
                                 'or PCI devices; leave it out'
                                 % (where, key))
        return HostGroup(vcpus=0, memory_mb=0, disk_gb=0, **common)
    topology = _document(table, 'numa_topology', where)
    vcpus, memory_mb = _sizes(table, where, topology)
    return HostGroup(
        vcpus=vcpus, memory_mb=memory_mb,
        disk_gb=_positive_int(table, 'disk_gb', where, minimum=0),
        numa_topology=topology,
        pci_device_pools=_document(table, 'pci_device_pools', where),
        **common)


def _extra_specs(table, where):
    specs = table.get('extra_specs', {})
    if not isinstance(specs, dict) or not all(
            isinstance(value, str) for value in specs.values()):
        raise CloudError('%s.extra_specs: must be a table of strings, '
                         'not %r' % (where, specs))
    return dict(specs)


def _pci_aliases(data, source):
    """``[pci] alias`` of the cloud file: JSON texts, checked."""
    _check_keys(data, ('alias',), source + ': pci')
    values = data.get('alias', [])
    if not isinstance(values, list):
        raise CloudError('%s: pci.alias: must be a list' % source)
    texts = []
    for index, value in enumerate(values):
        if isinstance(value, dict):
            value = json.dumps(value)
        if not isinstance(value, str):
            raise CloudError('%s: pci.alias[%d]: must be a table or JSON '
                             'text, not %r' % (source, index, value))
        texts.append(value)
    try:
        pci_alias.parse_aliases(texts)
    except exception.ConfigError as error:
        raise CloudError('%s: pci.alias: %s' % (source, error))
    return tuple(texts)


def check_extra_specs(cloud):
    """Every flavor's extra specs as a request would be parsed, with
    ``[pci] alias`` as configured now; CloudError naming the flavor."""
    for index, flavor in enumerate(cloud.flavors):
        if not flavor.extra_specs:
            continue
        spec = request_spec.RequestSpec(
            flavor=request_spec.Flavor(
                vcpus=flavor.vcpus, memory_mb=flavor.memory_mb,
                root_gb=flavor.disk_gb, extra_specs=flavor.extra_specs),
            num_instances=1)
        try:
            hardware.Request.from_spec(spec)
        except (exception.InvalidRequest, exception.ConfigError) as error:
            raise CloudError('flavors[%d].extra_specs: %s' % (index, error))
        # The resource request with the CPU policies (resources:VCPU
        # with hw:cpu_policy=dedicated...).
        problem = providers.resource_problem(
            flavor.vcpus, flavor.memory_mb, flavor.disk_gb,
            flavor.extra_specs)
        if problem:
            raise CloudError('flavors[%d].extra_specs: %s'
                             % (index, problem))


def _flavor(table, where):
    _check_keys(table, ('name', 'vcpus', 'memory_mb', 'disk_gb', 'weight',
                        'extra_specs'), where)
    weight = table.get('weight', 1)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) \
            or weight <= 0:
        raise CloudError('%s.weight: must be a number > 0, not %r'
                         % (where, weight))
    flavor = Flavor(_string(table, 'name', where),
                    _positive_int(table, 'vcpus', where),
                    _positive_int(table, 'memory_mb', where),
                    _positive_int(table, 'disk_gb', where, minimum=0),
                    float(weight), _extra_specs(table, where))
    providers.check_flavor(flavor, where)
    return flavor


def parse_cloud(data, source='cloud', base_dir='.'):
    """A Cloud from the parsed TOML ``data``; CloudError names the key
    (``source`` prefixes it: the file's name). Provider config files are
    found from ``base_dir``."""
    _check_keys(data, ('hosts', 'aggregates', 'flavors', 'pci'), source)
    aggregates = data.get('aggregates', {})
    _check_keys(aggregates, aggregates.keys(), source + ': aggregates')
    for name, metadata in aggregates.items():
        where = '%s: aggregates.%s' % (source, name)
        _check_keys(metadata, metadata.keys(), where)
        for key, value in metadata.items():
            if not isinstance(value, str):
                raise CloudError('%s.%s: metadata values are strings, '
                                 'not %r' % (where, key, value))
    hosts = data.get('hosts')
    if not isinstance(hosts, list) or not hosts:
        raise CloudError('%s: hosts: give at least one [[hosts]] table'
                         % source)
    groups = tuple(_host_group(table, '%s: hosts[%d]' % (source, index),
                               aggregates, base_dir)
                   for index, table in enumerate(hosts))
    if len({group.name for group in groups}) != len(groups):
        raise CloudError('%s: hosts: two [[hosts]] tables have the same '
                         'name' % source)
    flavors = data.get('flavors')
    if flavors is None:
        flavors = default_cloud(1).flavors
    elif not isinstance(flavors, list) or not flavors:
        raise CloudError('%s: flavors: give [[flavors]] tables' % source)
    else:
        flavors = tuple(_flavor(table, '%s: flavors[%d]' % (source, index))
                        for index, table in enumerate(flavors))
    return Cloud(groups, {name: dict(meta)
                          for name, meta in aggregates.items()}, flavors,
                 _pci_aliases(data.get('pci', {}), source))


def load_cloud(path):
    """Read a cloud file; CloudError (naming the key) if it is wrong."""
    try:
        with open(path, 'rb') as stream:
            data = tomllib.load(stream)
    except OSError as error:
        raise CloudError('%s: %s' % (path, error.strerror))
    except tomllib.TOMLDecodeError as error:
        raise CloudError('%s: %s' % (path, error))
    return parse_cloud(data, path, os.path.dirname(path) or '.')


def node_rows(cloud, rng, now):
    """``(node rows, service rows)`` to insert for every host."""
    nodes, services = [], []
    for group in cloud.groups:
        for number in range(group.count):
            name = host_name(group, number)
            nodes.append({
                'uuid': str(uuid.UUID(int=rng.getrandbits(128))),
                'host': name, 'hypervisor_hostname': name,
                'vcpus': group.vcpus, 'memory_mb': group.memory_mb,
                'local_gb': group.disk_gb, 'mapped': True, 'generation': 1,
                'numa_topology': group.numa_topology,
                'pci_device_pools': group.pci_device_pools,
                'created_at': now, 'updated_at': now,
                **providers.whole_machine(group)})
            services.append({
                'host': name, 'binary': host_cache.COMPUTE_BINARY,
                'topic': 'compute', 'disabled': False, 'forced_down': False,
                'last_seen_up': now, 'report_count': 1, 'created_at': now,
                'updated_at': now})
    return nodes, services


def populate(cloud, rng):
    """Write ``cloud`` into ``[database] connection``: mapped nodes with
    their inventories of other classes and traits, live compute
    services, zones and aggregates."""
    now = models.utcnow()
    nodes, services = node_rows(cloud, rng, now)
    reports = providers.node_reports(cloud.groups, nodes)
    for start in range(0, len(nodes), BATCH):
        batch = nodes[start:start + BATCH]
        with db_api.writer() as session:
            session.execute(sa.insert(models.ComputeNode.__table__), batch)
            session.execute(sa.insert(models.Service.__table__),
                            services[start:start + BATCH])
            providers.write_reports(session, {
                row['uuid']: reports[row['uuid']] for row in batch})
    members = {name: [] for name in cloud.aggregates}
    zones = {}
    for group in cloud.groups:
        names = [host_name(group, number) for number in range(group.count)]
        for aggregate in group.aggregates:
            members[aggregate].extend(names)
        if group.zone:
            zones.setdefault(group.zone, []).extend(names)
    # Aggregates live in the API database ([database] in one cell).
    with db_api.api_writer() as session:
        for zone, hosts in zones.items():
            add_aggregate(session, 'zone-%s' % zone,
                          {'availability_zone': zone}, hosts)
        for name, metadata in cloud.aggregates.items():
            add_aggregate(session, name, metadata, members[name])


def heartbeat_all():
    """Every compute service reports alive now, as a live cloud's
    computes keep doing (the simulator's and the benchmarks' computes
    are rows, not agents): their rows' ``updated_at`` stays, so that a
    host cache reads none of them again, as with real heartbeats."""
    with db_api.writer() as session:
        db_services.heartbeat_every(session, host_cache.COMPUTE_BINARY)


def add_aggregate(session, name, metadata, hosts):
    aggregate = db_aggregates.create(session, name, metadata=metadata)
    if hosts:
        db_aggregates.add_hosts(session, aggregate.id, hosts)
    return aggregate
