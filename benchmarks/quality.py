"""Placement quality under concurrency, over RabbitMQ with real schedulers.

On the local RabbitMQ and PostgreSQL (or MariaDB), as ``rpc.py`` runs
them (see ``rig.py``), with Nova's default filters and weighers (the RAM
weigher spreads):

* **spread**: 100 identical instances (1 vCPU, 512 MB, 1 GB) onto 50
  identical hosts, placed one at a time, then by 16 concurrent callers
  with one scheduler process, then by 16 callers with 4 scheduler
  processes (one daemon with ``[scheduler] workers = 4``: four processes
  consuming the same topic). Printed: the most instances on one host
  beside the sequential case's (the reference: 2), hosts left empty, the
  standard deviation of instances per host. One concurrent run varies a
  lot from the next: ``--repeat N`` runs each case N times and gives the
  worst max/host;
* **filling**: 60 hosts of mixed sizes, whose computes report a RAM
  allocation ratio of 1.5, filled to about 90% of that capacity by
  requests for 2, 4 and 8 GB flavors in random order, from 24
  concurrent callers, with 4 scheduler processes: the claims lost to
  races (and retried on the next host) per 100 placements. Gantt counts
  them in ``stats['claim_retries']`` of each process and exposes them only
  in its logs (see ``rig.Rig.claim_retries``).

After each case, ``gantt-manage db check`` and the overfilled hosts (usage
above capacity, ``total * ratio - reserved``, counted in SQL)::

    python benchmarks/quality.py --db postgresql
    python benchmarks/quality.py --repeat 3 --fill-hosts 30
"""

import argparse
import collections
import os
import random
import shutil
import statistics
import sys
import tempfile

import sqlalchemy as sa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rig  # noqa: E402

FILL_FLAVORS = [(1, 2048, 10), (2, 4096, 20), (4, 8192, 40)]
# The RAM allocation ratio the filling case's computes report.
FILL_RAM_RATIO = 1.5


def _same_size(number, rng):
    return 16, 32768, 500


def _mixed_size(number, rng):
    return rng.choice([(16, 32768, 500), (32, 65536, 1000),
                       (48, 131072, 2000)])


def _check(cloud):
    status, _output = cloud.db_check()
    return 'db check %s, %d overfilled host(s)' % (
        'clean' if status == 0 else 'FAILED (exit %d)' % status,
        cloud.overfilled_hosts())


def _retries(stopped):
    from_stats, from_requests = rig.Rig.claim_retries(stopped)
    if from_stats == from_requests:
        return 'claim retries %d' % from_stats
    return 'claim retries %d (request log lines say %d)' % (
        from_stats, from_requests)


def _place_once(cloud, concurrent, workers, instances):
    """One case once, on an empty cloud: ``(instances per host, note)``;
    the cloud is emptied again afterwards."""
    cloud.start_schedulers(workers)
    uuids = cloud.instances(instances)
    _elapsed, results = cloud.run_callers('select', concurrent, uuids)
    failed = sum(1 for _, _, error in results if error)
    stopped = cloud.stop_schedulers()
    counts = list(cloud.placements_per_host().values())
    note = '%d placed, %d failed, %s, %s' % (
        sum(counts), failed, _retries(stopped), _check(cloud))
    cloud.clear_allocations()
    return counts, note


