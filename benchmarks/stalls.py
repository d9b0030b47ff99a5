"""Stalls: the tail of requests while the host cache reads everything.

Issue 53's "no stalls": against a database of its own on the local
PostgreSQL holding N compute nodes with live services (100,000 by
default), one scheduler process's FilterScheduler serves requests back
to back for ``--seconds``, as ``gantt-scheduler`` runs it (each full
read of the host cache ends with a pass of the garbage collector and a
freeze: ``host_cache.freeze_collector``; the interpreter's switch
interval is the daemon's, ``host_cache.shorten_switch_interval``), while:

* another process writes the computes' heartbeats at the rate N
  computes send them (one each every ``[DEFAULT] report_interval``
  seconds: 10,000/s at 100,000 hosts), as the conductor's batcher
  writes heartbeats that arrive steadily: each write takes those that
  arrived during the one before, up to its ``MAX_BATCH`` (with
  ``--heartbeat-pacing tick``, a batch every 0.1 s instead: larger,
  rarer writes, as this benchmark wrote them until session 59);
* the background refresh runs at ``[scheduler]
  host_state_refresh_interval``, and a full read every
  ``--full-read-interval`` seconds (300 in the service; shortened here
  so that several happen within the run).

Printed: select (filter+weigh) and claim p50 and p99 and their ratios
beside the target (p99 at most 3x p50), and for reference those of a
one-row UPDATE and COMMIT on the same database, timed after every fifth
request (``commit floor``: the disk's commit tail, which a claim's
commit shares), the full reads that happened within the measured run,
and the refresh durations (incremental p50 and max, each full read),
with the refresh thread's CPU time in them. ``--stalls`` also prints
the longest pauses a thread that sleeps 1 ms saw, with where the
refresh thread was then (a hint of what held the interpreter), and the
garbage collector's passes that took over 5 ms (each holds the
interpreter). ``--split`` also prints where the claims' time went: the
wait for the host manager's lock, the rest of ``consume`` and
``settle`` (the reservation in the host cache and its settling), the
SQL claim (``claimer.claim``), over all claims and over the slowest 1%,
the claims made while a refresh ran apart from the others (and those
made during a full read), and the claims made while the heartbeat
writer was in a write (its transaction's span overlapping the
request's) apart from those made between its writes.
``--switch-interval 0.005`` runs with CPython's switch interval instead
of the daemon's shorter one (``host_cache.switching``).

``--flip-liveness SECONDS`` measures the other stall of issue 53: every
SECONDS, every compute's service changes liveness at once (its last
heartbeat is made an hour old, as when the heartbeats stop for longer
than ``[DEFAULT] service_down_time`` in a database or broker outage;
then it is made now, as when they come back), so that one incremental
refresh takes every host's new service. No heartbeat writer runs then.
It prints how long the refresh held the manager's lock at the most,
and the longest select and claim::

    python benchmarks/stalls.py --hosts 100000 --seconds 60 --split
    python benchmarks/stalls.py --hosts 100000 --seconds 30 \
        --flip-liveness 5 --full-read-interval 600
"""

import argparse
import bisect
import datetime
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import traceback
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import host_cache as host_cache_bench  # noqa: E402
import rig  # noqa: E402
import select_destinations  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from conductor import heartbeats  # noqa: E402
from scheduler import conf  # noqa: E402
from scheduler.db import api as db_api  # noqa: E402
from scheduler.db import migration  # noqa: E402
from scheduler.db import models  # noqa: E402
from scheduler.db import services as db_services  # noqa: E402
from scheduler.drivers import filter_scheduler  # noqa: E402
from scheduler import exception  # noqa: E402
from scheduler import host_cache  # noqa: E402
from scheduler import objects  # noqa: E402
from scheduler.sim import metrics  # noqa: E402

CONF = conf.CONF
# Issue 53: each p99 at most this many times its p50.
TARGET_RATIO = 3.0
# How often the heartbeat writer writes a batch (s).
HEARTBEAT_TICK = 0.1


