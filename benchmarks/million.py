"""A million hosts in one scheduler (issue 53): fill, cold start, memory,
filter+weigh.

For each host count a database of its own on the local PostgreSQL
(``gantt_t_<random>``, schema from the migrations, dropped at the end,
on failure, Ctrl-C and SIGTERM too) is filled with ``COPY ... FROM STDIN``
(psycopg2's ``copy_expert``): N mapped compute nodes of varied sizes,
their compute services, and four availability-zone aggregates holding
every host. COPY, not INSERT batches (``host_cache.py``'s
``bulk_populate``), so that the fill is not what a run waits on; its
time is printed apart.

Then a fresh child process, so that the resident memory it measures is
the host cache's and nothing the fill left, does what ``gantt-scheduler``
does (the collector frozen after each full read) and prints, beside each
target of issue 53:

* **cold start**: ``FilterScheduler.start()``, the first full load of the
  host cache from PostgreSQL;
* **memory per host**: the resident memory that load added, divided by
  N (and the peak it reached, ``VmHWM``, which bounds what a host needs);
* **filter+weigh** p50 / p99 of ``--requests`` single-instance requests
  (``select_destinations.py``'s default set: the default filters and
  every weigher, a random flavor and zone, each claimed on PostgreSQL)::

    python benchmarks/million.py --hosts 100000 300000 1000000

Without ``--hosts`` it runs 100,000 hosts, or a million with
``GANTT_BENCH_MILLION=1`` (as ``tox -e bench`` runs it: the million
takes 2-4 minutes and 2 GB here, most of it the fill and the load).

The child sets ``[DEFAULT] service_down_time`` to an hour: at a million
hosts the fill and the load outlast the default 60 s, and nothing
heartbeats here. ``--profile FILE`` writes a cProfile of the cold start
(``python -m pstats FILE``); ``--memory-sites K`` prints the K source
lines that allocated most of what the load kept (tracemalloc, bytes per
host).
"""

import argparse
import io
import os
import random
import signal
import statistics
import subprocess
import sys
import time
import uuid

import sqlalchemy as sa

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCHMARKS)
sys.path.insert(0, ROOT)
sys.path.insert(0, BENCHMARKS)

from scheduler import conf  # noqa: E402
from scheduler.db import api as db_api  # noqa: E402
from scheduler.db import migration  # noqa: E402
from scheduler.db import models  # noqa: E402
from scheduler import objects  # noqa: E402

CONF = conf.CONF
# Rows per COPY statement (all in one transaction): a few tens of MB of
# text at a time.
COPY_ROWS = 100000
ZONES = ('az1', 'az2', 'az3', 'az4')
# Set to 1: without --hosts, run at a million hosts (some 2-4 minutes and
# 2 GB; a run at 100,000 hosts otherwise).
MILLION_FLAG = 'GANTT_BENCH_MILLION'
# Issue 53's targets at 1,000,000 hosts.
TARGET_FILTER_WEIGH_MS = 5.0
TARGET_KB_PER_HOST = 1.2
TARGET_COLD_START_S = 15.0


def host_name(number):
    return 'compute-%07d' % number


def _text(value):
    """``value`` in COPY's text format (no value here holds a tab, a
    newline or a backslash)."""
    if value is None:
        return '\\N'
    if value is True:
        return 't'
    if value is False:
        return 'f'
    return str(value)


def _column_defaults(table, now):
    """Each column's value when a row does not give one: the model's
    scalar default, ``now`` for a timestamp default, else NULL (COPY
    sees no Python-side default)."""
    defaults = {}
    for column in table.columns:
        default = column.default
        if default is None:
            defaults[column.name] = None
        elif default.is_scalar:
            defaults[column.name] = default.arg
        else:
            defaults[column.name] = now
    return defaults


def copy_rows(cursor, table, rows, now):
    """COPY ``rows`` (dicts of some of ``table``'s columns) into
    ``table``, every column but ``id`` given (its default otherwise),
    ``COPY_ROWS`` at a time."""
    defaults = _column_defaults(table, now)
    names = [name for name in defaults if name != 'id']
    statement = 'COPY %s (%s) FROM STDIN' % (
        table.name, ', '.join('"%s"' % name for name in names))
    buffer = io.StringIO()
    count = 0

    def flush():
        buffer.seek(0)
        cursor.copy_expert(statement, buffer)
        buffer.seek(0)
        buffer.truncate()

    for row in rows:
        buffer.write('\t'.join(_text(row.get(name, defaults[name]))
                               for name in names))
        buffer.write('\n')
        count += 1
        if count % COPY_ROWS == 0:
            flush()
    if count % COPY_ROWS:
        flush()


