"""Nova mode: Gantt's candidates from its mirror, against asking Placement.

Nova's scheduler asks Placement for allocation candidates on every
request, then filters and weighs the hosts they name. Gantt in Nova mode
keeps Nova's hosts and Placement's providers in its host table (the
mirror, synced in the background) and answers from memory; Placement
only takes the claims. This times, on one cloud and in one run:

* **Placement**: ``GET /allocation_candidates?resources=VCPU:2,
  MEMORY_MB:2048,DISK_GB:20&limit=1000`` (Nova's ``max_placement_results``)
  over HTTP, the real Placement served by the standard library's WSGI
  server on a SQLite file, as Nova's scheduler would ask it, once per
  request: what any request pays before Nova's filters even run;
* **Gantt**: the whole filter scheduler over the mirror's host table
  (candidates, the default filters, every weigher, ranking), without
  the claim (which both pay, in Placement);
* the mirror's first sync (every host read), and a sync when nothing
  changed (what the background pays every ``[nova_backend]
  sync_interval``).

The cloud: N compute nodes (8-64 VCPU, 16-256 GiB, 200-2000 GB) in
Nova's databases (SQLite files with the columns Nova mode reads) and
their providers in Placement, a third of them partly used::

    python benchmarks/nova_candidates.py --hosts 500 2000
"""

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import pathlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from scheduler import conf  # noqa: E402
from scheduler.db import api as db_api  # noqa: E402
from scheduler.drivers import filter_scheduler  # noqa: E402
from scheduler.nova import mirror  # noqa: E402
from scheduler.nova import placement_client  # noqa: E402
from scheduler import objects  # noqa: E402
from scheduler.objects import request_spec  # noqa: E402

CONF = conf.CONF
QUERY = ('/allocation_candidates?resources=VCPU:2,MEMORY_MB:2048,'
         'DISK_GB:20&limit=1000')


def build(directory, hosts, rng):
    """Placement over HTTP and Nova's databases with ``hosts`` nodes:
    ``(server context, server, cloud)``."""
    from tests.functional import placement_server
    from tests.unit.nova import nova_cloud

    serving = placement_server.serving(directory)
    server = serving.__enter__()
    cloud = nova_cloud.NovaCloud(directory, server.client)
    for number in range(hosts):
        node = cloud.add_compute(
            'cmp%05d' % number, vcpus=rng.choice((8, 16, 32, 64)),
            memory_mb=1024 * rng.choice((16, 64, 128, 256)),
            disk_gb=rng.choice((200, 500, 2000)))
        if number % 3 == 0:
            cloud.allocate({node: {'VCPU': rng.randint(1, 8),
                                   'MEMORY_MB': 1024 * rng.randint(1, 8),
                                   'DISK_GB': 10 * rng.randint(1, 10)}})
    return serving, server, cloud


def _ms(seconds):
    return seconds * 1000.0


def _p(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def run(hosts, requests, seed):
    rng = random.Random(seed)
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='gantt-bench-nova-'))
    serving = cloud = driver = None
    try:
        started = time.perf_counter()
        serving, server, cloud = build(workdir, hosts, rng)
        setup = time.perf_counter() - started
        CONF.set_override('backend', 'nova', group='scheduler')
        CONF.set_override('connection', cloud.cell_url, group='database')
        CONF.set_override('connection', cloud.api_url, group='api_database')
        CONF.set_override('mirror_connection', 'sqlite:///%s' % (
            workdir / 'mirror.sqlite'), group='nova_backend')
        client = placement_client.PlacementClient(
            server.client.adapter)
        the_mirror = mirror.configure(CONF, client_factory=lambda: client)
        started = time.perf_counter()
        the_mirror.sync()
        first_sync = time.perf_counter() - started
        idle_syncs = []
        for _ in range(5):
            started = time.perf_counter()
            the_mirror.sync()
            idle_syncs.append(time.perf_counter() - started)

        placement_times = []
        for _ in range(requests):
            started = time.perf_counter()
            answer = server.client.get(QUERY)
            placement_times.append(time.perf_counter() - started)
        offered = len(answer['allocation_requests'])

        driver = filter_scheduler.FilterScheduler()
        driver.start()
        spec = request_spec.RequestSpec(
            num_instances=1, project_id='p', user_id='u',
            flavor=request_spec.Flavor(vcpus=2, memory_mb=2048,
                                       root_gb=20, ephemeral_gb=0, swap=0,
                                       extra_specs={}))
        for _ in range(5):
            driver.select_destinations(None, spec, None)
        gantt_times = []
        for _ in range(requests):
            driver.select_destinations(None, spec, None)
            gantt_times.append(driver.last_timings['filter_weigh'])
        placement_p50 = _ms(statistics.median(placement_times))
        gantt_p50 = _ms(statistics.median(gantt_times))
        print('%s hosts (set-up %.0f s), %d requests each:' % (
            format(hosts, ','), setup, requests))
        print('  Placement GET /allocation_candidates   p50 %8.2f ms  '
              'p90 %8.2f ms  (%d candidates)' % (
                  placement_p50, _ms(_p(placement_times, 0.9)), offered))
        print('  Gantt filter+weigh over its mirror     p50 %8.2f ms  '
              'p90 %8.2f ms  (%.0fx less than asking Placement)' % (
                  gantt_p50, _ms(_p(gantt_times, 0.9)),
                  placement_p50 / gantt_p50))
        print('  mirror sync: first %.2f s; with nothing changed p50 '
              '%.1f ms' % (first_sync,
                           _ms(statistics.median(idle_syncs))))
    finally:
        if driver is not None:
            driver.stop()
        mirror.reset()
        db_api.dispose_engine()
        if cloud is not None:
            cloud.dispose()
        if serving is not None:
            serving.__exit__(None, None, None)
        for name in ('connection', 'slave_connection'):
            CONF.clear_override(name, group='database')
        CONF.clear_override('connection', group='api_database')
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[500, 2000])
    parser.add_argument('--requests', type=int, default=50)
    parser.add_argument('--seed', type=int, default=7)
    args = parser.parse_args(argv)
    CONF([], project='gantt', default_config_files=[])
    objects.register_all()
    for hosts in args.hosts:
        run(hosts, args.requests, args.seed)


if __name__ == '__main__':
    main()