def write_heartbeats(url, hosts, rate, seconds, pacing='batcher'):
    """The heartbeat writer's process: ``rate`` heartbeats a second,
    round the hosts in turn, for ``seconds``; prints how many it wrote
    and how many writes fell behind, then a line of its writes' wall
    clock times (start and end of each transaction, ``time.time()``).

    ``pacing``: ``batcher``, as the conductor's
    :class:`conductor.heartbeats.HeartbeatBatcher` writes heartbeats
    arriving steadily (each write takes every heartbeat that arrived
    while the one before ran, up to its ``MAX_BATCH``; a write falls
    behind when more than that wait); ``tick``, a batch of ``rate``
    times :data:`HEARTBEAT_TICK` every :data:`HEARTBEAT_TICK` seconds
    (larger and rarer writes than the batcher's; a tick falls behind
    when its write ends after the next tick)."""
    CONF([], project='gantt')
    CONF.set_override('connection', url, group='database')
    names = ['compute-%06d' % number for number in range(hosts)]
    written = late = at = 0
    writes = []
    started = time.monotonic()
    tick = started
    while time.monotonic() - started < seconds:
        if pacing == 'tick':
            count = max(1, int(rate * HEARTBEAT_TICK))
        else:
            count = int(rate * (time.monotonic() - started)) - written
            if count <= 0:
                time.sleep(max(0.0, (written + 1) / rate
                               - (time.monotonic() - started)))
                continue
            if count > heartbeats.MAX_BATCH:
                late += 1
                count = heartbeats.MAX_BATCH
        batch = [names[(at + offset) % hosts] for offset in range(count)]
        at = (at + count) % hosts
        began = time.time()
        with db_api.writer() as session:
            db_services.heartbeat_many(session, 'gantt-compute', 'compute',
                                       batch)
        written += len(batch)
        writes.append((began, time.time()))
        if pacing == 'tick':
            tick += HEARTBEAT_TICK
            pause = tick - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            else:
                late += 1
    elapsed = time.monotonic() - started
    print('%d %.3f %d' % (written, elapsed, late))
    print(json.dumps(writes), flush=True)


def start_heartbeats(url, hosts, rate, seconds, pacing):
    return subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), '--heartbeat-writer',
         url, str(hosts), str(rate), str(seconds), pacing],
        stdout=subprocess.PIPE, text=True, env=dict(
            os.environ, PYTHONPATH=os.pathsep.join(
                filter(None, [ROOT, os.environ.get('PYTHONPATH')]))))


class LivenessFlipper(threading.Thread):
    """Every ``interval`` seconds, every compute service dies at once
    (last heartbeat an hour ago), then comes back at once (now); counts
    the flips."""

    def __init__(self, interval):
        super().__init__(daemon=True, name='liveness-flipper')
        self.interval = interval
        self.flips = 0
        self.stop = threading.Event()

    def run(self):
        services = models.Service.__table__
        dead = True
        while not self.stop.wait(self.interval):
            heartbeat = models.utcnow()
            if dead:
                heartbeat -= datetime.timedelta(hours=1)
            with db_api.writer() as session:
                session.execute(
                    sa.update(services)
                    .where(services.c.binary == 'gantt-compute')
                    .values(last_seen_up=heartbeat))
            self.flips += 1
            dead = not dead


class RefreshLog:
    """The duration of each refresh of ``manager``, and whether it was a
    full read (the manager's ``refresh`` wrapped on the instance)."""

    def __init__(self, manager):
        self.manager = manager
        self.incremental, self.full = [], []
        # The refresh thread's CPU time of each (ms).
        self.incremental_cpu, self.full_cpu = [], []
        self.thread = None
        inner = manager.refresh

        def refresh(full=False):
            self.thread = threading.current_thread()
            before = manager.stats['full_reads']
            started = time.perf_counter()
            cpu = time.thread_time()
            try:
                return inner(full=full)
            finally:
                elapsed = (time.perf_counter() - started) * 1000
                cpu = (time.thread_time() - cpu) * 1000
                if manager.stats['full_reads'] > before:
                    self.full.append(elapsed)
                    self.full_cpu.append(cpu)
                else:
                    self.incremental.append(elapsed)
                    self.incremental_cpu.append(cpu)
        manager.refresh = refresh


class StallWatch(threading.Thread):
    """Sleeps 1 ms in a loop; a wake-up late by more than ``limit``
    seconds is a stall, recorded with where the refresh thread was."""

    def __init__(self, refresh_log, limit=0.015):
        super().__init__(daemon=True, name='stall-watch')
        self.refresh_log = refresh_log
        self.limit = limit
        self.stalls = []
        self.stop = threading.Event()

    def run(self):
        last = time.perf_counter()
        while not self.stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            if now - last > self.limit:
                self.stalls.append((now - last, self._where()))
            last = now

    def _where(self):
        thread = self.refresh_log.thread
        if thread is None:
            return '?'
        frame = sys._current_frames().get(thread.ident)
        if frame is None:
            return 'refresh thread idle'
        return ' <- '.join('%s:%s %s' % (os.path.basename(entry.filename),
                                         entry.lineno, entry.name)
                           for entry in reversed(
                               traceback.extract_stack(frame)[-4:]))


