"""What the RPC benchmarks share: a real cluster, callers, an echo server.

A :class:`Rig` is a :class:`tests.functional.cluster.Cluster` (a RabbitMQ
virtual host of its own on the local broker, a database of its own on the
local PostgreSQL or MariaDB, daemons that run this checkout's code)
holding N compute nodes with live services, ``gantt-scheduler`` daemons,
and BUILDING instance rows for the requests to claim for (so that
``gantt-manage db check`` finds every claim owned: a claim for an
instance Gantt does not know is a stray claim).

Callers run in caller processes of their own (each with its transport
and a few threads; see ``CALLER_PROCESSES``): :meth:`Rig.run_callers`
warms them up, then gives the wall time and every call's latency and
answer. The echo server (``python benchmarks/rig.py echo-server CONF``)
is a bare oslo.messaging RPC server on the same broker whose ``echo``
returns its argument: the floor any RPC service on this machine stands
on. Its ``echo_commit`` (kind ``'echo_commit'``) first commits one
single-row UPDATE on the rig's database (a table of its own,
``COMMIT_TABLE``, on one connection kept in autocommit mode): the floor
of a service that writes to the database before it answers, as a claim
does. Its ``echo_claim`` (kind ``'echo_claim'``, one instance per call,
as a select) makes the scheduler's own SQL claim on the next node in
turn and answers as many Selections as a select (:class:`_Claimer`):
the floor of a service that claims as Gantt's scheduler does, without
its host cache, filters or weighers.
"""

import argparse
import collections
import json
import multiprocessing
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
import warnings

import sqlalchemy as sa

# futurist imports eventlet, which warns on import in every caller process.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from scheduler.db import models  # noqa: E402
from scheduler.sim import metrics  # noqa: E402
from tests.functional import cluster as cluster_mod  # noqa: E402

ECHO_TOPIC = 'gantt-bench-echo'
# The call kinds the echo server answers (its method names).
ECHO_KINDS = ('echo', 'echo_commit')
# The echo server's kind that claims as a select does (see _Claimer): its
# calls each name an instance, as a select's do.
CLAIM_KIND = 'echo_claim'
# echo_commit's table and its number of rows (each call updates the next).
COMMIT_TABLE = 'gantt_bench_commit'
COMMIT_ROWS = 1000
# The flavor (vcpus, memory_mb, root_gb) of requests that name none.
FLAVOR = (1, 512, 1)
# run_in_turns: calls of one kind in a row, and the rest between two
# turns (the ranking a scheduler makes ahead after its reply is done by
# then, rather than running beside the next kind's calls).
TURN_BLOCK = 10
TURN_PAUSE = 0.01
# Caller processes for concurrent callers (each with its share of them as
# threads): measured with 16 echo callers on the 2-CPU machine, 1 process
# (16 threads), 2, 4 and 8 processes made the same calls/s within the
# noise (about 430-480), 16 processes of one thread fewer (220-400): the
# GIL of the callers' side is not the limit, but 4 keeps it out of the way
# where a caller is busier (a select's answer is larger than an echo's).
CALLER_PROCESSES = 4
# Quiet daemons: a debug log line per request would be measured too.
# The service heartbeat at its default interval (the test cluster's
# 1 s would write the services row ten times as often as a deployment).
DAEMON_CONF = '''
[DEFAULT]
debug = false
report_interval = 10
rpc_response_timeout = 20
# The benchmark's computes do not heartbeat: keep them up.
service_down_time = 86400
[scheduler]
host_state_refresh_interval = 0.5
'''


# Service.start logs this in each worker once its RPC server consumes.
READY = 'gantt-scheduler on scheduler is ready'
# oslo.log's default format: '<date> <time> <pid> <LEVEL> <logger> ...'.
STATS_LINE = re.compile(r' (?P<pid>\d+) INFO \S+ .*Scheduler stats: ')
RETRIED_LINE = re.compile(r'retried (\d+) lost claim')


# The nearest-rank percentile gantt-sim reports too.
percentile = metrics.percentile


def p50(values):
    return statistics.median(values)


