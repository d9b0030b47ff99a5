"""Host cache benchmark: cold start, memory, refresh cost and freshness.

Against a database of its own on the local PostgreSQL (or MariaDB, or a
SQLite file) holding N mapped compute nodes with live services, one
scheduler process's HostManager is timed, as ``gantt-scheduler`` runs
it (each full read ends with a pass of the garbage collector over
everything and a freeze: see ``host_cache.freeze_collector``):

* **cold start**: the first full load of the host table, SQL to table,
  and that pass;
* **memory per host**: the process's resident memory grown by that load,
  divided by N;
* **refresh, k changed**: one refresh (``HostManager.refresh``) after k
  nodes were written (an inventory report each), p50 over the rounds,
  for k = 0 and 100; the same while every host heartbeats every
  ``[DEFAULT] report_interval`` seconds (the heartbeats of one refresh
  interval are written before each refresh, as the conductor writes
  them); and one full read (every node's generation and every service,
  which the background thread does every ``FULL_READ_INTERVAL``
  seconds);
* **freshness**: with the background refresh running at the default
  ``[scheduler] host_state_refresh_interval``, the time from a node's
  write committing to a snapshot showing it, p50 and max.

Each figure is printed beside its target (issue 9)::

    python benchmarks/host_cache.py --hosts 100000 --db postgresql
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from scheduler import conf  # noqa: E402
from scheduler.db import api as db_api  # noqa: E402
from scheduler.db import compute_nodes  # noqa: E402
from scheduler.db import migration  # noqa: E402
from scheduler.db import models  # noqa: E402
from scheduler.db import services as db_services  # noqa: E402
from scheduler import host_cache  # noqa: E402
from scheduler import objects  # noqa: E402

CONF = conf.CONF
BATCH = 5000


def rss_bytes():
    with open('/proc/self/statm') as statm:
        return int(statm.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def bulk_populate(hosts, rng, first=0):
    """N mapped nodes and their live compute services, in batches (hosts
    numbered from ``first``)."""
    nodes = models.ComputeNode.__table__
    services = models.Service.__table__
    now = models.utcnow()
    for start in range(first, first + hosts, BATCH):
        numbers = range(start, min(first + hosts, start + BATCH))
        with db_api.writer() as session:
            session.execute(sa.insert(nodes), [{
                'uuid': str(uuid.UUID(int=rng.getrandbits(128))),
                'host': 'compute-%06d' % number,
                'hypervisor_hostname': 'compute-%06d' % number,
                'vcpus': rng.choice([16, 32, 64, 96]),
                'memory_mb': rng.choice([65536, 131072, 262144]),
                'local_gb': rng.choice([500, 1000, 2000]),
                'reserved_memory_mb': 512, 'mapped': True, 'generation': 1,
                'created_at': now, 'updated_at': now} for number in numbers])
            session.execute(sa.insert(services), [{
                'host': 'compute-%06d' % number, 'binary': 'gantt-compute',
                'topic': 'compute', 'disabled': False, 'forced_down': False,
                'last_seen_up': now, 'report_count': 1, 'created_at': now,
                'updated_at': now} for number in numbers])
    # Fresh planner statistics, as autovacuum (or an operator's ANALYZE)
    # would leave them after a bulk load.
    engine = db_api.get_engine()
    with engine.connect() as connection:
        if engine.dialect.name == 'mysql':
            connection.execute(sa.text('ANALYZE TABLE compute_nodes, '
                                       'services'))
        else:
            connection.execute(sa.text('ANALYZE'))
        connection.commit()


def write_nodes(node_ids, rng):
    """An inventory report on each node (what a compute's periodic
    update or a claim writes: new values, generation + 1)."""
    with db_api.writer() as session:
        for node_id in node_ids:
            row = session.execute(
                sa.select(models.ComputeNode.__table__)
                .where(models.ComputeNode.id == node_id)).one()
            compute_nodes.report_inventory(
                session, row.uuid, row.host, row.hypervisor_hostname,
                {'vcpus': row.vcpus, 'memory_mb': row.memory_mb,
                 'local_gb': row.local_gb,
                 'io_workload': rng.randint(0, 20)})


def heartbeat(hosts):
    """Heartbeats of these hosts' computes, as the conductor writes
    them (conductor/heartbeats.py), in batches."""
    for start in range(0, len(hosts), BATCH):
        with db_api.writer() as session:
            db_services.heartbeat_many(session, 'gantt-compute', 'compute',
                                       hosts[start:start + BATCH])


def timed(call):
    started = time.perf_counter()
    result = call()
    return result, (time.perf_counter() - started) * 1000


def row(figure, value, unit, target):
    print('  %-44s %10.2f %-5s target %s' % (figure, value, unit, target))


def run(hosts, rounds, changes, backend):
    rng = random.Random(7)
    workdir = tempfile.mkdtemp(prefix='gantt-bench-')
    if backend == 'sqlite':
        url = 'sqlite:///%s/gantt.sqlite' % workdir
    else:
        from tests.fixtures import databases
        url = databases.create_database(backend)
    CONF.set_override('connection', url, group='database')
    db_api.dispose_engine()
    manager = None
    try:
        migration.db_sync()
        started = time.perf_counter()
        bulk_populate(hosts, rng)
        setup = time.perf_counter() - started
        with db_api.reader() as session:
            ids = [node_id for (node_id,) in session.execute(
                sa.select(models.ComputeNode.id))]

        before = rss_bytes()
        manager = host_cache.HostManager(auto_refresh=False)
        _table, cold = timed(manager.snapshot)
        per_host = (rss_bytes() - before) / hosts

        # Steady state: the set-up's writes are older than the slack the
        # refresh reads again.
        time.sleep(host_cache.WRITE_SLACK + 0.5)
        manager.refresh()
        quiet, busy = [], []
        for _ in range(rounds):
            quiet.append(timed(manager.refresh)[1])
            write_nodes(rng.sample(ids, changes), rng)
            busy.append(timed(manager.refresh)[1])
        # Every compute heartbeats every report_interval seconds: the
        # heartbeats of one refresh interval land before each refresh.
        names = ['compute-%06d' % number for number in range(hosts)]
        per_refresh = int(hosts * CONF.scheduler.host_state_refresh_interval
                          / CONF.report_interval)
        beating = []
        for _ in range(rounds):
            heartbeat(rng.sample(names, per_refresh))
            write_nodes(rng.sample(ids, changes), rng)
            beating.append(timed(manager.refresh)[1])
        up = int(manager.snapshot().service_up().sum())
        full = [timed(lambda: manager.refresh(full=True))[1]
                for _ in range(3)]

        manager = host_cache.HostManager()
        manager.start()
        seen = []
        for _ in range(rounds):
            node_id = rng.choice(ids)
            with db_api.reader() as session:
                generation = session.execute(
                    sa.select(models.ComputeNode.generation)
                    .where(models.ComputeNode.id == node_id)).scalar_one()
            write_nodes([node_id], rng)
            committed = time.perf_counter()
            while True:
                table = manager.snapshot()
                state = table.states[table.row_by_id[node_id]]
                if state.generation > generation:
                    break
                time.sleep(0.002)
            seen.append(time.perf_counter() - committed)
            time.sleep(rng.random() * 0.3)

        print('%d hosts on %s (set-up %.1f s), refresh interval %.2f s, '
              '%d rounds' % (hosts, backend, setup,
                             CONF.scheduler.host_state_refresh_interval,
                             rounds))
        row('cold start (first load of the table)', cold / 1000, 's',
            '<= 3 s at 100k')
        row('memory per host', per_host / 1024, 'KB', '<= 2 KB at 100k')
        row('refresh, 0 nodes changed, p50', statistics.median(quiet), 'ms',
            '')
        row('refresh, %d nodes changed, p50' % changes,
            statistics.median(busy), 'ms', '<= 20 ms at 100k (100 changed)')
        row('same + %d heartbeats (every host / %d s), p50'
            % (per_refresh, CONF.report_interval),
            statistics.median(beating), 'ms',
            '<= 20 ms at 100k (100 changed)')
        print('  (services up in the cache afterwards: %d of %d)'
              % (up, hosts))
        row('full read (every %d s), p50'
            % host_cache.FULL_READ_INTERVAL, statistics.median(full), 'ms',
            '')
        row('change seen by scheduling, p50', statistics.median(seen), 's',
            '<= 0.5 s')
        row('change seen by scheduling, max', max(seen), 's', '<= 1 s')
        sys.stdout.flush()
    finally:
        if manager is not None:
            manager.stop()
        db_api.dispose_engine()
        shutil.rmtree(workdir, ignore_errors=True)
        if backend != 'sqlite':
            databases.drop_database(url)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[100000])
    parser.add_argument('--rounds', type=int, default=20)
    parser.add_argument('--changes', type=int, default=100,
                        help='nodes written before each timed refresh')
    parser.add_argument('--db', choices=['sqlite', 'postgresql', 'mariadb'],
                        default='postgresql')
    args = parser.parse_args(argv)
    CONF([], project='gantt')
    objects.register_all()
    # As the daemon's main does.
    host_cache.freeze_collector()
    for hosts in args.hosts:
        run(hosts, args.rounds, args.changes, args.db)


if __name__ == '__main__':
    main()
