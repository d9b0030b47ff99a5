"""select_destinations over RabbitMQ, against a bare oslo.messaging echo.

Everything runs on this machine: the local RabbitMQ (a virtual host of
the benchmark's own), a database of its own on the local PostgreSQL (or
MariaDB), one ``gantt-scheduler`` daemon (with ``--workers`` processes)
running this checkout's code, and the callers, which use the scheduler's
RPC client (``scheduler.rpcapi.SchedulerAPI``, as the conductor does) in
caller processes of their own (see ``rig.py``). The echo is an
oslo.messaging server on the same broker and vhost, topic
``gantt-bench-echo``, whose one method returns its argument: a serialized
request spec, about as large as a ``select_destinations`` request (both
sizes are printed). Each figure is printed beside the echo's, measured in
the same run, with their ratio and the target:

* **latency** at ``--latency-hosts`` (10,000): one caller, one instance
  per request, ``--calls`` (300) of each kind after 30 warm-up calls,
  the kinds taking turns every 10 calls, with 10 ms of rest between two
  turns (``rig.Rig.run_in_turns``); p50 and p99 (targets, issue 53: at
  most 1.5x and 2x the echo's). For reference, a third kind takes its
  turn too: the echo server's ``echo_commit``, which commits one
  single-row UPDATE on the same database before it answers (see
  ``rig.py``), the floor of any service that writes durably before it
  answers, as a claim must; and its ``echo_claim``, which makes the
  scheduler's own SQL claim on the next node and answers three
  Selections (no host cache, filters or weighers), the floor of a
  service that claims as Gantt's scheduler does;
* **throughput** at ``--throughput-hosts`` (5,000): ``--callers`` (16)
  concurrent callers, 4 caller processes of 4 threads each (the callers'
  GIL is not the limit on the 2-CPU machine: one process of 16 threads
  made as many echo calls per second; ``--caller-processes`` changes it),
  ``--placements`` (3,000) single-instance placements per second against
  echo calls per second, the echo, the echo committing a row first, the
  echo claiming first and select taking turns in three rounds (the rates
  are of all rounds together; each round's ratio is printed too), one
  row for each of ``--workers`` (target, issue 53: at least 0.9x, and no
  row below the one of fewer workers before it); for reference, the
  committing echo's calls per second against the echo's (the floor of
  any service that writes durably before it answers) and the
  placements' against it, and the same for the claiming echo; then
  ``gantt-manage db check`` and the number of overfilled hosts. And what
  each part of the machine spent per call over the timed calls, in CPU
  ms (``/proc``: the server, the echo's or the scheduler daemon's
  workers; RabbitMQ's and the database's processes, counted
  machine-wide, so other users of the shared servers add to them; the
  caller processes): on two CPUs the ratio is about the echo's CPU per
  call over a placement's.

Every request claims for an instance recorded as the conductor records
one (BUILDING, task ``scheduling``), made before the clock starts, so
that ``db check`` finds every claim owned. Hosts have 32-96 vCPUs and
128-256 GB: a run fills none.

    python benchmarks/rpc.py --db postgresql --workers 1 2 3
    python benchmarks/rpc.py --db mariadb --latency-hosts 2000 --skip \
        throughput

``--set SECTION.OPTION=VALUE`` (repeatable) gives the scheduler daemons
an option on top of the benchmark's, to compare two settings::

    python benchmarks/rpc.py --skip throughput \
        --set filter_scheduler.rank_ahead=false
"""

import argparse
import collections
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rig  # noqa: E402


WARMUP = 30
# Throughput runs are made in this many rounds, select and echo in turn,
# so that both see the same load from whatever else runs on the machine.
ROUNDS = 3


def _errors(results):
    counts = collections.Counter(error for _, _, error in results if error)
    return ', '.join('%d %s' % (n, name) for name, n in counts.items())


def _sizes():
    select, echo = rig.message_sizes()
    return 'arguments: select_destinations %d bytes, echo %d bytes' % (
        select, echo)


def _claim_flush(options):
    """``[filter_scheduler] build_claim_flush`` as the daemons have it."""
    for section, option, value in options:
        if (section, option) == ('filter_scheduler', 'build_claim_flush'):
            return value
    from scheduler.conf import filter_scheduler
    [opt] = [opt for opt in filter_scheduler.filter_scheduler_opts
             if opt.name == 'build_claim_flush']
    return '%s (the default)' % opt.default


