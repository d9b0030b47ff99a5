"""Heartbeats the conductor writes: one transaction each, or batched.

Against a database of its own on the local PostgreSQL (or MariaDB, or a
SQLite file) holding N compute services, ``--threads`` threads (the
conductor's RPC threads) each send heartbeats of random hosts for
``--seconds``, first each in a transaction of its own (what the
conductor did before, and the reference), then through the conductor's
:class:`conductor.heartbeats.HeartbeatBatcher`. Printed for both:
heartbeats per second and transactions per 100 heartbeats, beside the
rate 100,000 computes need (one every ``[DEFAULT] report_interval``, 10
s: 10,000/s)::

    python benchmarks/heartbeats.py --db postgresql
"""

import argparse
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import host_cache  # noqa: E402

from conductor import heartbeats  # noqa: E402
from scheduler import conf  # noqa: E402
from scheduler.db import api as db_api  # noqa: E402
from scheduler.db import migration  # noqa: E402
from scheduler.db import services as db_services  # noqa: E402
from scheduler import objects  # noqa: E402

CONF = conf.CONF


def one_transaction_each(host):
    with db_api.writer() as session:
        row = db_services.report_alive(session, host, 'gantt-compute',
                                       'compute')
    return bool(row.disabled)


def batched_by(batcher):
    def report(host):
        return batcher.report(host, 'gantt-compute', 'compute')
    return report


def drive(report, names, threads, seconds):
    """Heartbeats per second of ``threads`` threads calling ``report``."""
    counts = [0] * threads
    stop = time.monotonic() + seconds

    def run(index):
        rng = random.Random(index)
        while time.monotonic() < stop:
            report(rng.choice(names))
            counts[index] += 1

    workers = [threading.Thread(target=run, args=(index,))
               for index in range(threads)]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(counts) / (time.monotonic() - started), sum(counts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=10000)
    parser.add_argument('--threads', type=int, default=32)
    parser.add_argument('--seconds', type=float, default=10.0)
    parser.add_argument('--db', choices=['sqlite', 'postgresql', 'mariadb'],
                        default='postgresql')
    args = parser.parse_args(argv)
    CONF([], project='gantt')
    objects.register_all()
    from tests.fixtures import databases
    url = (databases.create_database(args.db) if args.db != 'sqlite'
           else 'sqlite:////tmp/gantt-bench-heartbeats.sqlite')
    CONF.set_override('connection', url, group='database')
    CONF.set_override('max_pool_size', args.threads, group='database')
    db_api.dispose_engine()
    try:
        migration.db_sync()
        host_cache.bulk_populate(args.hosts, random.Random(7))
        names = ['compute-%06d' % number for number in range(args.hosts)]
        drive(one_transaction_each, names, args.threads, 1.0)   # warm-up
        alone, alone_count = drive(one_transaction_each, names,
                                   args.threads, args.seconds)
        batcher = heartbeats.HeartbeatBatcher()
        drive(batched_by(batcher), names, args.threads, 1.0)
        before = dict(batcher.stats)
        batched, batched_count = drive(batched_by(batcher), names,
                                       args.threads, args.seconds)
        transactions = batcher.stats['transactions'] - before['transactions']
        print('%d services on %s, %d threads, %.0f s each'
              % (args.hosts, args.db, args.threads, args.seconds))
        print('  %-36s %10s %14s' % ('', 'heartbeats/s', 'tx per 100'))
        print('  %-36s %10.0f %14.1f' % ('one transaction each (reference)',
                                         alone, 100.0))
        print('  %-36s %10.0f %14.1f' % (
            'batched (HeartbeatBatcher)', batched,
            100.0 * transactions / max(1, batched_count)))
        print('  ratio %.2fx; 100,000 computes every %d s need %d/s'
              % (batched / alone, CONF.report_interval,
                 100000 // CONF.report_interval))
    finally:
        db_api.dispose_engine()
        if args.db != 'sqlite':
            databases.drop_database(url)
        else:
            os.unlink('/tmp/gantt-bench-heartbeats.sqlite')


if __name__ == '__main__':
    main()