class CollectorPasses:
    """The cyclic garbage collector's passes over ``limit`` seconds while
    started (``gc.callbacks``): each ``(seconds, generation, objects
    collected)``. A pass holds the interpreter throughout; after a full
    read it walks whatever is not frozen (see
    ``scheduler.host_cache.collector``)."""

    def __init__(self, limit=0.005):
        self.limit = limit
        self.passes = []
        self._began = None

    def __call__(self, phase, info):
        if phase == 'start':
            self._began = time.perf_counter()
        elif self._began is not None:
            took = time.perf_counter() - self._began
            self._began = None
            if took > self.limit:
                self.passes.append((took, info['generation'],
                                    info['collected']))

    def start(self):
        del self.passes[:]
        gc.callbacks.append(self)

    def stop(self):
        if self in gc.callbacks:
            gc.callbacks.remove(self)


class TimedLock:
    """The manager's ``_lock`` with the time the measuring thread waited
    for it, and how long other threads held it."""

    def __init__(self, lock, split):
        self.lock = lock
        self.split = split
        self.acquired = 0.0

    def __enter__(self):
        started = time.perf_counter()
        self.lock.acquire()
        self.acquired = now = time.perf_counter()
        if threading.get_ident() == self.split.ident:
            self.split.parts['lock wait'] += now - started
        return self

    def __exit__(self, *exc):
        held = time.perf_counter() - self.acquired
        if threading.get_ident() != self.split.ident:
            self.split.holds.append(
                (held * 1000, sys._getframe(1).f_code.co_name))
        self.lock.release()

    def acquire(self, *args, **kwargs):
        return self.lock.acquire(*args, **kwargs)

    def release(self):
        self.lock.release()