def table(rows):
    """Print ``(figure, value, reference, target)`` rows, with ratios."""
    print('  %-46s %12s %12s %8s  %s' % ('figure', 'gantt', 'reference',
                                         'ratio', 'target'))
    for figure, value, reference, target in rows:
        ratio = (value / reference) if reference else float('nan')
        print('  %-46s %12.2f %12s %8s  %s' % (
            figure, value,
            '%.2f' % reference if reference is not None else '-',
            '%.2fx' % ratio if reference is not None else '-', target))
    sys.stdout.flush()


def parse_option(text):
    """``SECTION.OPTION=VALUE`` (a ``--set`` argument) as a tuple; an
    argparse error for anything else."""
    name, equals, value = text.partition('=')
    section, dot, option = name.strip().rpartition('.')
    if not (equals and dot and section and option):
        raise argparse.ArgumentTypeError(
            'expected SECTION.OPTION=VALUE, got %r' % text)
    return section, option, value.strip()


def options_conf(options):
    """The ``(section, option, value)`` of ``options`` as config file
    sections, one section header per option (oslo.config merges them)."""
    return ''.join('[%s]\n%s = %s\n' % option for option in options)


def _terminated(signum, _frame):
    raise SystemExit(128 + signum)


def exit_on_sigterm():
    """Make SIGTERM (``timeout``, a ``kill``) end this process as Ctrl-C
    does, through its ``with`` blocks, so that a benchmark stopped that
    way still stops its daemons and drops its database and virtual host
    (by default SIGTERM ends Python at once and leaves them running).
    Returns the handler it replaced, or None when it left it alone (not
    the main thread, or a handler of someone else's)."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        return None
    return signal.signal(signal.SIGTERM, _terminated)


# The tables autovacuum would analyse now (its default threshold, 50, and
# scale factor, 0.1; see Rig.analyze).
_DUE_FOR_ANALYZE = """
    SELECT s.relname FROM pg_stat_user_tables s
    JOIN pg_class c ON c.oid = s.relid
    WHERE s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)
