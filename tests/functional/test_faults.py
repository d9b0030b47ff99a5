"""Nothing is lost when the database or the broker goes away under load.

Each test runs 2 conductors, 2 schedulers and 4 fake computes against a
database and a broker of the test's own, asks for a few hundred one-instance
builds at an even rate, and takes one service away while they are in
flight: the database (a PostgreSQL cluster of the test's own, down
:data:`DB_DOWNTIME_SECONDS`) or the broker (a RabbitMQ node of the test's
own, down :data:`BROKER_DOWNTIME_SECONDS`; the database is then on the
shared server). Then, within :data:`CONVERGENCE_SECONDS` of the service's
return:

* 0 lost: every accepted build has an instance row;
* 0 stuck: none is still ``building`` (the build timeout is left at its
  default, 0: off, so it cannot hide a stuck build by failing it);
* every instance ends ``active``, or ``error`` with a fault saying why;
* 0 leaked: every allocation belongs to an ``active`` instance on the
  node it is on, usage equals allocations (``checks``), ``gantt-manage db
  check`` is ok;
* every daemon is alive, reports again, and a new build succeeds.

The figures (builds in flight when the service went away, lost, stuck,
leaked, errors by reason, seconds to converge) are printed and added to
the test's report as the section "fault figures": see them with ``-s`` or
``-rA``, e.g.::

    pytest -m faults -rA tests/functional/test_faults.py

Builds go through :func:`submit_builds`, the one place that knows how a
client asks for a build.

The daemons get short oslo.db and oslo.messaging retry settings
(:data:`DB_RETRY_CONF`, :data:`RABBIT_RETRY_CONF`).
"""

import collections
import contextlib
import gc
import re
import threading
import time
import warnings

from oslo_messaging import opts as messaging_opts
from oslo_utils import uuidutils
import pytest

from conductor import rpcapi as conductor_rpcapi
from scheduler import context as gantt_context
from scheduler.objects import request_spec
from scheduler import rpc
from tests.fixtures import postgresql
from tests.fixtures import rabbitmq
from tests.functional import checks
from tests.functional import cluster as cluster_mod

pytestmark = [pytest.mark.functional, pytest.mark.faults]

postgresql_cluster = postgresql.postgresql_cluster

# Seconds after the service is back within which every build must have
# ended (ACTIVE or ERROR) and every stray claim been released. Computes
# retry their reports and sync their instances periodically; this is the
# convergence time the suite promises.
CONVERGENCE_SECONDS = 90
# How long the database is down.
DB_DOWNTIME_SECONDS = 8
# Builds asked for per test, evenly over SUBMIT_SECONDS; the outage
# starts OUTAGE_AFTER_SECONDS after the first request, so builds are asked
# for before, during and after it.
BUILDS = 400
SUBMIT_SECONDS = 12
OUTAGE_AFTER_SECONDS = 6
# Builds asked for after convergence, to show the cluster still serves.
AFTER_BUILDS = 8
AFTER_BUILD_SECONDS = 30

COMPUTES = ['cmp-1', 'cmp-2', 'cmp-3', 'cmp-4']
BIG = dict(vcpus=1024, memory_mb=1 << 20, local_gb=1 << 20)
# A spawn takes long enough that hundreds of builds are in flight (on
# the computes, or reporting) when the service goes away.
SPAWN_CONF = '[fake_virt]\nspawn_time = 8\n'

# oslo.db's [database] options, short: an 8 s outage fits in the retry
# budget (about 1 + 2 * 29 s). Computes count as down after Nova's
# default 60 s without a heartbeat (the base test config says 10 s): a
# broker outage stops every heartbeat, and a deployment does not take
# its hosts for dead after 20 s. Computes sync their instances every 10 s
# (60 s by default), so that a build message the broker lost is found
# within the convergence time.
DB_RETRY_CONF = '''\
[DEFAULT]
service_down_time = 60
sync_power_state_interval = 10
[database]
max_retries = 30
retry_interval = 1
db_max_retries = 30
db_retry_interval = 1
db_inc_retry_interval = true
db_max_retry_interval = 2
'''