def latency(backend, hosts, calls, options=()):
    workdir = tempfile.mkdtemp(prefix='gantt-bench-rpc-')
    try:
        with rig.Rig(workdir, backend, hosts, options=options) as cloud:
            cloud.start_schedulers(1)
            cloud.start_echo()
            turns = cloud.run_in_turns(
                {'select': cloud.instances(calls), 'echo': calls,
                 'echo_commit': calls,
                 rig.CLAIM_KIND: cloud.instances(calls)},
                {'select': cloud.instances(WARMUP), 'echo': WARMUP,
                 'echo_commit': WARMUP,
                 rig.CLAIM_KIND: cloud.instances(WARMUP)})
            selects, echoes, commits, claims = (
                turns['select'], turns['echo'], turns['echo_commit'],
                turns[rig.CLAIM_KIND])
            stopped = cloud.stop_schedulers()
            status, _output = cloud.db_check()
            select_ms = [seconds * 1000 for seconds, _, _ in selects]
            echo_ms = [seconds * 1000 for seconds, _, _ in echoes]
            commit_ms = [seconds * 1000 for seconds, _, _ in commits]
            claim_ms = [seconds * 1000 for seconds, _, _ in claims]
            errors = _errors(selects + echoes + commits + claims)
            flush = _claim_flush(options)
            print('latency: %d hosts, %s, 1 caller, %d calls of each kind '
                  '(after %d warm-up calls), the kinds taking turns every '
                  '%d calls; %s' % (hosts, backend, calls, WARMUP,
                                    rig.TURN_BLOCK, _sizes()))
            rig.table([
                ('select_destinations p50 (ms) vs echo', rig.p50(select_ms),
                 rig.p50(echo_ms), '<= 1.5x'),
                ('select_destinations p99 (ms) vs echo',
                 rig.percentile(select_ms, 0.99),
                 rig.percentile(echo_ms, 0.99), '<= 2x'),
            ])
            print('  for reference, the echo committing one row first '
                  '(its commit waits for the disk): p50 %.2f ms (%.2fx '
                  'the echo); select_destinations p50 %.2fx that'
                  % (rig.p50(commit_ms),
                     rig.p50(commit_ms) / rig.p50(echo_ms),
                     rig.p50(select_ms) / rig.p50(commit_ms)))
            print('  for reference, the echo claiming first as the scheduler '
                  'claims (its SQL claim for a building instance on the '
                  'next node, under [filter_scheduler] build_claim_flush = '
                  '%s; three Selections; no host cache, filters or '
                  'weighers): p50 '
                  '%.2f ms (%.2fx the echo); select_destinations p50 %.2fx '
                  'that' % (flush, rig.p50(claim_ms),
                            rig.p50(claim_ms) / rig.p50(echo_ms),
                            rig.p50(select_ms) / rig.p50(claim_ms)))
            print('  %s; claim retries %d%s' % (
                _check(cloud, status), rig.Rig.claim_retries(stopped)[0],
                '; errors: ' + errors if errors else ''))
            print('  %s' % _ranked_ahead(stopped))
            sys.stdout.flush()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _grouped(stopped):
    batches = rig.Rig.counter(stopped, 'claim_batches')
    batched = rig.Rig.counter(stopped, 'claims_batched')
    return '%d claims sent in %d group commits' % (batched, batches)


def _ranked_ahead(stopped):
    """How many requests took a ranking made ahead of them, or patched
    the one the request before them left under load ([filter_scheduler]
    rank_ahead)."""
    return ('ranked ahead %d times (%d of them patched), used by %d of '
            '%d requests; %d patched the ranking left before them'
            % (rig.Rig.counter(stopped, 'ranked_ahead'),
               rig.Rig.counter(stopped, 'ranked_ahead_patched'),
               rig.Rig.counter(stopped, 'ranked_ahead_used'),
               rig.Rig.counter(stopped, 'requests'),
               rig.Rig.counter(stopped, 'rankings_reused')))