def spread(backend, hosts, instances, callers, repeat=1):
    workdir = tempfile.mkdtemp(prefix='gantt-bench-quality-')
    rows = []
    notes = []
    try:
        with rig.Rig(workdir, backend, hosts, host_sizes=_same_size) as cloud:
            for label, concurrent, workers, target in (
                    ('one at a time, 1 scheduler', 1, 1, '2'),
                    ('%d callers, 1 scheduler' % callers, callers, 1,
                     '<= 3'),
                    ('%d callers, 4 schedulers' % callers, callers, 4,
                     '<= 4')):
                most, empty, deviation = [], [], []
                for number in range(repeat):
                    counts, note = _place_once(cloud, concurrent, workers,
                                               instances)
                    most.append(max(counts))
                    empty.append(sum(1 for count in counts if not count))
                    deviation.append(statistics.pstdev(counts))
                    notes.append('%s%s: max/host %d, %s' % (
                        label, ' #%d' % (number + 1) if repeat > 1 else '',
                        most[-1], note))
                rows.append((label, max(most), statistics.mean(empty),
                             statistics.mean(deviation), target))
        print('spread: %d instances onto %d identical hosts%s; reference: '
              'the most per host placed one at a time' % (
                  instances, hosts, ', %d times each (the worst max/host, '
                  'the mean of the rest)' % repeat if repeat > 1 else ''))
        print('  %-28s %8s %6s %7s %9s %6s  %s' % (
            'case', 'max/host', 'empty', 'std dev', 'reference', 'ratio',
            'target (max/host)'))
        reference = rows[0][1]
        for label, most, empty, deviation, target in rows:
            print('  %-28s %8d %6.1f %7.2f %9d %5.2fx  %s' % (
                label, most, empty, deviation, reference, most / reference,
                target))
        for note in notes:
            print('  ' + note)
        sys.stdout.flush()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def filling(backend, hosts, callers, workers, seed=5):
    workdir = tempfile.mkdtemp(prefix='gantt-bench-quality-')
    rng = random.Random(seed)
    try:
        with rig.Rig(workdir, backend, hosts,
                     host_sizes=_mixed_size) as cloud:
            # The computes report a RAM ratio of 1.5 (Nova's default for
            # a new node is 1.0), as the cloud this case was made for.
            with cloud.cluster.engine.begin() as connection:
                connection.execute(sa.text(
                    'UPDATE compute_nodes SET ram_allocation_ratio = :ratio'),
                    {'ratio': FILL_RAM_RATIO})
            memory = sum(row.memory_mb for row in cloud.cluster.query(
                'SELECT memory_mb FROM compute_nodes'))
            mean = statistics.mean(flavor[1] for flavor in FILL_FLAVORS)
            # RAM is the limit; stop near 90% of it.
            placements = int(memory * FILL_RAM_RATIO * 0.9 / mean)
            cloud.start_schedulers(workers)
            flavors = {uuid: rng.choice(FILL_FLAVORS)
                       for uuid in cloud.instances(placements)}
            _elapsed, results = cloud.run_callers(
                'select', callers, list(flavors), flavor=flavors)
            stopped = cloud.stop_schedulers()
            placed = sum(1 for _, host, error in results
                         if host and not error)
            errors = collections.Counter(error for _, _, error in results
                                         if error)
            retries, from_requests = rig.Rig.claim_retries(stopped)
            used = int(cloud.cluster.query(   # a Decimal on MariaDB
                'SELECT sum(memory_mb_used) AS used FROM compute_nodes'
            )[0].used or 0)
            print('filling: %d hosts of mixed sizes, flavors of 2, 4 and 8 '
                  'GB in random order, %d callers, %d scheduler processes'
                  % (hosts, callers, workers))
            rig.table([('claim retries per 100 placements',
                        100.0 * retries / max(placed, 1), None, '<= 10')])
            print('  %d requests, %d placed%s; memory %.0f%% used (of '
                  'capacity at ratio %s)' % (
                      len(results), placed,
                      ''.join(', %d %s' % (count, name)
                              for name, count in errors.items()),
                      100.0 * used / (memory * FILL_RAM_RATIO),
                      FILL_RAM_RATIO))
            print('  %s; %s' % (_retries(stopped), _check(cloud)))
            sys.stdout.flush()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--db', choices=['postgresql', 'mariadb'],
                        default='postgresql')
    parser.add_argument('--hosts', type=int, default=50)
    parser.add_argument('--instances', type=int, default=100)
    parser.add_argument('--callers', type=int, default=16)
    parser.add_argument('--repeat', type=int, default=1,
                        help='run each spread case this many times')
    parser.add_argument('--fill-hosts', type=int, default=60)
    parser.add_argument('--fill-callers', type=int, default=24)
    parser.add_argument('--fill-workers', type=int, default=4)
    args = parser.parse_args(argv)
    spread(args.db, args.hosts, args.instances, args.callers,
           args.repeat)
    filling(args.db, args.fill_hosts, args.fill_callers, args.fill_workers)


if __name__ == '__main__':
    main()
