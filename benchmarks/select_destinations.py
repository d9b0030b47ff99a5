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
"""

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid

import sqlalchemy as sa

from scheduler import conf
from scheduler.db import aggregates
from scheduler.db import api as db_api
from scheduler.db import compute_nodes
from scheduler.db import models
from scheduler.db import services
from scheduler.drivers import filter_scheduler
from scheduler import objects
from scheduler.objects import request_spec

CONF = conf.CONF
ZONES = ('az1', 'az2', 'az3', 'az4')
FLAVORS = [(1, 512, 1), (1, 2048, 20), (2, 4096, 40), (4, 8192, 80),
           (8, 16384, 160)]


def make_schema():
    try:
        from scheduler.db import migration
    except ImportError:
        migration = None
    if migration is not None and hasattr(migration, 'db_sync'):
        migration.db_sync()
    else:
        models.Base.metadata.create_all(db_api.get_engine())


def populate(hosts, rng):
    with db_api.writer() as session:
        for number in range(hosts):
            host = 'compute-%05d' % number
            compute_nodes.report_inventory(
                session, str(uuid.UUID(int=rng.getrandbits(128))), host,
                host, {'vcpus': rng.choice([16, 32, 64, 96]),
                       'memory_mb': rng.choice([65536, 131072, 262144]),
                       'local_gb': rng.choice([500, 1000, 2000]),
                       'reserved_memory_mb': 512})
            services.report_alive(session, host, 'gantt-compute', 'compute')
        compute_nodes.map_unmapped_nodes(session)
        for index, zone in enumerate(ZONES):
            agg = aggregates.create(session, 'rack-%s' % zone,
                                    metadata={'availability_zone': zone})
            aggregates.add_hosts(session, agg.id, [
                'compute-%05d' % number
                for number in range(index, hosts, len(ZONES))])


def heartbeat_all():
    """Every compute reports alive, as a live cloud's would have."""
    with db_api.writer() as session:
        session.execute(sa.update(models.Service.__table__)
                        .values(last_seen_up=models.utcnow()))


def make_spec(rng):
    vcpus, memory_mb, root_gb = rng.choice(FLAVORS)
    return request_spec.RequestSpec(
        flavor=request_spec.Flavor(vcpus=vcpus, memory_mb=memory_mb,
                                   root_gb=root_gb),
        availability_zone=rng.choice((None,) + ZONES), num_instances=1)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run(hosts, requests, seed):
    rng = random.Random(seed)
    workdir = tempfile.mkdtemp(prefix='gantt-bench-')
    CONF.set_override('connection', 'sqlite:///%s/gantt.sqlite' % workdir,
                      group='database')
    db_api.dispose_engine()
    driver = None
    try:
        make_schema()
        started = time.perf_counter()
        populate(hosts, rng)
        heartbeat_all()
        setup = time.perf_counter() - started
        driver = filter_scheduler.FilterScheduler()
        started = time.perf_counter()
        driver.start()
        load = time.perf_counter() - started
        for _ in range(5):
            driver.select_destinations(None, make_spec(rng),
                                       [str(uuid.uuid4())])
        filter_weigh, claim = [], []
        for _ in range(requests):
            driver.select_destinations(None, make_spec(rng),
                                       [str(uuid.uuid4())])
            filter_weigh.append(driver.last_timings['filter_weigh'] * 1000)
            claim.append(driver.last_timings['claim'] * 1000)
        print('%6d hosts  filter+weigh p50 %6.2f ms  p99 %6.2f ms  |  '
              'claim p50 %6.2f ms  p99 %6.2f ms'
              % (hosts, statistics.median(filter_weigh),
                 percentile(filter_weigh, 0.99), statistics.median(claim),
                 percentile(claim, 0.99)))
        cache = driver.host_manager.stats
        print('%6s        setup %.1fs, cache load %.2fs, %d background '
              'refreshes (last %.1f ms), claim retries %d'
              % ('', setup, load, cache['refreshes'],
                 cache['last_refresh_seconds'] * 1000,
                 driver.stats['claim_retries']))
        sys.stdout.flush()
    finally:
        if driver is not None:
            driver.stop()
        db_api.dispose_engine()
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+',
                        default=[1000, 10000])
    parser.add_argument('--requests', type=int, default=300)
    parser.add_argument('--seed', type=int, default=42)
    args = parser.parse_args(argv)
    CONF([], project='gantt')
    objects.register_all()
    for hosts in args.hosts:
        run(hosts, args.requests, args.seed)


if __name__ == '__main__':
    main()