class ClaimSplit:
    """Where each request's claim time went: the host cache's
    ``consume`` and ``settle`` (their wait for the manager's lock
    apart), and the SQL claim (``claimer.claim``); and whether a refresh
    was running meanwhile."""

    PARTS = ('lock wait', 'consume', 'sql', 'settle')

    def __init__(self, driver, refresh_log):
        self.ident = threading.get_ident()
        self.parts = dict.fromkeys(self.PARTS, 0.0)
        self.rows = []
        self.holds = []
        self.busy = False
        # The heartbeat writer's writes (start, end), once it is done.
        self.writes = []
        manager = driver.host_manager
        manager._lock = TimedLock(manager._lock, self)
        self._time(manager, 'consume', 'consume')
        self._time(manager, 'settle', 'settle')
        self._time(driver.claimer, 'claim', 'sql')
        inner = refresh_log.manager.refresh

        manager = refresh_log.manager
        # Each refresh's wall clock span and whether it was a full read.
        self.refreshes = []

        def refresh(full=False):
            self.busy = True
            before = manager.stats['full_reads']
            began = time.time()
            try:
                return inner(full=full)
            finally:
                self.busy = False
                self.refreshes.append(
                    (began, time.time(),
                     manager.stats['full_reads'] > before))
        manager.refresh = refresh

    def _time(self, owner, name, part):
        inner = getattr(owner, name)
        parts = self.parts

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                parts[part] += time.perf_counter() - started
        setattr(owner, name, timed)

    def begin(self):
        for part in self.PARTS:
            self.parts[part] = 0.0
        self.busy_at_start = self.busy
        self.began = time.time()

    def end(self, claim_ms):
        parts = self.parts
        # consume and settle without their wait for the lock.
        waited = parts['lock wait']
        self.rows.append((claim_ms, waited * 1000,
                          (parts['consume'] + parts['settle'] - waited)
                          * 1000, parts['sql'] * 1000,
                          self.busy_at_start or self.busy,
                          (self.began, time.time())))

    def report(self):
        claims = sorted(self.rows)
        tail = claims[int(len(claims) * 0.99):]
        print('  claim split (ms): part  p50 / p99 over all claims;  mean '
              'over the slowest 1%')
        for index, name in ((1, 'lock wait'), (2, 'consume+settle'),
                            (3, 'sql')):
            values = [row[index] for row in claims]
            print('    %-15s %6.2f / %6.2f;  %6.2f' % (
                name, statistics.median(values),
                metrics.percentile(values, 0.99),
                statistics.mean(row[index] for row in tail)))
        busy = [row[0] for row in claims if row[4]]
        idle = [row[0] for row in claims if not row[4]]
        for label, values in (('refresh running', busy),
                              ('refresh idle', idle)):
            if values:
                print('    claims with %-16s %6d: p50 %6.2f p99 %6.2f' % (
                    label, len(values), statistics.median(values),
                    metrics.percentile(values, 0.99)))
        print('    of the slowest 1%%, with a refresh running: %d of %d'
              % (sum(row[4] for row in tail), len(tail)))
        self._report_full_reads(claims, tail)
        if self.writes:
            self._report_writes(claims, tail)
        holds = sorted(self.holds, reverse=True)
        print('    the lock held by the refresh: %d times, longest %s' % (
            len(holds), ', '.join('%.1f ms (%s)' % hold
                                  for hold in holds[:6])))

    def _report_full_reads(self, claims, tail):
        """The claims made while a full read ran (its wall clock span
        overlapping the claim's request) apart."""
        spans = [(began, ended) for began, ended, full in self.refreshes
                 if full]
        if not spans:
            return

        def during(span):
            return any(began < span[1] and span[0] < ended
                       for began, ended in spans)
        values = [row[0] for row in claims if during(row[5])]
        if values:
            print('    claims during a full read  %6d: p50 %6.2f p99 %6.2f'
                  % (len(values), statistics.median(values),
                     metrics.percentile(values, 0.99)))
        print('    of the slowest 1%%, during a full read: %d of %d'
              % (sum(during(row[5]) for row in tail), len(tail)))

    def _report_writes(self, claims, tail):
        """The requests made while the heartbeat writer was in a write
        (its transaction's wall clock span overlaps the request's) apart
        from the others: they share the two CPUs with it."""
        writes = sorted(self.writes)
        starts = [write[0] for write in writes]
        # The longest write: any write overlapping a span starts at most
        # this long before the span.
        longest = max(end - start for start, end in writes)

        def during(span):
            began, ended = span
            at = bisect.bisect_right(starts, ended)
            while at > 0 and starts[at - 1] >= began - longest:
                at -= 1
                if writes[at][1] >= began:
                    return True
            return False

        marked = [(row[0], during(row[5])) for row in claims]
        first = min(row[5][0] for row in claims)
        last = max(row[5][1] for row in claims)
        writing = sum(min(end, last) - max(start, first)
                      for start, end in writes if end > first and start < last)
        print('    heartbeat writes: %d, %.0f%% of the time' % (
            len(writes), 100 * writing / max(last - first, 1e-9)))
        for label, flag in (('during a write', True),
                            ('between writes', False)):
            values = [claim for claim, overlapped in marked
                      if overlapped is flag]
            if values:
                print('    claims %-22s %6d: p50 %6.2f p99 %6.2f' % (
                    label, len(values), statistics.median(values),
                    metrics.percentile(values, 0.99)))
        # claims is sorted by duration: the slowest 1% are its last.
        print('    of the slowest 1%%, during a heartbeat write: %d of %d'
              % (sum(overlapped for _claim, overlapped
                     in marked[len(claims) - len(tail):]), len(tail)))


# A one-row UPDATE+COMMIT timed after every so many requests, beside the
# claims: the reference of the claim's tail.
FLOOR_EVERY = 5


def ratio_row(figure, values, reference=False):
    p50 = statistics.median(values)
    p99 = metrics.percentile(values, 0.99)
    if reference:
        verdict = '(reference)'
    else:
        verdict = '(target <= %.0fx: %s)' % (
            TARGET_RATIO, 'ok' if p99 <= TARGET_RATIO * p50 else 'MISSED')
    print('  %-14s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  p99/p50 %5.2fx'
          '  %s' % (figure, p50, p99, max(values), p99 / p50, verdict))


def spec_of(rng):
    _kind, spec = select_destinations.make_spec(rng)
    spec.availability_zone = None
    return spec


# Building instances recorded per second of the run (the requests' own):
# more than the fastest run here makes.
INSTANCES_PER_SECOND = 1000