def _nodes(hosts, rng, now):
    for number in range(hosts):
        name = host_name(number)
        yield {'uuid': str(uuid.UUID(int=rng.getrandbits(128))),
               'host': name, 'hypervisor_hostname': name,
               'vcpus': rng.choice((16, 32, 64, 96)),
               'memory_mb': rng.choice((65536, 131072, 262144)),
               'local_gb': rng.choice((500, 1000, 2000)),
               'reserved_memory_mb': 512, 'mapped': True, 'generation': 1,
               'created_at': now, 'updated_at': now}


def _services(hosts, now):
    for number in range(hosts):
        yield {'host': host_name(number), 'binary': 'gantt-compute',
               'topic': 'compute', 'disabled': False, 'forced_down': False,
               'last_seen_up': now, 'report_count': 1, 'created_at': now,
               'updated_at': now}


def fill(hosts, rng):
    """N mapped nodes, their live services and four zone aggregates
    (host k in zone k mod 4), by COPY in one transaction; then VACUUM
    ANALYZE, as autovacuum does after a bulk load (PostgreSQL 13 and
    later vacuum after inserts too): a scheduler that starts in a
    running cloud reads tables whose rows are long known committed,
    where the first scan after a COPY marks every row so as it reads.
    And a CHECKPOINT, so that the server is not still writing the fill
    out while the cold start is timed."""
    now = models.utcnow()
    engine = db_api.get_engine()
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        aggregates = []
        for zone in ZONES:
            cursor.execute(
                'INSERT INTO aggregates (uuid, name, created_at, updated_at)'
                ' VALUES (%s, %s, %s, %s) RETURNING id',
                (str(uuid.uuid4()), 'rack-%s' % zone, now, now))
            aggregate_id = cursor.fetchone()[0]
            cursor.execute(
                'INSERT INTO aggregate_metadata (aggregate_id, key, value)'
                ' VALUES (%s, %s, %s)',
                (aggregate_id, 'availability_zone', zone))
            aggregates.append(aggregate_id)
        copy_rows(cursor, models.ComputeNode.__table__,
                  _nodes(hosts, rng, now), now)
        copy_rows(cursor, models.Service.__table__, _services(hosts, now),
                  now)
        copy_rows(cursor, models.AggregateHost.__table__,
                  ({'aggregate_id': aggregates[number % len(ZONES)],
                    'host': host_name(number)} for number in range(hosts)),
                  now)
        raw.commit()
        cursor.close()
    finally:
        raw.close()
    with engine.connect().execution_options(
            isolation_level='AUTOCOMMIT') as connection:
        connection.execute(sa.text('VACUUM ANALYZE'))
        connection.execute(sa.text('CHECKPOINT'))


# -- the child: one scheduler process ---------------------------------------


def _status_kb(field):
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    raise RuntimeError('no %s in /proc/self/status' % field)


def row(figure, value, unit, target):
    print(('  %-46s %9.2f %-3s' % (figure, value, unit)
           + ('  target %s' % target if target else '')).rstrip())


def _print_memory_sites(snapshot, hosts, count):
    """The ``count`` lines that allocated the most of what the load
    left, in bytes per host."""
    print('where the memory the load kept was allocated (bytes per host, '
          'tracemalloc):')
    stats = snapshot.statistics('lineno')
    total = sum(stat.size for stat in stats)
    for stat in stats[:count]:
        frame = stat.traceback[0]
        print('  %7.1f  %s:%d' % (stat.size / hosts,
                                  os.path.relpath(frame.filename, ROOT),
                                  frame.lineno))
    print('  %7.1f  in all (%d blocks)' % (
        total / hosts, sum(stat.count for stat in stats)))


