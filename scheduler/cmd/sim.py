"""gantt-sim: replay a cloud's workload through the real scheduler.

Writes a cloud (``--cloud`` TOML file, or the built-in one scaled to
``--hosts``) into a scratch database, replays a workload (generated from
``--seed``, or a ``--trace`` CSV) through the real filter scheduler with
a simulated clock (see :mod:`scheduler.sim.engine`), prints a summary and
draws PNGs into ``--output``::

    gantt-sim                                   # 500 hosts, seed 1
    gantt-sim --hosts 10000 --config-file etc/gantt-sim/pack.conf
    gantt-sim --compare etc/gantt-sim/spread.conf etc/gantt-sim/pack.conf
    gantt-sim --cloud etc/gantt-sim/numa-cloud.toml \
        --config-file etc/gantt-sim/numa.conf
    gantt-sim --cloud etc/gantt-sim/traits-cloud.toml --hours 12
    gantt-sim --trace vms.csv --cloud cloud.toml --callers 16 --workers 4

Scheduler options come from nova.conf-style files, read with oslo.config
as the daemons read theirs (``[filter_scheduler]
ram_weight_multiplier``, ``host_subset_size``, ``enabled_filters``...).
The cloud is written to a database and the host caches load it from
there, as a scheduler's do; the claims are then made in memory, with
the SQL claim's checks (:mod:`scheduler.sim.memory_claims`), so that a
decision costs what the driver costs in process: the default run (two
simulated days of 500 hosts) takes about 8 seconds, pictures included,
two days of 10,000 hosts about 3.5 minutes; the summary says the wall
time per simulated day. ``--sql-claims`` makes the real SQL claims and
node re-reads instead (about four times slower; clouds with NUMA cells,
PCI devices or other resource classes always do). By default the
database is a SQLite file in a temporary directory, run with
``synchronous=OFF`` (the SQL claims are the real statements, without
the disk flush); ``--database-url`` names an empty database of another
server instead (with the SQL claims), whose tables are dropped at the
end. The scratch database goes when the run ends, fails or is
interrupted (Ctrl-C: exit code 130).

Bad input (a cloud file's key, a trace's row and field, a configuration
file's option) is one line on stderr and exit code 2, before anything
is written.
"""

import argparse
import importlib.util
import multiprocessing
from multiprocessing import connection as mp_connection
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback

from oslo_config import cfg
import sqlalchemy as sa

from scheduler import conf
from scheduler.cmd import deferred_signal
from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler.db import models
from scheduler import objects
from scheduler.sim import cloud as sim_cloud
from scheduler.sim import engine
from scheduler.sim import metrics
from scheduler.sim import plots
from scheduler.sim import workload

CONF = conf.CONF
# Groups whose options a configuration file given to the simulator may
# set, checked before the run.
CHECKED_GROUPS = ('filter_scheduler', 'scheduler', 'metrics')
# Hosts of the built-in cloud: a default run takes about 8 seconds.
DEFAULT_HOSTS = 500


class InputError(Exception):
    """Bad input: printed as one line, exit code 2."""


def _parser():
    parser = argparse.ArgumentParser(
        prog='gantt-sim', description=__doc__.splitlines()[0])
    add = parser.add_argument
    add('--cloud', help='cloud TOML file (default: the built-in cloud)')
    add('--hosts', type=int, help='scale the cloud to this many hosts '
        '(default: %d for the built-in cloud, the file\'s count)'
        % DEFAULT_HOSTS)
    add('--trace', help='CSV trace, one row per VM (default: generated)')
    add('--seed', type=int, default=1)
    add('--hours', type=float, default=workload.Generator.hours,
        help='generated workload: simulated hours')
    add('--fill', type=float, default=workload.Generator.fill,
        help='generated workload: instances asked for in all, as a '
        "multiple of the cloud's RAM in average flavors")
    add('--lifetime-median', type=float,
        default=workload.Generator.lifetime_median, help='hours')
    add('--lifetime-sigma', type=float,
        default=workload.Generator.lifetime_sigma)
    add('--config-file', help='scheduler options (nova.conf style)')
    add('--compare', nargs=2, metavar=('A.conf', 'B.conf'),
        help='run the same workload under two configurations')
    add('--jobs', type=int, help='runs of --compare at once, each in a '
        'process of its own (default: one per CPU this process may use; '
        '1: one after the other; always 1 with --database-url, whose '
        'tables the runs would share)')
    add('--callers', type=int, default=1)
    add('--workers', type=int, default=1)
    add('--database-url', help='an empty database (default: SQLite '
        'file); implies --sql-claims')
    add('--sql-claims', action='store_true',
        help='claim in SQL, as the scheduler daemon does (default: in '
        'memory, with the same checks, where the cloud allows)')
    add('--output', default='gantt-sim-output',
        help='directory of the PNGs')
    add('--no-plots', action='store_true')
    return parser