"""


def building_instances(connection, count):
    """Record ``count`` BUILDING instances, as the conductor records them
    before it asks for a host, on ``connection`` (in its transaction);
    their UUIDs."""
    uuids = [str(uuid.uuid4()) for _ in range(count)]
    now = _utcnow()
    for start in range(0, count, 5000):
        connection.execute(models.Instance.__table__.insert(), [
            {'uuid': value, 'vm_state': 'building',
             'task_state': 'scheduling', 'created_at': now,
             'updated_at': now, 'deleted': 0}
            for value in uuids[start:start + 5000]])
    return uuids


class Rig:
    def __init__(self, workdir, backend, hosts, host_sizes=None,
                 seed=11, options=()):
        """``options``: ``(section, option, value)`` given to the
        daemons on top of :data:`DAEMON_CONF` (``--set``)."""
        self.workdir = workdir
        self.cluster = cluster_mod.Cluster(
            workdir, backend, extra_conf=DAEMON_CONF + options_conf(options))
        self.hosts = hosts
        self.host_sizes = host_sizes
        self.rng = random.Random(seed)
        self.echo = None
        self.cpu = {}

    def __enter__(self):
        self._sigterm = exit_on_sigterm()
        try:
            self.cluster.__enter__()
            try:
                self._populate()
            except BaseException:
                self.cluster.__exit__(None, None, None)
                raise
        except BaseException:
            self._restore_sigterm()
            raise
        return self

    def __exit__(self, *exc_info):
        try:
            if self.echo is not None and self.echo.poll() is None:
                self.echo.terminate()
                self.echo.wait(30)
            self.cluster.__exit__(*exc_info)
        finally:
            self._restore_sigterm()

    def _restore_sigterm(self):
        if self._sigterm is not None:
            signal.signal(signal.SIGTERM, self._sigterm)

    # -- the cloud ------------------------------------------------------------

    def _populate(self):
        nodes = []
        services = []
        now = _utcnow()
        for number in range(self.hosts):
            vcpus, memory_mb, local_gb = (
                self.host_sizes(number, self.rng) if self.host_sizes
                else (self.rng.choice([32, 64, 96]),
                      self.rng.choice([131072, 262144]), 2000))
            host = 'compute-%06d' % number
            nodes.append({
                'uuid': str(uuid.UUID(int=self.rng.getrandbits(128))),
                'host': host, 'hypervisor_hostname': host, 'vcpus': vcpus,
                'memory_mb': memory_mb, 'local_gb': local_gb,
                'mapped': True, 'generation': 1, 'created_at': now,
                'updated_at': now})
            services.append({
                'host': host, 'binary': 'gantt-compute', 'topic': 'compute',
                'disabled': False, 'forced_down': False, 'last_seen_up': now,
                'report_count': 1, 'created_at': now, 'updated_at': now})
        with self.cluster.engine.begin() as connection:
            for start in range(0, len(nodes), 5000):
                connection.execute(models.ComputeNode.__table__.insert(),
                                   nodes[start:start + 5000])
                connection.execute(models.Service.__table__.insert(),
                                   services[start:start + 5000])
        self.analyze()

    def analyze(self):
        """Fresh planner statistics, as autovacuum would leave them.

        On PostgreSQL, by autovacuum's own rule (a table is analysed
        once more than 50 rows plus a tenth of it changed since it last
        was), applied here because autovacuum is off on the benchmark
        machine: after the rig fills the cloud, and before each round
        (see :meth:`instances`). A table still empty is left as a new
        database has it, never analysed, which the planner takes for a
        table of a few pages. Analysed empty and never again, the
        allocations would look empty for the whole run, and the
        statements the scheduler prepares once per connection would keep
        the plans made for an empty table: each claim read every
        allocation made before it (benchmarks/README.md, session 27).
        (MariaDB plans each statement as it comes, and InnoDB recomputes
        a table's statistics itself after a tenth of it changed.)
        """
        with self.cluster.engine.connect() as connection:
            if self.cluster.backend == 'mariadb':
                connection.execute(sa.text(
                    'ANALYZE TABLE compute_nodes, services, instances, '
                    'allocations'))
            elif self.cluster.backend == 'postgresql':
                quote = connection.dialect.identifier_preparer.quote
                for (name,) in connection.execute(sa.text(
                        _DUE_FOR_ANALYZE)).all():
                    connection.execute(sa.text('ANALYZE %s' % quote(name)))
            connection.commit()

    def instances(self, count):
        """``count`` BUILDING instances (as the conductor records them)."""
        with self.cluster.engine.begin() as connection:
            uuids = building_instances(connection, count)
        if self.cluster.backend == 'postgresql':
            # Before the round these instances are made for (outside its
            # clock), what autovacuum would have analysed by then.
            self.analyze()
        return uuids

    # -- daemons --------------------------------------------------------------

    def start_schedulers(self, workers, timeout=300):
        """One ``gantt-scheduler`` daemon with ``workers`` processes,
        returned once every worker has loaded its host cache and
        consumes the topic (so that the broker spreads requests over all
        of them from the first)."""
        process = self.cluster.start_scheduler(workers=workers)
        self.cluster.wait_until(
            lambda: process.log().count(READY) >= workers, timeout,
            '%d scheduler worker(s) to be ready' % workers, process)
        return process

    def stop_schedulers(self):
        """Stop the scheduler daemons (each worker logs its counters as it
        stops); returns their Process objects, whose logs stay on disk."""
        stopped = [process for process in self.cluster.processes
                   if process.name.startswith('scheduler')]
        for process in stopped:
            process.stop(timeout=60)
            self.cluster.processes.remove(process)
        return stopped

    def start_echo(self):
        log_path = os.path.join(self.workdir, 'echo.log')
        log = open(log_path, 'w')
        self.echo = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), 'echo-server',
             self.cluster.conf_path], stdout=log, stderr=subprocess.STDOUT,
            env=self.cluster.env())
        log.close()
        # Calls sent before the server bound its queue would be dropped.
        self.cluster.wait_until(
            lambda: ECHO_TOPIC in self.cluster.queue_depths(), 60,
            'the echo server to consume',
            cluster_mod.Process('echo', self.echo, log_path))

    # -- after a run ----------------------------------------------------------

    def db_check(self):
        result = self.cluster.manage('db', 'check', check=False)
        return result.returncode, (result.stdout + result.stderr).strip()

    def overfilled_hosts(self):
        """Nodes whose usage exceeds capacity (ratios as claims use them:
        the node's, else the initial ratios' defaults, 4, 1 and 1)."""
        return self.cluster.query(
            'SELECT count(*) AS n FROM compute_nodes WHERE '
            'vcpus_used > vcpus * COALESCE(cpu_allocation_ratio, 4.0) '
            '- reserved_vcpus OR memory_mb_used > memory_mb * '
            'COALESCE(ram_allocation_ratio, 1.0) - reserved_memory_mb OR '
            'local_gb_used > local_gb * COALESCE(disk_allocation_ratio, 1.0)'
            ' - reserved_disk_gb')[0].n

    @staticmethod
    def claim_retries(processes):
        """Claims lost to races and retried on the next host, by the
        scheduler daemons ``processes`` (stopped: see
        :meth:`stop_schedulers`), read from their logs in two ways:
        ``(from the stats lines, from the request lines)``.

        Gantt exposes ``stats['claim_retries']`` only in its logs: every
        process (every worker) logs its counters on a ``Scheduler stats:``
        line when they changed and as it stops, from zero at its start, so
        the last line of each process id is its total; and a request that
        retried logs ``retried N lost claim(s)``. The first is the figure;
        the second checks it (a worker killed before its last stats line
        would make them differ).
        """
        per_request = sum(
            int(retried.group(1)) for process in processes
            for retried in RETRIED_LINE.finditer(process.log()))
        return Rig.counter(processes, 'claim_retries'), per_request

    @staticmethod
    def counter(processes, name):
        """The total of the driver counter ``name`` over the stopped
        scheduler daemons ``processes``: the last ``Scheduler stats:``
        line of each process id holds its own (0 if it never counted)."""
        by_pid = {}
        pattern = re.compile(r'\b%s=(\d+)' % re.escape(name))
        for process in processes:
            for line in process.log().splitlines():
                stats = STATS_LINE.search(line)
                if stats:
                    found = pattern.search(line)
                    by_pid[(process.name, stats.group('pid'))] = int(
                        found.group(1)) if found else 0
        return sum(by_pid.values())

    def placements_per_host(self):
        rows = self.cluster.query(
            'SELECT n.host, count(a.id) AS n FROM compute_nodes n LEFT JOIN '
            'allocations a ON a.compute_node_id = n.id GROUP BY n.host')
        return {row.host: row.n for row in rows}

    def clear_allocations(self):
        with self.cluster.engine.begin() as connection:
            connection.execute(sa.text('DELETE FROM allocations'))
            connection.execute(sa.text(
                'UPDATE compute_nodes SET vcpus_used = 0, memory_mb_used = 0,'
                ' local_gb_used = 0, generation = generation + 1, '
                'updated_at = :now'), {'now': _utcnow()})

    # -- callers --------------------------------------------------------------

    def run_callers(self, kind, callers, work, flavor=FLAVOR,
                    processes=None, warmup=()):
        """Run ``callers`` concurrent callers over ``work``; returns
        ``(seconds, [(latency seconds, host or None, error or None)])``.

        ``kind`` 'select': ``work`` is a list of instance uuids, each asked
        for with ``flavor`` (``(vcpus, memory_mb, root_gb)``, or a dict of
        them by uuid). ``kind`` 'echo' or 'echo_commit' (see the
        module's doc): ``work`` is a number of calls.
        The callers are spread over ``processes`` caller processes (4 by
        default, at most one per caller), each with its threads. Each
        thread first makes its share of the ``warmup`` calls (uuids, or a
        number for 'echo'), untimed: connections and reply queues are
        made then. The clock starts when every caller is warm and stops
        when the last one is done.
        """
        processes = min(callers, processes or CALLER_PROCESSES)
        items = _items(kind, work, flavor)
        warm = _items(kind, warmup, flavor)
        threads = [callers // processes + (1 if index < callers % processes
                                           else 0)
                   for index in range(processes)]
        elapsed, results = self._run([
            (items[index::processes], warm[index::processes], count)
            for index, count in enumerate(threads)])
        return elapsed, [result[:3] for result in results]

    def cpu_parts(self):
        """``{part: CPU seconds so far}`` of the processes of each part:
        ``'scheduler'`` (the rig's scheduler daemons and their workers),
        ``'echo'`` (the echo server), and machine-wide ``'broker'``
        (every RabbitMQ node's ``beam.smp``) and ``'database'`` (every
        ``postgres`` or ``mariadbd`` process: other users of the shared
        servers are counted too). A process that ended meanwhile drops
        out of its part's sum."""
        daemons = [process.popen.pid for process in self.cluster.processes
                   if process.name.startswith('scheduler')
                   and process.alive()]
        parts = {'scheduler': 0.0, 'echo': 0.0, 'broker': 0.0,
                 'database': 0.0}
        for pid, parent, name, seconds in cluster_mod.process_table():
            if pid in daemons or parent in daemons:
                parts['scheduler'] += seconds
            elif self.echo is not None and pid == self.echo.pid:
                parts['echo'] += seconds
            elif name == 'beam.smp':
                parts['broker'] += seconds
            elif name in ('postgres', 'mariadbd'):
                parts['database'] += seconds
        return parts

    def run_in_turns(self, work, warmup, block=TURN_BLOCK, pause=TURN_PAUSE):
        """One caller making the calls of several kinds in turn, ``block``
        calls of one kind, then ``block`` of the next, ``pause`` seconds
        of rest between two blocks, so that every kind meets whatever
        else the machine does at that moment alike (rounds of one kind
        each, seconds apart, met different moments: benchmarks/README.md,
        session 28). ``work`` and ``warmup``: ``{kind: work}``, as
        :meth:`run_callers` takes it for that kind (``warmup``'s calls
        made the same way first, untimed). Returns ``{kind: [(latency
        seconds, host or None, error or None)]}``.
        """
        _elapsed, results = self._run([
            (_in_turns(work, block), _in_turns(warmup, block), 1)],
            pause=pause)
        by_kind = {kind: [] for kind in work}
        for result in results:
            by_kind[result[3]].append(result[:3])
        return by_kind

    def _run(self, shares, pause=0.0):
        """One caller process for each ``(items, warm items, threads)``
        of ``shares``; returns ``(seconds, [(latency seconds, host,
        error, kind)])``. The CPU seconds each part of the machine spent
        over the timed calls are left in :attr:`cpu` (see
        :meth:`cpu_parts`), the callers' own under ``'callers'``."""
        context = multiprocessing.get_context('spawn')
        ready = context.Barrier(len(shares) + 1)
        queue = context.Queue()
        workers = [context.Process(target=_caller_process, args=(
            self.cluster.conf_path, items, warm, count, pause, ready,
            queue)) for items, warm, count in shares]
        for worker in workers:
            worker.start()
        try:
            ready.wait(600)
            started = time.monotonic()
            before = self.cpu_parts()
            results = []
            finished = started
            callers_cpu = 0.0
            for _ in workers:
                done, mine, cpu = queue.get(timeout=3600)
                finished = max(finished, done)
                results.extend(mine)
                callers_cpu += cpu
            after = self.cpu_parts()
            self.cpu = {part: after[part] - before.get(part, 0.0)
                        for part in after}
            self.cpu['callers'] = callers_cpu
        finally:
            for worker in workers:
                worker.join(60)
                if worker.is_alive():
                    worker.kill()
        return finished - started, results


def _items(kind, work, flavor=FLAVOR):
    """What each call sends: ``(kind, None)`` (an echo), or ``(kind,
    (uuid, flavor))``."""
    if kind in ECHO_KINDS:
        return [(kind, None)] * (work if isinstance(work, int) else
                                 len(work))
    return [(kind, (uuid, flavor[uuid] if isinstance(flavor, dict)
                    else flavor)) for uuid in work]


def _in_turns(work, block):
    """The items of ``{kind: work}`` (see :func:`_items`), ``block`` of
    each kind in turn until all are taken."""
    queues = [_items(kind, amount) for kind, amount in work.items()]
    items = []
    while any(queues):
        for queue in queues:
            items.extend(queue[:block])
            del queue[:block]
    return items


def _utcnow():
    import datetime
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _init(conf_path):
    from scheduler import conf
    from scheduler import config
    from scheduler import objects
    from scheduler import rpc
    config.register_opts()      # oslo.messaging's options, Gantt's exchange
    conf.CONF(['--config-file', conf_path], project='gantt')
    objects.register_all()
    rpc.init(conf.CONF)


def message_sizes(flavor=FLAVOR):
    """Bytes of JSON of the arguments of a ``select_destinations`` call
    (as ``rpcapi`` sends it) and of an echo call, serialized as on the
    wire (the context and the envelope, alike for both, aside)."""
    from scheduler import context
    from scheduler import objects
    from scheduler import rpc
    objects.register_all()
    ctxt = context.get_admin_context()
    serializer = rpc.get_serializer()
    spec = serializer.serialize_entity(ctxt, _spec(flavor))
    select = {'spec_obj': spec, 'instance_uuids': [str(uuid.uuid4())],
              'return_objects': True, 'return_alternates': True}
    return len(json.dumps(select)), len(json.dumps({'payload': spec}))


def _spec(flavor):
    from scheduler.objects import request_spec
    vcpus, memory_mb, root_gb = flavor
    return request_spec.RequestSpec(
        flavor=request_spec.Flavor(vcpus=vcpus, memory_mb=memory_mb,
                                   root_gb=root_gb, name='bench',
                                   flavorid='bench'),
        num_instances=1, project_id='bench')


def _caller_process(conf_path, items, warm, threads, pause, ready, queue):
    """One caller process: ``threads`` callers, each warming up on its
    share of ``warm``, then all timed together over ``items`` (see
    :func:`_items`; a thread rests ``pause`` seconds where the kind of its
    calls changes); puts ``(time.monotonic() at the end, [(latency
    seconds, host, error, kind)])`` on ``queue``."""
    import threading

    import oslo_messaging as messaging

    from scheduler import context
    from scheduler import rpc
    from scheduler import rpcapi
    _init(conf_path)
    ctxt = context.get_admin_context()
    serializer = rpc.get_serializer()
    kinds = {kind for kind, _ in items + warm}
    if kinds & set(ECHO_KINDS + (CLAIM_KIND,)):
        client = rpc.get_client(messaging.Target(topic=ECHO_TOPIC))
        payload = serializer.serialize_entity(ctxt, _spec(FLAVOR))
    if 'select' in kinds:
        scheduler = rpcapi.SchedulerAPI()
    specs = {}

    def call(kind, item):
        if kind in ECHO_KINDS:
            client.call(ctxt, kind, payload=payload)
            return None
        uuid, flavor = item
        if kind == CLAIM_KIND:
            client.call(ctxt, kind, payload=payload, instance_uuid=uuid)
            return None
        if flavor not in specs:
            specs[flavor] = _spec(flavor)
        answer = scheduler.select_destinations(
            ctxt, specs[flavor], [uuid], return_objects=True,
            return_alternates=True)
        return answer[0][0].service_host

    results = []
    lock = threading.Lock()
    warmed = threading.Barrier(threads + 1)
    go = threading.Event()

    def run(share, warm_share):
        for kind, item in _resting(warm_share, pause):
            try:
                call(kind, item)
            except Exception:   # the timed calls will say what fails
                pass
        warmed.wait()
        go.wait()
        mine = []
        for kind, item in _resting(share, pause):
            started = time.perf_counter()
            host = error = None
            try:
                host = call(kind, item)
            except Exception as failure:  # counted and reported
                error = type(failure).__name__
            mine.append((time.perf_counter() - started, host, error, kind))
        with lock:
            results.extend(mine)

    workers = [threading.Thread(target=run, args=(items[index::threads],
                                                  warm[index::threads]))
               for index in range(threads)]
    for worker in workers:
        worker.start()
    warmed.wait()
    ready.wait(600)
    cpu = time.process_time()
    go.set()
    for worker in workers:
        worker.join()
    queue.put((time.monotonic(), results, time.process_time() - cpu))
    rpc.cleanup()


def _resting(items, pause):
    """``items`` (see :func:`_items`), ``pause`` seconds of rest before
    each whose kind is not the one before's."""
    last = None
    for kind, item in items:
        if pause and last not in (None, kind):
            time.sleep(pause)
        last = kind
        yield kind, item


def _commit_table(engine):
    """Create echo_commit's table (if missing) with its rows."""
    table = sa.Table(COMMIT_TABLE, sa.MetaData(),
                     sa.Column('id', sa.Integer, primary_key=True,
                               autoincrement=False),
                     sa.Column('counter', sa.Integer, nullable=False))
    table.create(engine, checkfirst=True)
    with engine.begin() as connection:
        if not connection.execute(sa.select(sa.func.count()).select_from(
                table)).scalar_one():
            connection.execute(table.insert(), [
                {'id': number, 'counter': 0}
                for number in range(COMMIT_ROWS)])


class _Committer:
    """One committed single-row UPDATE per call, on one connection kept
    in autocommit mode, through its DBAPI cursor (as the claim's hot path
    runs its query: ``scheduler.db.api.driver_rows``); calls take turns
    on it."""

    statement = ('UPDATE %s SET counter = counter + 1 WHERE id = %%s'
                 % COMMIT_TABLE)

    def __init__(self, engine):
        self.connection = engine.connect().execution_options(
            isolation_level='AUTOCOMMIT')
        self.cursor = self.connection.connection.dbapi_connection.cursor()
        self.calls = 0
        self.lock = threading.Lock()

    def commit_one(self):
        with self.lock:
            self.calls += 1
            self.cursor.execute(self.statement, (self.calls % COMMIT_ROWS,))


_ClaimNode = collections.namedtuple('_ClaimNode',
                                    'id uuid host nodename cell_uuid')


class _Claimer:
    """The floor of a select that claims: the scheduler's own SQL claim
    (:func:`scheduler.db.claims.claim_in_sql` as its driver runs it: the
    instance locked, the node's usage checked and raised, the allocation
    inserted, one commit, in one round trip on a kept connection) on the
    next node in turn, answered with as many Selections as a select's
    (the node claimed and the next two as alternates). No host cache,
    filter, weigher, ranking or validation: what any scheduler that
    claims in this database before it answers spends at least. Calls
    take turns on the connection."""

    def __init__(self, engine):
        from scheduler.db import api as db_api
        nodes = models.ComputeNode.__table__
        with engine.connect() as connection:
            # Plain tuples with the attributes Selection.for_host reads (a
            # host state's), not SQLAlchemy rows: a row raises and
            # catches an AttributeError for the missing ``cell_uuid``, a
            # cost no select pays.
            self.nodes = [_ClaimNode(*row, None) for row in connection.execute(
                sa.select(nodes.c.id, nodes.c.uuid, nodes.c.host,
                          nodes.c.hypervisor_hostname)
                .order_by(nodes.c.id))]
        self.kept = db_api.KeptConnection()
        self.calls = 0
        self.lock = threading.Lock()

    def claim(self, spec, instance_uuid):
        """``[[Selection claimed, alternate, alternate]]`` for one
        instance of ``spec``, after its claim on the next node."""
        from scheduler.db import claims
        from scheduler import exception
        from scheduler.objects import selection
        resources = spec.resources()
        with self.lock:
            self.calls += 1
            at = self.calls % len(self.nodes)
            won = claims.claim_in_sql(
                self.nodes[at].id, instance_uuid, resources,
                refuse_settled=True, report={}, kept=self.kept)
        if not won:
            raise exception.NoValidHost(reason='node %s is full'
                                        % self.nodes[at].host)
        return [[selection.Selection.for_host(
            self.nodes[(at + offset) % len(self.nodes)], resources,
            offset == 0) for offset in range(3)]]

    def close(self):
        self.kept.close()


def echo_server(conf_path):
    import oslo_messaging as messaging

    from scheduler.db import api as db_api
    from scheduler import rpc

    class Echo:
        target = messaging.Target(version='1.0')

        def __init__(self, committer, claimer):
            self.committer = committer
            self.claimer = claimer

        @rpc.expose
        def echo(self, ctxt, payload):
            return payload

        @rpc.expose
        def echo_commit(self, ctxt, payload):
            self.committer.commit_one()
            return payload

        @rpc.expose
        def echo_claim(self, ctxt, payload, instance_uuid):
            return self.claimer.claim(payload, instance_uuid)

    _init(conf_path)
    engine = db_api.get_engine()
    _commit_table(engine)
    server = rpc.get_server(messaging.Target(topic=ECHO_TOPIC,
                                             server='echo'),
                            [Echo(_Committer(engine), _Claimer(engine))])
    server.start()
    try:
        while True:
            time.sleep(3600)
    finally:
        server.stop()
        server.wait()


if __name__ == '__main__':
    if sys.argv[1:2] == ['echo-server']:
        echo_server(sys.argv[2])