def _check(cloud, status):
    return 'db check %s, %d overfilled host(s)' % (
        'clean' if status == 0 else 'FAILED (exit %d)' % status,
        cloud.overfilled_hosts())


def throughput(backend, hosts, placements, callers, workers_list,
               processes, options=()):
    workdir = tempfile.mkdtemp(prefix='gantt-bench-rpc-')
    try:
        with rig.Rig(workdir, backend, hosts, options=options) as cloud:
            cloud.start_echo()
            rows, references, notes = [], [], []
            # {workers: [placements/s over echo calls/s of each row]}.
            by_count = collections.defaultdict(list)
            for workers in workers_list:
                cloud.start_schedulers(workers)
                done = {kind: _Tally() for kind in THROUGHPUT_KINDS}
                ratios = []
                for share in _shares(placements, ROUNDS):
                    # The kinds in turn, so that each sees what else the
                    # machine does at that time.
                    for kind in THROUGHPUT_KINDS:
                        if kind in ('select', rig.CLAIM_KIND):
                            work = cloud.instances(share)
                            warm = cloud.instances(callers * 4)
                        else:
                            work, warm = share, callers * 4
                        elapsed, answers = cloud.run_callers(
                            kind, callers, work, processes=processes,
                            warmup=warm)
                        done[kind].add(elapsed, answers, cloud.cpu)
                    ratios.append(done['select'].last_rate
                                  / done['echo'].last_rate)
                echo, commit, claim, select = (done[kind]
                                               for kind in THROUGHPUT_KINDS)
                rows.append(('placements/s vs echo calls/s, %d worker(s)'
                             % workers, select.rate, echo.rate, '>= 0.9x'))
                by_count[workers].append(select.rate / echo.rate)
                references.append((
                    'the echo committing a row first, %d worker(s)'
                    % workers, commit.rate, echo.rate,
                    'the floor of a durable answer'))
                references.append((
                    'placements/s vs that, %d worker(s)' % workers,
                    select.rate, commit.rate, '-'))
                references.append((
                    'the echo claiming first, %d worker(s)' % workers,
                    claim.rate, echo.rate, 'the floor of a claim'))
                references.append((
                    'placements/s vs that, %d worker(s)' % workers,
                    select.rate, claim.rate, '-'))
                stopped = cloud.stop_schedulers()
                status, _output = cloud.db_check()
                errors = _errors(select.answers + echo.answers
                                 + commit.answers + claim.answers)
                notes.append('%d worker(s): %d placed of %d, %s, claim '
                             'retries %d; ratio per round %s%s; %s; %s' % (
                                 workers, select.calls, len(select.answers),
                                 _check(cloud, status),
                                 rig.Rig.claim_retries(stopped)[0],
                                 ' '.join('%.2fx' % r for r in ratios),
                                 '; errors: ' + errors if errors else '',
                                 _ranked_ahead(stopped), _grouped(stopped)))
                notes.append('%d worker(s), CPU ms per call: echo %s; '
                             'echo committing a row %s; echo claiming %s; '
                             'placement %s' % (
                                 workers, echo.per_call('echo'),
                                 commit.per_call('echo'),
                                 claim.per_call('echo'),
                                 select.per_call('scheduler')))
            print('throughput: %d hosts, %s, %d concurrent callers in %d '
                  'processes, %d calls of each kind per row; %s'
                  % (hosts, backend, callers, min(callers, processes),
                     placements, _sizes()))
            rig.table(rows + references)
            for before, after in zip(rows, rows[1:]):
                print('  ' + _worker_pair_line(before, after))
            if len(by_count) > 1:
                print('  ' + _default_workers_note(by_count))
            for note in notes:
                print('  ' + note)
            sys.stdout.flush()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _worker_pair_line(before, after):
    """One row of placements (``(name, placements/s, echo calls/s,
    target)``) against the row before it: their placements per second,
    and the same against each row's own echo (the rows run minutes
    apart, and the machine's speed moves between them: the echo's rate
    with it)."""
    return ('placements/s, %s against %s: %.2fx; against each row\'s own '
            'echo: %.2fx (target: >= 1x)' % (
                after[0].rsplit(', ', 1)[1], before[0].rsplit(', ', 1)[1],
                after[1] / before[1],
                (after[1] / after[2]) / (before[1] / before[2])))