def measure(url, hosts, requests, seed, profile, memory_sites):
    """In the child: the cold start, its memory and the filter+weigh
    times, printed."""
    import select_destinations
    from scheduler.drivers import filter_scheduler
    from scheduler import host_cache
    from scheduler.sim import metrics

    CONF([], project='gantt')
    objects.register_all()
    CONF.set_override('connection', url, group='database')
    CONF.set_override('service_down_time', 3600)
    # As the daemon's main does.
    host_cache.freeze_collector()
    driver = filter_scheduler.FilterScheduler()
    if memory_sites:
        import tracemalloc
        tracemalloc.start()
    before, peak_before = _status_kb('VmRSS'), _status_kb('VmHWM')
    started = time.perf_counter()
    if profile:
        import cProfile
        profiler = cProfile.Profile()
        profiler.runcall(driver.start)
        profiler.dump_stats(profile)
    else:
        driver.start()
    cold = time.perf_counter() - started
    grown = (_status_kb('VmRSS') - before) * 1024.0 / hosts
    peak = (_status_kb('VmHWM') - peak_before) * 1024.0 / hosts
    if memory_sites:
        _print_memory_sites(tracemalloc.take_snapshot(), hosts,
                            memory_sites)
        tracemalloc.stop()
    try:
        rng = random.Random(seed)
        filter_weigh, claim, _kinds, failed = (
            select_destinations.time_requests(driver, rng, requests,
                                              'default'))
        # After claims wrote their rows (a column held once that a write
        # made whole counts here).
        after_requests = _status_kb('VmRSS')
    finally:
        driver.stop()
    under = ' (cold start under %s)' % (
        'cProfile' if profile else 'tracemalloc') if (
            profile or memory_sites) else ''
    print('%d hosts on PostgreSQL, %d filters, %d weighers, %d requests%s'
          % (hosts, len(driver.enabled_filters), len(driver.weighers),
             requests, under))
    row('cold start (first full load)', cold, 's',
        '<= %.0f s at 1M' % TARGET_COLD_START_S)
    row('memory per host (RSS growth / N)', grown / 1024, 'KB',
        '<= %.1f KB at 1M' % TARGET_KB_PER_HOST)
    row('  peak during the load (VmHWM growth / N)', peak / 1024, 'KB', '')
    row('filter+weigh p50', statistics.median(filter_weigh), 'ms',
        '<= %.0f ms at 1M' % TARGET_FILTER_WEIGH_MS)
    row('filter+weigh p99', metrics.percentile(filter_weigh, 0.99), 'ms',
        '')
    row('claim p50', statistics.median(claim), 'ms', '')
    print('  (no valid host: %d; process RSS after the load %.0f MB, '
          'after the requests %.0f MB)'
          % (failed, (before + grown * hosts / 1024) / 1024,
             after_requests / 1024))
    sys.stdout.flush()


# -- the parent --------------------------------------------------------------


def run(hosts, requests, seed, profile, memory_sites):
    from tests.fixtures import databases

    url = databases.create_database('postgresql')
    CONF.set_override('connection', url, group='database')
    db_api.dispose_engine()
    try:
        migration.db_sync()
        started = time.perf_counter()
        fill(hosts, random.Random(seed))
        print('%d hosts: fill by COPY (nodes, services, zones), VACUUM '
              'ANALYZE and CHECKPOINT %.1f s'
              % (hosts, time.perf_counter() - started))
        sys.stdout.flush()
        db_api.dispose_engine()
        command = [sys.executable]
        command += ['-W' + option for option in sys.warnoptions]
        command += [os.path.abspath(__file__), '--child', url,
                    '--hosts', str(hosts), '--requests', str(requests),
                    '--seed', str(seed)]
        if profile:
            command += ['--profile', '%s.%d' % (profile, hosts)]
        if memory_sites:
            command += ['--memory-sites', str(memory_sites)]
        subprocess.run(command, check=True)
    finally:
        db_api.dispose_engine()
        databases.drop_database(url)


def _interrupted(signum, frame):
    raise KeyboardInterrupt('signal %d' % signum)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+',
                        help='host counts (default: 100,000; 1,000,000 '
                        'with %s=1)' % MILLION_FLAG)
    parser.add_argument('--requests', type=int, default=300)
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--profile', metavar='FILE',
                        help='cProfile the cold start into FILE.<hosts>')
    parser.add_argument('--memory-sites', type=int, metavar='K',
                        help='trace the cold start with tracemalloc and '
                        'print the K lines that allocated most of what it '
                        'kept (slows the load)')
    parser.add_argument('--child', metavar='URL', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.hosts:
        args.hosts = ([1000000] if os.environ.get(MILLION_FLAG) == '1'
                      else [100000])
    if args.child:
        measure(args.child, args.hosts[0], args.requests, args.seed,
                args.profile, args.memory_sites)
        return
    # A SIGTERM unwinds as Ctrl-C does: the database is dropped.
    signal.signal(signal.SIGTERM, _interrupted)
    CONF([], project='gantt')
    objects.register_all()
    for hosts in args.hosts:
        run(hosts, args.requests, args.seed, args.profile,
            args.memory_sites)


if __name__ == '__main__':
    main()