def _configure(path):
    """Parse ``path`` (or nothing) into CONF; InputError if wrong."""
    files = [path] if path else []
    if path and not os.path.isfile(path):
        raise InputError('%s: no such configuration file' % path)
    try:
        CONF(args=[], project='gantt', default_config_files=files)
        for group in CHECKED_GROUPS:
            for name in CONF[group]:
                CONF[group][name]
    except (cfg.Error, ValueError) as error:
        raise InputError('%s: %s' % (path, error))


def _inputs(args):
    """The cloud, the requests and the runs ``[(label, conf path)]``."""
    if args.hosts is not None and args.hosts < 1:
        raise InputError('--hosts: must be at least 1')
    if args.callers < 1 or args.workers < 1:
        raise InputError('--callers and --workers: must be at least 1')
    if args.jobs is not None and args.jobs < 1:
        raise InputError('--jobs: must be at least 1')
    if args.jobs and args.jobs > 1 and args.database_url:
        raise InputError('--jobs: the runs of --database-url share its '
                         'tables; they run one after the other')
    if not args.no_plots and importlib.util.find_spec('matplotlib') is None:
        # Said now, not after the replay.
        raise InputError("the pictures need matplotlib (pip install "
                         "'gantt[sim]'), or give --no-plots")
    try:
        if args.cloud:
            cloud = sim_cloud.load_cloud(args.cloud)
            if args.hosts:
                cloud = cloud.scaled(args.hosts)
        else:
            cloud = sim_cloud.default_cloud(args.hosts or DEFAULT_HOSTS)
    except sim_cloud.CloudError as error:
        raise InputError(str(error))
    try:
        if args.trace:
            requests = workload.read_csv(args.trace, cloud)
        else:
            requests = workload.generate(cloud, workload.Generator(
                fill=args.fill, hours=args.hours,
                lifetime_median=args.lifetime_median,
                lifetime_sigma=args.lifetime_sigma), args.seed)
    except workload.WorkloadError as error:
        raise InputError('%s: %s' % (args.trace, error) if args.trace
                         else str(error))
    if args.compare:
        runs = [(_label(path), path) for path in args.compare]
    else:
        runs = [(_label(args.config_file), args.config_file)]
    for _label_, path in runs:
        _configure(path)
        _use_cloud_aliases(cloud)
        try:
            sim_cloud.check_extra_specs(cloud)
        except sim_cloud.CloudError as error:
            raise InputError('%s: %s' % (args.cloud or 'cloud', error))
        finally:
            CONF.clear_override('alias', group='pci')
    return cloud, requests, runs


def _use_cloud_aliases(cloud):
    """The cloud file's ``[pci] alias``, if it has one, over the
    configuration's."""
    if cloud.pci_aliases:
        CONF.set_override('alias', list(cloud.pci_aliases), group='pci')


def _label(path):
    if not path:
        return 'defaults'
    return os.path.splitext(os.path.basename(path))[0]


def _fast_sqlite(engine_, connection_record=None):
    cursor = engine_.cursor()
    cursor.execute('PRAGMA synchronous=OFF')
    cursor.close()


def _open_database(url, workdir):
    CONF.set_override('connection', url or 'sqlite:///%s/sim.sqlite'
                      % workdir, group='database')
    db_api.dispose_engine()
    engine_ = db_api.get_engine()
    if engine_.dialect.name == 'sqlite':
        sa.event.listen(engine_, 'connect', _fast_sqlite)
        engine_.dispose()
    migration.db_sync()


def _drop_tables():
    engine_ = db_api.get_engine()
    models.Base.metadata.drop_all(engine_)
    with engine_.begin() as connection:
        connection.execute(sa.text('DROP TABLE IF EXISTS alembic_version'))
    db_api.dispose_engine()


def _keyboard_interrupt(signum):
    raise KeyboardInterrupt()


class CtrlC(deferred_signal.Deferred):
    """The SIGINT handler of the runs: the first Ctrl-C is noted, and the
    run stops at its next :meth:`check` (between two phases of the set-up,
    between two decisions of the replay), never inside a transaction or
    a callback. A KeyboardInterrupt raised wherever the signal lands was
    lost in a garbage-collector callback ("Exception ignored"), or cut a
    claim's transaction short so that SQLite stayed locked for the
    release after it: either way the run did not end. A second Ctrl-C
    raises at once."""

    def __init__(self):
        super().__init__(_keyboard_interrupt)

    @property
    def pressed(self):
        return self.noted


