"""Benchmark FilterScheduler.select_destinations in process.

For each host count it builds a SQLite file database in a temporary
directory (schema from the migrations), reports N compute nodes of varied
sizes with up services, spread over four availability zones, maps them,
then times ``--requests`` single-instance requests with the default
filters and all weighers (the background cache refresh runs meanwhile, as
in the service). It prints the p50 and p99 of the time spent filtering and
weighing, and of the time spent claiming in SQL::

    python benchmarks/select_destinations.py --hosts 1000 10000 \\
        --requests 300

``--filters full`` runs issue 3's benchmark set instead: the default
filters plus every Aggregate* filter, NumInstancesFilter and IoOpsFilter,
over a cloud whose aggregates set ratios, limits, tenants, flavors and
metadata, whose computes report stats, metrics and supported instances,
and whose hosts run instances; flavors carry extra specs and images
properties, and every weigher has a non-zero multiplier (image
properties, instances and metrics included)::

    python benchmarks/select_destinations.py --hosts 10000 --filters full
"""

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid

import sqlalchemy as sa

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import compute_nodes
from scheduler.db import models
from scheduler.db import services
from scheduler.drivers import filter_scheduler
from scheduler import exception
from scheduler import objects
from scheduler.objects import request_spec
from scheduler.sim import cloud as sim_cloud
from scheduler.sim import metrics

CONF = conf.CONF
ZONES = ('az1', 'az2', 'az3', 'az4')
FLAVORS = [(1, 512, 1), (1, 2048, 20), (2, 4096, 40), (4, 8192, 80),
           (8, 16384, 160)]
FLAVOR_NAMES = ('m1.tiny', 'm1.small', 'm1.medium', 'm1.large', 'm1.xlarge')
PROJECTS = ('tenant-a', 'tenant-b', 'tenant-c')
DISTROS = ('ubuntu', 'rhel', 'windows')
FULL_FILTERS = list(CONF.filter_scheduler.enabled_filters) + [
    'AggregateRamFilter', 'AggregateCoreFilter', 'AggregateDiskFilter',
    'AggregateInstanceExtraSpecsFilter', 'AggregateImagePropertiesIsolation',
    'AggregateMultiTenancyIsolation', 'AggregateTypeAffinityFilter',
    'AggregateIoOpsFilter', 'AggregateNumInstancesFilter',
    'NumInstancesFilter', 'IoOpsFilter']
# Multipliers so that every weigher computes something in the full set.
FULL_OPTIONS = {
    'filter_scheduler': {'image_props_weight_multiplier': 1.0,
                         'num_instances_weight_multiplier': -1.0},
    'metrics': {'weight_setting': ['cpu.percent=-1.0', 'mem.free=0.001'],
                'required': False},
}
# Aggregates of the full set: name, every n-th host from the n-th, and
# metadata.
FULL_AGGREGATES = (
    ('dense', 3, 0, {'cpu_allocation_ratio': '8.0',
                  'max_instances_per_host': '100',
                  'num_instances_weight_multiplier': '-2.0'}),
    ('fast-disks', 5, 1, {'ssd': 'true', 'disk_allocation_ratio': '0.9',
                       'max_io_ops_per_host': '16'}),
    ('tenant-a-only', 16, 2, {'filter_tenant_id': 'tenant-a'}),
    ('big-flavors', 20, 3, {'instance_type': 'm1.large, m1.xlarge'}),
    ('windows', 25, 4, {'os_distro': 'windows',
                     'ram_allocation_ratio': '1.0'}),
)


def make_schema():
    try:
        from scheduler.db import migration
    except ImportError:
        migration = None
    if migration is not None and hasattr(migration, 'db_sync'):
        migration.db_sync()
    else:
        models.Base.metadata.create_all(db_api.get_engine())


def host_name(number):
    return 'compute-%05d' % number


def host_facts(rng):
    """What a compute reports beyond its capacity (full set)."""
    return {
        'hypervisor_type': 'QEMU',
        'hypervisor_version': rng.choice([6002000, 7000000, 8001000]),
        'supported_instances': [['x86_64', 'qemu', 'hvm'],
                                ['i686', 'qemu', 'hvm']],
        'stats': {'failed_builds': rng.choice([0, 0, 0, 1, 3]),
                  'gpu': rng.choice(['none', 'a100'])},
        'metrics': [{'name': 'cpu.percent', 'value': rng.random() * 100},
                    {'name': 'mem.free', 'value': rng.randint(0, 1 << 20)}],
        'io_workload': rng.randint(0, 10),
    }


def populate(hosts, rng, full=False):
    with db_api.writer() as session:
        for number in range(hosts):
            host = host_name(number)
            inventory = {'vcpus': rng.choice([16, 32, 64, 96]),
                         'memory_mb': rng.choice([65536, 131072, 262144]),
                         'local_gb': rng.choice([500, 1000, 2000]),
                         'reserved_memory_mb': 512}
            if full:
                inventory.update(host_facts(rng))
            compute_nodes.report_inventory(
                session, str(uuid.UUID(int=rng.getrandbits(128))), host,
                host, inventory)
            services.report_alive(session, host, 'gantt-compute', 'compute')
        compute_nodes.map_unmapped_nodes(session)
        for index, zone in enumerate(ZONES):
            sim_cloud.add_aggregate(
                session, 'rack-%s' % zone, {'availability_zone': zone},
                [host_name(number)
                 for number in range(index, hosts, len(ZONES))])
        if full:
            for name, every, first, metadata in FULL_AGGREGATES:
                sim_cloud.add_aggregate(
                    session, name, metadata,
                    [host_name(number)
                     for number in range(first, hosts, every)])
            add_instances(session, hosts, rng)