# How long the broker node is down, and its clients' reconnect settings
# (oslo.messaging's, short, so that they are back soon after it).
BROKER_DOWNTIME_SECONDS = 20
RABBIT_RETRY_CONF = '''\
[oslo_messaging_rabbit]
rabbit_retry_interval = 1
rabbit_retry_backoff = 1
rabbit_interval_max = 2
heartbeat_timeout_threshold = 10
'''

EXAMPLES = 5
_UUID = re.compile('[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   '[0-9a-f]{12}')


def tiny_spec():
    return request_spec.RequestSpec(
        num_instances=1,
        flavor=request_spec.Flavor(name='tiny', vcpus=1, memory_mb=1,
                                   root_gb=1))


def submit_builds(count):
    """Ask for ``count`` one-instance builds, as a client would: the
    ``schedule_and_build_instances`` call, which answers once the
    conductor recorded the build.

    Returns ``(accepted, refused)``: the UUIDs the cluster took, and
    ``{uuid: reason}`` for those the caller was told were refused (or
    whose answer never came: the client then does not know, and the
    build may exist; if it does, it must end like any other). A build
    that was accepted must end ACTIVE or ERROR.
    """
    api = conductor_rpcapi.ComputeTaskAPI()
    ctxt = gantt_context.get_admin_context()
    accepted, refused = [], {}
    for _ in range(count):
        uuid = uuidutils.generate_uuid()
        try:
            api.schedule_and_build_instances(ctxt, [uuid], tiny_spec())
        except Exception as error:
            refused[uuid] = '%s: %s' % (type(error).__name__, error)
        else:
            accepted.append(uuid)
    return accepted, refused


class Load:
    """Asks for :data:`BUILDS` builds in a thread, evenly over
    :data:`SUBMIT_SECONDS`, through :func:`submit_builds`."""

    BATCH = 10

    def __init__(self, builds=BUILDS, seconds=SUBMIT_SECONDS):
        self.builds = builds
        self.seconds = seconds
        self.accepted = []
        self.refused = {}
        self.errors = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.started = time.monotonic()
        self._thread.start()

    def _run(self):
        batches = -(-self.builds // self.BATCH)
        try:
            for index in range(batches):
                time.sleep(max(0.0, self.started + index * self.seconds
                               / batches - time.monotonic()))
                count = min(self.BATCH, self.builds - index * self.BATCH)
                accepted, refused = submit_builds(count)
                with self._lock:
                    self.accepted.extend(accepted)
                    self.refused.update(refused)
        except Exception as error:
            self.errors.append(error)

    def submitted(self):
        with self._lock:
            return len(self.accepted) + len(self.refused)

    def join(self):
        self._thread.join(self.seconds + 60)
        assert not self._thread.is_alive(), 'the build submitter hangs'
        assert not self.errors, self.errors


def start_cluster(c):
    """2 conductors, 4 computes, 2 schedulers; the daemons by name."""
    daemons = [c.start_conductor_with_conf('conductor-%d' % index,
                                           DB_RETRY_CONF)
               for index in (1, 2)]
    for host in COMPUTES:
        daemons.append(c.start_compute(host, extra_conf=SPAWN_CONF
                                       + DB_RETRY_CONF, **BIG))
    c.wait_for_computes(COMPUTES)
    daemons += [c.start_scheduler('sched-%d' % index,
                                  extra_conf=DB_RETRY_CONF)
                for index in (1, 2)]
    c.discover_hosts()
    return daemons


def ended(c):
    """How many instances are ACTIVE or ERROR."""
    return c.query("SELECT count(*) FROM instances WHERE vm_state IN "
                   "('active', 'error')")[0][0]


def converged(c, accepted):
    rows = {row.uuid: row.vm_state for row in c.instances()}
    return (all(uuid in rows for uuid in accepted)
            and 'building' not in rows.values())


def wait_to_converge(c, accepted, since):
    """Seconds from ``since`` (a monotonic time) until every accepted
    build has ended, or None after :data:`CONVERGENCE_SECONDS`."""
    while time.monotonic() - since < CONVERGENCE_SECONDS:
        if converged(c, accepted):
            return round(time.monotonic() - since, 1)
        time.sleep(1)
    return None


def stuck_on_computes(c, stuck):
    """The stuck builds some compute's log names (the build reached it)."""
    logs = [process.log() for process in c.processes
            if process.name in COMPUTES]
    return [uuid for uuid in stuck if any(uuid in log for log in logs)]


def _reason(fault):
    return _UUID.sub('<uuid>', (fault or '').strip())[:120]


def leaked_allocations(c):
    """``[(consumer, kind, detail)]`` for each allocation not held by an
    ACTIVE instance on the allocation's node."""
    rows = {row.uuid: row for row in c.instances()}
    leaked = []
    for allocation in c.allocations():
        row = rows.get(allocation.consumer_uuid)
        where = '%s/%s' % (allocation.host, allocation.node)
        if row is None:
            kind = 'no such instance'
        elif row.vm_state != 'active':
            kind = 'instance is %s' % row.vm_state
        elif (row.host, row.node) != (allocation.host, allocation.node):
            kind = 'instance on another node'
            where += ', instance on %s/%s' % (row.host, row.node)
        else:
            continue
        leaked.append((allocation.consumer_uuid, kind, where))
    return leaked


def outcome(c, load):
    """The figures of a run's end state (counts and a few examples)."""
    rows = {row.uuid: row for row in c.instances()}
    accepted = set(load.accepted)
    lost = sorted(accepted - set(rows))
    stuck = sorted(uuid for uuid, row in rows.items()
                   if row.vm_state == 'building')
    errors = [row for row in rows.values() if row.vm_state == 'error']
    leaked = leaked_allocations(c)
    return {
        'accepted': len(accepted),
        'refused': len(load.refused),
        'refused reasons': dict(collections.Counter(
            _reason(why) for why in load.refused.values())),
        'unknown instances': len(set(rows) - accepted - set(load.refused)),
        'active': sum(1 for row in rows.values()
                      if row.vm_state == 'active'),
        'lost': len(lost), 'lost examples': lost[:EXAMPLES],
        'stuck': len(stuck), 'stuck uuids': stuck,
        'stuck examples': [(uuid, rows[uuid].host) for uuid in
                           stuck[:EXAMPLES]],
        'error': len(errors),
        'error reasons': dict(collections.Counter(
            _reason(row.fault) for row in errors).most_common(EXAMPLES)),
        'error without fault': sum(1 for row in errors if not row.fault),
        'other states': dict(collections.Counter(
            row.vm_state for row in rows.values() if row.vm_state not in (
                'active', 'error', 'building'))),
        'leaked': len(leaked),
        'leaked reasons': dict(collections.Counter(
            kind for _uuid, kind, _where in leaked)),
        'leaked examples': leaked[:EXAMPLES],
    }


def report(request, title, figures):
    """Print ``figures`` and add them to the test's report."""
    text = '\n'.join('%s: %s' % (name, value)
                     for name, value in figures.items())
    if request.config.getoption('capture') == 'no':
        print('\n%s\n%s' % (title, text))
    else:
        request.node.add_report_section('call', 'fault figures', '%s\n%s'
                                        % (title, text))


def problems_in(figures):
    """The targets ``figures`` miss, one line each."""
    problems = []
    for name in ('lost', 'stuck', 'leaked', 'error without fault',
                 'unknown instances'):
        if figures[name]:
            problems.append('%d %s' % (figures[name], name))
    if figures['other states']:
        problems.append('instances in other states: %s'
                        % figures['other states'])
    if figures['converged after s'] is None:
        problems.append('not converged within %ds' % CONVERGENCE_SECONDS)
    if figures['dead daemons']:
        problems.append('dead daemons: %s' % figures['dead daemons'])
    return problems


def report_counts(c):
    return {row.host: row.report_count for row in c.query(
        'SELECT host, report_count FROM services')}


def assert_serving(c, daemons):
    """Every daemon reports again, and new builds end ACTIVE."""
    before = report_counts(c)
    accepted, refused = submit_builds(AFTER_BUILDS)
    assert not refused, refused
    c.wait_until(lambda: converged(c, accepted), AFTER_BUILD_SECONDS,
                 '%d builds asked for after the outage to end' % AFTER_BUILDS)
    rows = {row.uuid: row for row in c.instances()}
    assert [rows[uuid].vm_state for uuid in accepted] == (
        ['active'] * AFTER_BUILDS), [rows[uuid].fault for uuid in accepted]
    c.wait_until(lambda: all(report_counts(c).get(process.name, 0)
                             > before.get(process.name, 0)
                             for process in daemons), 15,
                 'every daemon to report after the outage')


def run_outage(c, daemons, outage):
    """Cast the load, call ``outage()`` (it takes a service away and
    brings it back, and returns the seconds it was away) once builds are
    in flight, wait for the cluster to converge; the figures."""
    load = Load()
    load.start()
    time.sleep(OUTAGE_AFTER_SECONDS)
    submitted_at_stop = load.submitted()
    in_flight = submitted_at_stop - ended(c)
    down_seconds = outage()
    back_at = time.monotonic()
    submitted_by_then = load.submitted()
    load.join()
    figures = {
        'builds': BUILDS,
        'in flight when the service went away': in_flight,
        'asked for while it was away': submitted_by_then - submitted_at_stop,
        'service away s': round(down_seconds, 1),
        'converged after s': wait_to_converge(c, load.accepted, back_at),
    }
    figures.update(outcome(c, load))
    computes_saw = stuck_on_computes(c, figures['stuck uuids'])
    figures['stuck named in a compute log'] = len(computes_saw)
    figures['dead daemons'] = [process.name for process in daemons
                               if not process.alive()]
    del figures['stuck uuids']
    return figures


def assert_recovered(request, c, daemons, title, figures):
    """Report ``figures``, then assert every target of the module."""
    report(request, title, figures)
    problems = problems_in(figures)
    assert not problems, '%s: %s (figures in the "fault figures" section ' \
        'or with -s)' % (title, '; '.join(problems))
    checks.assert_usage_matches_servers(c)
    checks.assert_db_check_passes(c)
    assert_serving(c, daemons)


@contextlib.contextmanager
def client(rpc_transport, c):
    """This process's RPC transport on the cluster's broker, closed
    before the broker goes: kombu leaves the sockets of connection
    attempts that failed during the outage to the garbage collector,
    which is made to collect them here."""
    rpc_transport(c)
    try:
        yield
    finally:
        rpc.cleanup()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', ResourceWarning)
            gc.collect()


def test_database_restarted_mid_load(tmp_path, postgresql_cluster,
                                     rpc_transport, request):
    pg = postgresql_cluster
    with cluster_mod.Cluster(tmp_path, db_url=pg.create_database(),
                             extra_conf=DB_RETRY_CONF) as c:
        daemons = start_cluster(c)
        with client(rpc_transport, c):
            figures = run_outage(c, daemons, lambda: pg.restart(
                downtime=DB_DOWNTIME_SECONDS))
            assert_recovered(request, c, daemons,
                             'PostgreSQL restarted (%ds down) under %d '
                             'builds' % (DB_DOWNTIME_SECONDS, BUILDS),
                             figures)


def test_database_crashed_mid_load(tmp_path, rpc_transport, request):
    """The database server is killed, as a crash would (``pg_ctl stop -m
    immediate``), while builds are claimed and placed. Every commit that
    waited for the log holds; the schedulers' claims for building
    instances did not wait (``[filter_scheduler] build_claim_flush``), so
    those not yet written when it died are gone, and the conductor must
    find them missing rather than build on them. (The cluster commits
    as a deployment does, waiting for its log, unlike the tests' other
    clusters; the log is not synced to the disk, which a crash of the
    server alone does not need.)"""
    with postgresql.PostgresCluster(
            settings={'synchronous_commit': 'on'}) as pg, \
            cluster_mod.Cluster(tmp_path, db_url=pg.create_database(),
                                extra_conf=DB_RETRY_CONF) as c:
        daemons = start_cluster(c)
        with client(rpc_transport, c):
            figures = run_outage(c, daemons, lambda: pg.restart(
                downtime=DB_DOWNTIME_SECONDS, mode='immediate'))
            figures['claims found lost by a conductor'] = sum(
                process.log().count('holds no claim on')
                for process in c.processes
                if process.name.startswith('conductor'))
            assert_recovered(request, c, daemons,
                             'PostgreSQL crashed (%ds down) under %d '
                             'builds' % (DB_DOWNTIME_SECONDS, BUILDS),
                             figures)


def _broker_restart(node):
    def outage():
        stopped_at = time.monotonic()
        node.stop()
        time.sleep(max(0.0, BROKER_DOWNTIME_SECONDS
                       - (time.monotonic() - stopped_at)))
        node.start()
        return time.monotonic() - stopped_at
    return outage


def test_broker_restarted_mid_load(tmp_path, rpc_transport, request):
    with rabbitmq.node(tmp_path / 'rabbit') as node, cluster_mod.Cluster(
            tmp_path, 'postgresql', transport_url=node.url,
            extra_conf=DB_RETRY_CONF + RABBIT_RETRY_CONF) as c:
        daemons = start_cluster(c)
        with client(rpc_transport, c):
            figures = run_outage(c, daemons, _broker_restart(node))
            assert_recovered(request, c, daemons,
                             'RabbitMQ node restarted (%ds down) under %d '
                             'builds' % (BROKER_DOWNTIME_SECONDS, BUILDS),
                             figures)


def _node_killed(node):
    def outage():
        killed_at = time.monotonic()
        node.kill()
        time.sleep(BROKER_DOWNTIME_SECONDS)
        node.start()
        return time.monotonic() - killed_at
    return outage


def _quorum_queue_client(config):
    """This process's client on quorum queues too, as the daemons."""
    for group, opts in messaging_opts.list_opts():
        if group == 'oslo_messaging_rabbit':
            config.conf.register_opts(opts, group=group)
    config.config(rabbit_quorum_queue=True, rabbit_retry_interval=1,
                  rabbit_retry_backoff=1, rabbit_interval_max=2,
                  group='oslo_messaging_rabbit')


def test_broker_cluster_node_killed_mid_load(tmp_path, rpc_transport,
                                             config, request):
    """Three RabbitMQ nodes, all in ``transport_url``, quorum queues: the
    node every daemon is connected to is SIGKILLed, then brought back."""
    with rabbitmq.cluster(tmp_path / 'rabbit', size=3) as nodes, \
            cluster_mod.Cluster(
                tmp_path, 'postgresql',
                transport_url=rabbitmq.cluster_url(nodes),
                extra_conf=DB_RETRY_CONF + RABBIT_RETRY_CONF
                + 'rabbit_quorum_queue = true\n') as c:
        daemons = start_cluster(c)
        _quorum_queue_client(config)
        with client(rpc_transport, c):
            figures = run_outage(c, daemons, _node_killed(nodes[0]))
            assert_recovered(request, c, daemons,
                             'RabbitMQ cluster of 3, quorum queues, node 1 '
                             'killed (%ds down) under %d builds'
                             % (BROKER_DOWNTIME_SECONDS, BUILDS), figures)