def run_once(cloud, requests, path, args, ctrl_c=None, scratch=None):
    """One run under the configuration file ``path``: a Result. With
    ``ctrl_c`` (a :class:`CtrlC` handling SIGINT) an interrupt ends the
    run between two phases or two decisions. ``scratch``: the directory
    its scratch database's directory is made in (default: the system's
    temporary directory)."""
    ctrl_c = ctrl_c or CtrlC()
    started = time.perf_counter()
    _configure(path)
    _use_cloud_aliases(cloud)
    workdir = tempfile.mkdtemp(prefix='gantt-sim-', dir=scratch)
    try:
        _open_database(args.database_url, workdir)
        ctrl_c.check()
        sim_cloud.populate(cloud, random.Random(args.seed))
        ctrl_c.check()
        simulation = engine.Simulation(cloud, requests, seed=args.seed,
                                       callers=args.callers,
                                       workers=args.workers,
                                       checkpoint=ctrl_c.check,
                                       sql_claims=bool(
                                           args.sql_claims
                                           or args.database_url))
        result = simulation.run()
        result.setup_seconds = (time.perf_counter() - started
                                - result.wall_seconds)
        return result
    finally:
        # Normal end, error or Ctrl-C: the scratch database goes.
        CONF.clear_override('alias', group='pci')
        if args.database_url:
            try:
                _drop_tables()
            except sa.exc.SQLAlchemyError as error:
                # Not to hide the error that brought us here, if any.
                sys.stderr.write('gantt-sim: could not drop the tables of '
                                 '--database-url: %s\n'
                                 % str(error).splitlines()[0])
        db_api.dispose_engine()
        shutil.rmtree(workdir, ignore_errors=True)


def _usable_cpus():
    # Imported here: the daemon's command, for its count alone.
    from scheduler.cmd import scheduler as scheduler_cmd
    return scheduler_cmd.usable_cpus()


def _may_fork():
    """A fork copies this thread only: a lock another thread held would
    stay held in the child."""
    return threading.active_count() == 1


def _jobs(args, runs):
    """How many of ``runs`` to make at once (see ``--jobs``)."""
    if len(runs) < 2 or args.database_url or not _may_fork():
        return 1
    jobs = args.jobs if args.jobs is not None else _usable_cpus()
    return min(jobs, len(runs))


def _plotter(args):
    """A :class:`plots.Plotter` forked now, or None: no pictures asked
    for, one CPU, or another thread running (then they are drawn here,
    after the runs)."""
    if args.no_plots or not _may_fork() or _usable_cpus() < 2:
        return None
    return plots.Plotter(args.output)


class _StoppedByParent(CtrlC):
    """A parallel run's SIGINT handler: also stops, at the same checks,
    when the parent sets ``stop`` (a Ctrl-C it noted, or another run's
    failure) or is gone (killed), so that the run removes its scratch
    database itself."""

    def __init__(self, stop):
        super().__init__()
        self._stop = stop
        self._parent = os.getppid()

    @property
    def orphaned(self):
        return os.getppid() != self._parent

    def check(self):
        super().check()
        if self._stop.is_set() or self.orphaned:
            raise KeyboardInterrupt()


def _run_in_child(pipe, stop, cloud, requests, path, args, scratch):
    """A forked process's run: ``('result', Result)``, ``('interrupted',
    None)`` or ``('error', traceback text)`` into ``pipe``."""
    db_api.forget_engines_after_fork()
    ctrl_c = _StoppedByParent(stop)
    signal.signal(signal.SIGINT, ctrl_c)
    try:
        answer = ('result', run_once(cloud, requests, path, args, ctrl_c,
                                     scratch))
    except KeyboardInterrupt:
        answer = ('interrupted', None)
    except Exception as error:
        answer = (('interrupted', None) if _interrupted(error)
                  else ('error', traceback.format_exc()))
    if ctrl_c.orphaned:
        # Nobody reads: the parent's directory goes with the last run.
        try:
            os.rmdir(scratch)
        except OSError:
            pass
        return
    try:
        pipe.send(answer)
    except BrokenPipeError:
        # The parent went after the check above: nobody reads.
        pass
    pipe.close()


class RunFailed(Exception):
    """A run made in a process of its own failed (its traceback in the
    message), or ended without an answer."""


def _answer(process, receive):
    """What the run of ``process`` sent into ``receive`` (see
    :func:`_run_in_child`), once it ended."""
    try:
        answer = receive.recv()
    except EOFError:
        process.join()
        answer = ('error', 'it ended without an answer (exit code %s)'
                  % process.exitcode)
    receive.close()
    process.join()
    return answer


