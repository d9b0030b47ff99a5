"""gantt-sim's own speed (issue 53): each figure beside its target.

Runs the ``gantt-sim`` command as a user does (a fresh interpreter, its
imports, the cloud written, the replay, the plots), timing each from
outside, and reads the decision latency and the wall time per simulated
day from what it prints::

    python benchmarks/sim.py                   # all three, this tree
    python benchmarks/sim.py --skip-10k        # the two quick ones
    python benchmarks/sim.py --source /other/checkout --sql-claims

``--source`` runs another checkout's simulator (its directory goes
first on PYTHONPATH: the figures before a change); ``--sql-claims`` asks
for the SQL claims (a checkout without the option has only those).

The three runs and their targets:

* the default run (500 hosts, 48 simulated hours, seed 1), plots
  included: 10 s of wall time;
* ``--compare`` spread against pack on it, plots included: 20 s;
* 10,000 hosts under pack (``--config-file etc/gantt-sim/pack.conf
  --hosts 10000``: 144,535 requests over 48 simulated hours), no plots:
  120 s; its decisions p50 <= 0.5 ms, p99 <= 3 x p50.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATENCY = re.compile(r'decision latency: p50 ([\d.]+) ms, p99 ([\d.]+) ms')
PER_DAY = re.compile(r'([\d.]+) s per simulated day')
BY_COUNT = re.compile(r'one-instance request\(s\): p50 ([\d.]+) ms, p99 '
                      r'([\d.]+) ms; \d+ of several instances: p50 '
                      r'([\d.]+) ms, p99 ([\d.]+) ms')
SIMULATED = re.compile(r'simulated ([\d.]+) h in ([\d.]+) s of replay')


def run(source, argv, sql_claims):
    """``(wall seconds, stdout)`` of one gantt-sim command."""
    env = dict(os.environ, PYTHONPATH=source)
    command = [sys.executable, '-m', 'scheduler.cmd.sim'] + argv
    if sql_claims:
        command.append('--sql-claims')
    started = time.perf_counter()
    # In the source's directory: ``-m`` puts the working directory first
    # on sys.path, and the example configurations are read from there.
    done = subprocess.run(command, cwd=source, env=env,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode:
        sys.exit('%s failed (%d):\n%s' % (' '.join(argv), done.returncode,
                                          done.stderr[-2000:]))
    return wall, done.stdout


def verdict(value, target):
    return 'met' if value <= target else 'NOT met'


def report(name, wall, target, out):
    print('%-34s wall %6.1f s   target <= %5.0f s  %s'
          % (name, wall, target, verdict(wall, target)))
    hours = sum(float(h) for h, _s in SIMULATED.findall(out))
    if hours:
        print('%-34s %6.1f s of wall time per simulated day (measured '
              'outside; the summary says %s)'
              % ('', wall / (hours / 24.0),
                 ', '.join(PER_DAY.findall(out)) or 'nothing'))
    for p50, p99 in LATENCY.findall(out):
        print('%-34s decisions p50 %s ms, p99 %s ms' % ('', p50, p99))
    for figures in BY_COUNT.findall(out):
        print('%-34s one instance p50 %s ms, p99 %s ms; several p50 %s '
              'ms, p99 %s ms' % (('',) + figures))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--source', default=ROOT,
                        help='the checkout whose simulator runs')
    parser.add_argument('--sql-claims', action='store_true')
    parser.add_argument('--skip-10k', action='store_true')
    args = parser.parse_args()
    output = tempfile.mkdtemp(prefix='gantt-sim-bench-')
    print('source %s%s' % (args.source,
                           ', SQL claims' if args.sql_claims else ''))
    wall, out = run(args.source, ['--output', output + '/default'],
                    args.sql_claims)
    report('default (500 hosts, plots)', wall, 10, out)
    wall, out = run(args.source, [
        '--output', output + '/compare', '--compare',
        'etc/gantt-sim/spread.conf', 'etc/gantt-sim/pack.conf'],
        args.sql_claims)
    report('--compare spread pack (plots)', wall, 20, out)
    if args.skip_10k:
        return
    wall, out = run(args.source, [
        '--no-plots', '--hosts', '10000', '--config-file',
        'etc/gantt-sim/pack.conf'], args.sql_claims)
    report('10,000 hosts, pack (no plots)', wall, 120, out)
    found = LATENCY.findall(out)
    if found:
        p50, p99 = (float(value) for value in found[0])
        print('%-34s p50 %.2f ms target <= 0.5 ms %s; p99 %.2f ms = %.1f '
              'x p50, target <= 3 x %s'
              % ('', p50, verdict(p50, 0.5), p99, p99 / p50,
                 verdict(p99, 3 * p50)))


if __name__ == '__main__':
    main()