def _image_primitive(properties):
    return {'gantt_object.data': {'image': {'gantt_object.data': {
        'properties': properties}}}}


def add_instances(session, hosts, rng):
    """Two instances on every other host, for the weighers that read the
    instances a host runs."""
    now = models.utcnow()
    rows = []
    for number in range(0, hosts, 2):
        for _ in range(2):
            name = rng.choice(FLAVOR_NAMES)
            rows.append({
                'uuid': str(uuid.UUID(int=rng.getrandbits(128))),
                'host': host_name(number), 'node': host_name(number),
                'vm_state': 'active', 'created_at': now, 'updated_at': now,
                'flavor': {'name': name, 'flavorid': name},
                'request_spec': _image_primitive(
                    {'os_distro': rng.choice(DISTROS)})})
    session.execute(sa.insert(models.Instance.__table__), rows)


def make_spec(rng, full=False):
    choice = rng.randrange(len(FLAVORS))
    vcpus, memory_mb, root_gb = FLAVORS[choice]
    flavor = request_spec.Flavor(vcpus=vcpus, memory_mb=memory_mb,
                                 root_gb=root_gb)
    spec = request_spec.RequestSpec(
        flavor=flavor, availability_zone=rng.choice((None,) + ZONES),
        num_instances=1)
    if full:
        flavor.name = flavor.flavorid = FLAVOR_NAMES[choice]
        flavor.extra_specs = rng.choice([
            {}, {'capabilities:hypervisor_type': 's== QEMU'},
            {'aggregate_instance_extra_specs:ssd': 'true'},
            {'capabilities:stats:gpu': '<or> a100 <or> h100',
             'capabilities:vcpus_total': '>= 32'}])
        spec.project_id = rng.choice(PROJECTS)
        spec.image = request_spec.ImageMeta(
            id=str(uuid.UUID(int=rng.getrandbits(128))),
            properties={'hw_architecture': 'x86_64',
                        'os_distro': rng.choice(DISTROS)})
    return spec


def configure(full):
    """Options of the full set, or the defaults."""
    CONF.clear_override('enabled_filters', group='filter_scheduler')
    for group, values in FULL_OPTIONS.items():
        for name in values:
            CONF.clear_override(name, group=group)
    if not full:
        return
    CONF.set_override('enabled_filters', FULL_FILTERS,
                      group='filter_scheduler')
    for group, values in FULL_OPTIONS.items():
        for name, value in values.items():
            CONF.set_override(name, value, group=group)


def select(driver, spec):
    """One request; False if no host was valid (timings still count)."""
    try:
        driver.select_destinations(None, spec, [str(uuid.uuid4())])
    except exception.NoValidHost:
        return False
    return True


def run(hosts, requests, seed, full=False, backend='sqlite'):
    rng = random.Random(seed)
    configure(full)
    workdir = tempfile.mkdtemp(prefix='gantt-bench-')
    if backend == 'sqlite':
        url = 'sqlite:///%s/gantt.sqlite' % workdir
    else:
        # A database of its own on the local server, dropped at the end.
        sys.path.insert(0, os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))))
        from tests.fixtures import databases
        url = databases.create_database(backend)
    CONF.set_override('connection', url, group='database')
    db_api.dispose_engine()
    driver = None
    try:
        make_schema()
        started = time.perf_counter()
        populate(hosts, rng, full)
        sim_cloud.heartbeat_all()
        setup = time.perf_counter() - started
        driver = filter_scheduler.FilterScheduler()
        started = time.perf_counter()
        driver.start()
        load = time.perf_counter() - started
        for _ in range(5):
            select(driver, make_spec(rng, full))
        filter_weigh, claim = [], []
        failed = 0
        for _ in range(requests):
            failed += not select(driver, make_spec(rng, full))
            filter_weigh.append(driver.last_timings['filter_weigh'] * 1000)
            claim.append(driver.last_timings['claim'] * 1000)
        print('%6d hosts  %s filters: %d filters, %d weighers, claims '
              'on %s' % (hosts, 'full' if full else 'default',
                         len(driver.enabled_filters), len(driver.weighers),
                         backend))
        print('%6s        filter+weigh p50 %6.2f ms  p99 %6.2f ms  |  '
              'claim p50 %6.2f ms  p99 %6.2f ms'
              % ('', statistics.median(filter_weigh),
                 metrics.percentile(filter_weigh, 0.99),
                 statistics.median(claim), metrics.percentile(claim, 0.99)))
        cache = driver.host_manager.stats
        print('%6s        setup %.1fs, cache load %.2fs, %d background '
              'refreshes (last %.1f ms), claim retries %d, no valid host %d'
              % ('', setup, load, cache['refreshes'],
                 cache['last_refresh_seconds'] * 1000,
                 driver.stats['claim_retries'], failed))
        sys.stdout.flush()
    finally:
        if driver is not None:
            driver.stop()
        db_api.dispose_engine()
        shutil.rmtree(workdir, ignore_errors=True)
        if backend != 'sqlite':
            databases.drop_database(url)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+',
                        default=[1000, 10000])
    parser.add_argument('--requests', type=int, default=300)
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--filters', choices=['default', 'full'],
                        default='default',
                        help="'full': the default filters plus Aggregate*, "
                        "NumInstances and IoOps, every weigher weighing")
    parser.add_argument('--db', choices=['sqlite', 'postgresql', 'mariadb'],
                        default='sqlite',
                        help='where the claims go: a SQLite file, or a '
                        'database of its own on the local PostgreSQL or '
                        'MariaDB server (dropped afterwards)')
    args = parser.parse_args(argv)
    CONF([], project='gantt')
    objects.register_all()
    for hosts in args.hosts:
        run(hosts, args.requests, args.seed, args.filters == 'full',
            args.db)


if __name__ == '__main__':
    main()