def _runs_in_parallel(cloud, requests, runs, args, ctrl_c, jobs):
    """Make ``runs`` (``[(label, path)]``) ``jobs`` at a time, each in a
    forked process; yield ``(label, Result)`` in the order of ``runs``.

    Each run has its own scratch SQLite database, and the same seed: the
    same decisions as one after the other. A Ctrl-C (to the terminal's
    process group, or to this process alone) stops every run at its next
    check; a failed run stops the others; every scratch database goes.
    Raises KeyboardInterrupt or :class:`RunFailed` after the runs ended.
    """
    context = multiprocessing.get_context('fork')
    stop = context.Event()
    scratch = tempfile.mkdtemp(prefix='gantt-sim-runs-')
    pending = list(runs)
    # (label, process, receiving end of its pipe) of the runs under way,
    # in the order of runs; the answers come in, by receiving end.
    started = []
    answers = {}
    try:
        while pending or started:
            while pending and len(started) < jobs:
                label, path = pending.pop(0)
                # Whatever is buffered would be written again by the
                # child as it exits.
                sys.stdout.flush()
                sys.stderr.flush()
                receive, send = context.Pipe(duplex=False)
                process = context.Process(
                    target=_run_in_child, name='gantt-sim %s' % label,
                    args=(send, stop, cloud, requests, path, args, scratch))
                process.start()
                send.close()
                started.append((label, process, receive))
            label, _process, first = started[0]
            while first not in answers:
                if ctrl_c.pressed:
                    stop.set()
                waiting = {receive: (label, process)
                           for label, process, receive in started
                           if receive not in answers}
                # Readable: an answer, or the end of a run killed
                # before it answered (that one fails the command now,
                # not when the runs before it are done).
                for ready in mp_connection.wait(list(waiting), 0.1):
                    ready_label, ready_process = waiting[ready]
                    kind, value = answers[ready] = _answer(ready_process,
                                                           ready)
                    if kind == 'interrupted':
                        raise KeyboardInterrupt()
                    if kind == 'error':
                        raise RunFailed('the run %s failed: %s'
                                        % (ready_label, value))
            started.pop(0)
            yield label, answers.pop(first)[1]
    finally:
        stop.set()
        for _label, process, receive in started:
            process.join()
            receive.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _interrupted(error):
    """True if ``error`` was raised while a Ctrl-C unwound the run (a
    database transaction interrupted mid-statement fails its rollback
    with an error of its own, the KeyboardInterrupt as its context)."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _say_interrupted():
    sys.stderr.write('gantt-sim: interrupted; the scratch database is '
                     'removed\n')
    return 130


def main(argv=None):
    started = time.perf_counter()
    args = _parser().parse_args(argv)
    objects.register_all()
    try:
        cloud, requests, runs = _inputs(args)
    except InputError as error:
        sys.stderr.write('gantt-sim: error: %s\n' % error)
        return 2
    print('%d hosts, %d requests (%s)' % (
        cloud.host_count, len(requests),
        args.trace or 'generated, seed %d' % args.seed))
    plotter = _plotter(args)
    try:
        return _run_and_draw(started, args, cloud, requests, runs, plotter)
    finally:
        if plotter is not None:
            plotter.close()


def _run_and_draw(started, args, cloud, requests, runs, plotter):
    results = []
    ctrl_c = CtrlC()
    previous = signal.signal(signal.SIGINT, ctrl_c)
    jobs = _jobs(args, runs)
    if jobs > 1:
        print('%d runs at once, each in a process of its own (--jobs 1: '
              'one after the other)' % jobs)
        made = _runs_in_parallel(cloud, requests, runs, args, ctrl_c, jobs)
    else:
        made = ((label, run_once(cloud, requests, path, args, ctrl_c))
                for label, path in runs)
    try:
        try:
            for label, result in made:
                ctrl_c.check()
                results.append((label, result))
                print(metrics.summary(result, label))
                sys.stdout.flush()
        finally:
            # The runs still going stop and remove their scratch
            # databases before anything is said.
            made.close()
            signal.signal(signal.SIGINT, previous)
    except RunFailed as error:
        sys.stderr.write('gantt-sim: %s\n' % error)
        return 1
    except Exception as error:
        if not _interrupted(error):
            raise
        return _say_interrupted()
    except KeyboardInterrupt:
        return _say_interrupted()
    if not args.no_plots:
        try:
            written = (plotter.draw(results) if plotter is not None
                       else plots.draw_all(args.output, results))
        except plots.PlotsFailed as error:
            sys.stderr.write('gantt-sim: %s\n' % error)
            return 1
        for path in written:
            print('wrote %s' % path)
    print(_total(time.perf_counter() - started, results,
                 not args.no_plots))
    return 0


def _total(seconds, results, plotted):
    """The line that says what the whole command cost, per simulated
    day (of all its runs together)."""
    days = sum(result.horizon for _label, result in results) / metrics.DAY
    return ('gantt-sim: %.1f s of wall time in all (%d run(s)%s), %.1f s '
            'per simulated day' % (seconds, len(results),
                                   ', plots included' if plotted else '',
                                   seconds / days if days else 0.0))


if __name__ == '__main__':
    sys.exit(main())