def _default_workers_note(by_count):
    """What ``[scheduler] workers`` unset runs on this machine, beside the
    count whose rows (``by_count``: ``{workers: [placements/s over echo
    calls/s]}``) placed most against the echo's calls in this run."""
    from scheduler.cmd import scheduler as scheduler_cmd
    means = {count: sum(ratios) / len(ratios)
             for count, ratios in by_count.items()}
    best = max(means, key=means.get)
    cpus = scheduler_cmd.usable_cpus()
    return ("the daemon's default here (workers unset, %d usable CPUs): %d "
            "worker(s); the count that placed most against the echo in "
            "this run: %d worker(s) (%s)" % (
                cpus, scheduler_cmd.default_workers(cpus), best,
                ', '.join('%d: %.2fx' % (count, means[count])
                          for count in sorted(means))))


# The kinds of call the throughput rounds make in turn.
THROUGHPUT_KINDS = ('echo', 'echo_commit', rig.CLAIM_KIND, 'select')
# The parts of a call's CPU, in the order printed (the server: the echo's
# or the scheduler's; the broker and the database are machine-wide).
CPU_PARTS = ('server', 'broker', 'database', 'callers')


class _Tally:
    """The answered calls of one kind over the rounds, their time, and
    the CPU each part of the machine spent on them."""

    def __init__(self):
        self.calls = 0
        self.seconds = 0.0
        self.answers = []
        self.cpu = {}
        self.last_rate = 0.0

    def add(self, elapsed, answers, cpu):
        answered = len(answers) - len(_failed(answers))
        self.calls += answered
        self.seconds += elapsed
        self.answers += answers
        self.last_rate = answered / elapsed
        for part, seconds in cpu.items():
            self.cpu[part] = self.cpu.get(part, 0.0) + seconds

    @property
    def rate(self):
        return self.calls / self.seconds if self.seconds else 0.0

    def per_call(self, server):
        """What each part of the machine spent per call, in ms
        (``server``: the part that answered)."""
        spent = dict(self.cpu, server=self.cpu.get(server, 0.0))
        calls = max(self.calls, 1)
        return '%s, all %.2f' % (', '.join(
            '%s %.2f' % (part, 1000 * spent.get(part, 0.0) / calls)
            for part in CPU_PARTS), 1000 * sum(
                spent.get(part, 0.0) for part in CPU_PARTS) / calls)


def _shares(total, parts):
    """``total`` split into ``parts`` near-equal counts."""
    return [total // parts + (index < total % parts)
            for index in range(parts)]


def _failed(results):
    return [error for _, _, error in results if error]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--db', choices=['postgresql', 'mariadb'],
                        default='postgresql')
    parser.add_argument('--latency-hosts', type=int, default=10000)
    parser.add_argument('--calls', type=int, default=300)
    parser.add_argument('--throughput-hosts', type=int, default=5000)
    parser.add_argument('--placements', type=int, default=3000)
    parser.add_argument('--callers', type=int, default=16)
    parser.add_argument('--workers', type=int, nargs='+', default=[1],
                        help='scheduler worker processes, one throughput '
                        'row each')
    parser.add_argument('--caller-processes', type=int,
                        default=rig.CALLER_PROCESSES,
                        help='processes the concurrent callers are spread '
                        'over (threads in each)')
    parser.add_argument('--skip', choices=['latency', 'throughput'])
    parser.add_argument('--set', dest='options', action='append',
                        type=rig.parse_option, default=[],
                        metavar='SECTION.OPTION=VALUE',
                        help='an option for the scheduler daemons, on top '
                        'of the benchmark\'s (repeatable), e.g. '
                        'filter_scheduler.rank_ahead=false')
    args = parser.parse_args(argv)
    if args.options:
        print('daemon options: %s' % ', '.join(
            '%s.%s=%s' % option for option in args.options))
    if args.skip != 'latency':
        latency(args.db, args.latency_hosts, args.calls, args.options)
    if args.skip != 'throughput':
        throughput(args.db, args.throughput_hosts, args.placements,
                   args.callers, args.workers, args.caller_processes,
                   args.options)


if __name__ == '__main__':
    started = time.monotonic()
    main()
    print('(%.0f s)' % (time.monotonic() - started))