class BuildingInstances:
    """Instances in the ``building`` state, as the conductor records
    them before it asks for a host, handed out one per request (a claim
    for an instance Gantt does not know waits for the disk whatever
    ``[filter_scheduler] build_claim_flush`` says); unknown UUIDs once
    they run out."""

    def __init__(self, count):
        with db_api.get_engine().begin() as connection:
            self.uuids = rig.building_instances(connection, count)
        self.unknown = 0

    def next(self):
        if self.uuids:
            return self.uuids.pop()
        self.unknown += 1
        return str(uuid.uuid4())


def select_one(driver, spec, instances):
    """One request for the next building instance; False if no host
    was valid."""
    try:
        driver.select_destinations(None, spec, [instances.next()])
    except exception.NoValidHost:
        return False
    return True


def run(args):
    rng = random.Random(7)
    from tests.fixtures import databases
    url = databases.create_database('postgresql')
    CONF.set_override('connection', url, group='database')
    db_api.dispose_engine()
    driver = writer = None
    try:
        migration.db_sync()
        started = time.perf_counter()
        host_cache_bench.bulk_populate(args.hosts, rng)
        instances = BuildingInstances(
            int((args.seconds + 10) * INSTANCES_PER_SECOND))
        setup = time.perf_counter() - started
        driver = filter_scheduler.FilterScheduler()
        manager = driver.host_manager
        manager.full_read_interval = args.full_read_interval
        log = RefreshLog(manager)
        started = time.perf_counter()
        driver.start()
        load = time.perf_counter() - started
        rate = args.heartbeats
        if rate is None:
            rate = args.hosts / CONF.report_interval
        warm = 5.0
        if args.flip_liveness is None:
            writer = start_heartbeats(url, args.hosts, rate,
                                      args.seconds + warm,
                                      args.heartbeat_pacing)
        watch = StallWatch(log)
        passes = CollectorPasses()
        if args.stalls:
            watch.start()
        deadline = time.monotonic() + warm
        while time.monotonic() < deadline:
            select_one(driver, spec_of(rng), instances)
        split = ClaimSplit(driver, log) if args.split else None
        del log.incremental[:], log.full[:], watch.stalls[:]
        del log.incremental_cpu[:], log.full_cpu[:]
        if args.stalls:
            passes.start()
        fulls = manager.stats['full_reads']
        flipper = None
        if args.flip_liveness is not None:
            flipper = LivenessFlipper(args.flip_liveness)
            flipper.start()
        select, claim, floor = [], [], []
        failed = 0
        rig._commit_table(db_api.get_engine())
        committer = rig._Committer(db_api.get_engine())
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            if split is not None:
                split.begin()
            placed = select_one(driver, spec_of(rng), instances)
            select.append(driver.last_timings['filter_weigh'] * 1000)
            if placed:
                claim.append(driver.last_timings['claim'] * 1000)
                if split is not None:
                    split.end(claim[-1])
            else:
                # No host, no claim (while every service is down, with
                # --flip-liveness).
                failed += 1
            if len(select) % FLOOR_EVERY == 0:
                started = time.perf_counter()
                committer.commit_one()
                floor.append((time.perf_counter() - started) * 1000)
        committer.connection.close()
        fulls = manager.stats['full_reads'] - fulls
        watch.stop.set()
        passes.stop()
        if flipper is not None:
            flipper.stop.set()
            flipper.join()
        full, incremental = list(log.full), list(log.incremental)
        full_cpu = list(log.full_cpu)
        incremental_cpu = list(log.incremental_cpu) or [0.0]
        stalls = list(watch.stalls)
        if writer is not None:
            summary, writes = writer.communicate()[0].splitlines()[-2:]
            written, elapsed, late = summary.split()
            if split is not None:
                split.writes = json.loads(writes)
            writer = None
        print('%d hosts on postgresql (set-up %.1f s, cache load %.2f s), '
              '%d requests in %.0f s (no valid host %d), each for an '
              'instance being built (%d for unknown ones: more than were '
              'recorded)' % (args.hosts, setup, load, len(select),
                             args.seconds, failed, instances.unknown))
        print('  [filter_scheduler] build_claim_flush = %s'
              % CONF.filter_scheduler.build_claim_flush)
        print('  switch interval %.1f ms' % (sys.getswitchinterval() * 1000))
        if flipper is not None:
            print('  every service changed liveness at once %d times '
                  '(every %.1f s), no heartbeat writer'
                  % (flipper.flips, args.flip_liveness))
        else:
            if args.heartbeat_pacing == 'tick':
                pacing = 'a batch every %.1f s, %s late' % (HEARTBEAT_TICK,
                                                             late)
            else:
                pacing = ('as the batcher writes them, %s writes behind'
                          % late)
            print('  heartbeats written by another process: %.0f/s (target '
                  '%.0f/s; %s)' % (int(written) / float(elapsed), rate,
                                   pacing))
        ratio_row('select', select)
        ratio_row('claim', claim)
        if floor:
            # The same database's one-row commit, between the requests:
            # what a claim's tail cannot be under (the disk's commits).
            ratio_row('commit floor', floor, reference=True)
        incremental = incremental or [0.0]
        print('  full reads during the run: %d (every %.0f s); each took %s '
              'ms (of the refresh thread\'s CPU: %s ms)'
              % (fulls, args.full_read_interval,
                 ', '.join('%.0f' % value for value in full),
                 ', '.join('%.0f' % value for value in full_cpu)))
        print('  incremental refreshes: %d, p50 %.1f ms, max %.1f ms (of the '
              "refresh thread's CPU: p50 %.1f ms)"
              % (len(incremental), statistics.median(incremental),
                 max(incremental), statistics.median(incremental_cpu)))
        if split is not None:
            split.report()
        if args.stalls:
            print('  longest stalls of a 1 ms sleeper:')
            for stall, where in sorted(stalls, reverse=True)[:8]:
                print('    %6.1f ms  %s' % (stall * 1000, where))
            longest = sorted(passes.passes, reverse=True)[:5]
            print('  garbage collector passes over %.0f ms: %d; longest %s'
                  % (passes.limit * 1000, len(passes.passes),
                     ', '.join('%.1f ms (generation %d)' % (took * 1000,
                                                           generation)
                               for took, generation, _found in longest)
                     or '-'))
        sys.stdout.flush()
    finally:
        if writer is not None:
            writer.kill()
            writer.wait()
        if driver is not None:
            driver.stop()
        db_api.dispose_engine()
        databases.drop_database(url)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['--heartbeat-writer']:
        url, hosts, rate, seconds, pacing = argv[1:6]
        write_heartbeats(url, int(hosts), float(rate), float(seconds),
                         pacing)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=100000)
    parser.add_argument('--seconds', type=float, default=60.0)
    parser.add_argument('--full-read-interval', type=float, default=20.0,
                        help='seconds between full reads (300 in the '
                        'service)')
    parser.add_argument('--heartbeats', type=float, default=None,
                        help='heartbeats a second (default: every host '
                        'every [DEFAULT] report_interval)')
    parser.add_argument('--heartbeat-pacing', choices=('batcher', 'tick'),
                        default='batcher',
                        help="batcher (default): each write takes the "
                        "heartbeats that arrived during the one before, "
                        "as the conductor's batcher; tick: a batch every "
                        '%.1f s' % HEARTBEAT_TICK)
    parser.add_argument('--stalls', action='store_true',
                        help='also print the longest pauses of a thread '
                        'that sleeps 1 ms')
    parser.add_argument('--split', action='store_true',
                        help="also print where the claims' time went "
                        '(lock wait, host cache, SQL)')
    parser.add_argument('--flip-liveness', type=float, default=None,
                        metavar='SECONDS',
                        help='every SECONDS, every service changes '
                        'liveness at once (instead of the heartbeat '
                        'writer)')
    parser.add_argument('--switch-interval', type=float, default=None,
                        help="the interpreter's switch interval (s; "
                        "default: the daemon's, 0.0005; CPython's is "
                        '0.005)')
    parser.add_argument('--set', dest='options', action='append',
                        type=rig.parse_option, default=[],
                        metavar='SECTION.OPTION=VALUE',
                        help='an option for the scheduler (repeatable), '
                        'e.g. filter_scheduler.build_claim_flush=immediate')
    args = parser.parse_args(argv)
    CONF([], project='gantt')
    for section, option, value in args.options:
        CONF.set_override(option, value,
                          group=None if section == 'DEFAULT' else section)
    objects.register_all()
    # As the daemon's main does.
    host_cache.freeze_collector()
    host_cache.shorten_switch_interval()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    run(args)


if __name__ == '__main__':
    main()
