"""gantt-demo: the whole Gantt path in one process, with no setup.

Starts a conductor, a scheduler and ``--hosts`` fake compute agents as
in-process services, boots ``--servers`` servers in a mix of sizes through
the real conductor -> scheduler -> compute path, then prints where each one
landed and the usage of every host. By default it uses a throw-away SQLite
file and oslo.messaging's in-process ``fake://`` transport; with
``--transport-url`` and ``--database-connection`` it runs the same against
RabbitMQ and PostgreSQL or MariaDB. On a real broker it removes its
queues and exchange when it ends, also after an error or a SIGTERM
(see :mod:`scheduler.cmd.demo_broker`; a queue something else uses is
left and named), as it drops its database::

    gantt-demo
    gantt-demo --hosts 10 --servers 30 \\
        --transport-url rabbit://guest:guest@127.0.0.1:5672/ \\
        --database-connection postgresql+psycopg2://root@127.0.0.1/test
"""

import logging as std_logging
import random
import signal
import sys
import tempfile
import time

from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import uuidutils

from compute import manager as compute_manager
from conductor import manager as conductor_manager
from conductor import rpcapi as conductor_rpcapi
from scheduler import conf
from scheduler import config
from scheduler.cmd import deferred_signal
from scheduler.cmd import demo_broker
from scheduler.cmd import demo_database
from scheduler.cmd import manage
from scheduler.cmd import manage_server
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import migration
from scheduler import exception
from scheduler import manager as scheduler_manager
from scheduler import notifications
from scheduler import objects
from scheduler.objects import request_spec as request_spec_obj
from scheduler import rpc
from scheduler import rpcapi as scheduler_rpcapi
from scheduler import service
from scheduler.sim import cloud as sim_cloud

CONF = conf.CONF
LOG = logging.getLogger(__name__)

cli_opts = [
    cfg.IntOpt('hosts', default=50, min=1,
               help='Number of fake compute hosts to run.'),
    cfg.IntOpt('servers', default=100, min=0,
               help='Number of servers to boot.'),
    cfg.StrOpt('transport-url', dest='demo_transport_url',
               default='fake://',
               help='Transport URL; fake:// runs in-process.'),
    cfg.StrOpt('database-connection', dest='demo_database_connection',
               help='SQLAlchemy URL; default: a temporary SQLite file.'),
    cfg.IntOpt('seed', help='Random seed, for a repeatable mix of sizes.'),
    cfg.IntOpt('timeout', default=300, min=1,
               help='Seconds to wait for the servers to finish building.'),
]

# (name, vcpus, memory_mb, root_gb): the flavors the demo boots, and
# the host shapes its computes cycle through (gantt-sim's defaults too).
FLAVORS = sim_cloud.FLAVORS
HOST_SHAPES = sim_cloud.HOST_SHAPES
CONDUCTOR_HOST = 'demo-conductor'
SCHEDULER_HOST = 'demo-scheduler'
COMPUTE_TOPIC = 'compute'


def _compute_host(index):
    return 'demo-host-%03d' % (index + 1)


def _services(host_count):
    """``(host, topic)`` of every service the demo starts."""
    return ([(CONDUCTOR_HOST, conductor_rpcapi.RPC_TOPIC),
             (SCHEDULER_HOST, scheduler_rpcapi.RPC_TOPIC)]
            + [(_compute_host(index), COMPUTE_TOPIC)
               for index in range(host_count)])


def _wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _termination.check()
        if predicate():
            return
        time.sleep(0.1)
    raise exception.GanttException('timed out after %ss waiting for %s'
                                   % (timeout, what))


def _start(services_started, host, binary, topic, manager, reporter):
    server = service.Service(host, binary, topic, manager, reporter=reporter)
    # Listed before it starts: a SIGTERM in the middle of its start (its
    # queue declared, its threads running) still stops it, where a
    # service left running would keep the process from ever ending.
    services_started.append(server)
    server.start()
    _termination.check()


def _start_cluster(started, host_count):
    """Start the conductor, the computes and the scheduler, each added
    to ``started`` (the caller's, which stops them) as it starts."""
    _start(started, CONDUCTOR_HOST, 'gantt-conductor',
           conductor_rpcapi.RPC_TOPIC, conductor_manager.ConductorManager(),
           service.db_reporter(CONDUCTOR_HOST, 'gantt-conductor',
                               conductor_rpcapi.RPC_TOPIC))
    for index in range(host_count):
        host = _compute_host(index)
        agent = compute_manager.ComputeManager(
            host=host, capacity=HOST_SHAPES[index % len(HOST_SHAPES)])
        _start(started, host, compute_manager.BINARY, COMPUTE_TOPIC, agent,
               agent.heartbeat)

    def all_reported():
        with db_api.reader() as session:
            return len(db_compute_nodes.get_generations(session)) >= \
                host_count
    _wait_for(all_reported, 60, 'the compute hosts to report')
    scheduler_manager.discover_hosts()
    _start(started, SCHEDULER_HOST, 'gantt-scheduler',
           scheduler_rpcapi.RPC_TOPIC, scheduler_manager.SchedulerManager(),
           service.db_reporter(SCHEDULER_HOST, 'gantt-scheduler',
                               scheduler_rpcapi.RPC_TOPIC))


def _boot(server_count, rng):
    """Ask for builds of 1-3 servers each (each answered once the
    conductor recorded it); return all instance UUIDs and how many of
    each flavor were asked for."""
    api = conductor_rpcapi.ComputeTaskAPI()
    ctxt = gantt_context.get_admin_context()
    uuids = []
    flavors = dict.fromkeys(FLAVORS, 0)
    while len(uuids) < server_count:
        _termination.check()
        count = min(rng.randint(1, 3), server_count - len(uuids))
        name, vcpus, ram, disk = rng.choice(FLAVORS)
        spec = request_spec_obj.RequestSpec(
            num_instances=count, project_id='demo',
            flavor=request_spec_obj.Flavor(name=name, vcpus=vcpus,
                                           memory_mb=ram, root_gb=disk))
        batch = [uuidutils.generate_uuid() for _ in range(count)]
        api.schedule_and_build_instances(ctxt, batch, spec)
        uuids.extend(batch)
        flavors[(name, vcpus, ram, disk)] += count
    return uuids, flavors


def _report(uuids, flavors, elapsed):
    """Print the flavors booted, where each server landed and every
    host's usage; return ``{vm_state: count}``."""
    with db_api.reader() as session:
        rows = {row.uuid: row
                for row in db_instances.list_instances(session, uuids=uuids)}
    print('Flavors booted: %s.' % ', '.join(
        '%d %s (%d vCPU, %d MB RAM, %d GB disk)' % (count, name, vcpus, ram,
                                                   disk)
        for (name, vcpus, ram, disk), count in flavors.items() if count))
    print()
    print(manage_server.landing_table(uuids, rows))
    print()
    manage.host_list()
    print('(used/capacity; capacity is effective: total x allocation '
          'ratio - reserved, what the claims allow)')
    states = {}
    for row in rows.values():
        states[row.vm_state] = states.get(row.vm_state, 0) + 1
    print()
    print('%d servers on %d hosts in %.1fs: %s' % (
        len(rows), CONF.hosts, elapsed,
        ', '.join('%d %s' % (n, s) for s, n in sorted(states.items()))))
    return states


def _quiet_logging_defaults():
    """The demo's output is its report: logs go to stderr, and Gantt's own
    INFO lines only with --debug."""
    config.register_opts()
    levels = CONF.default_log_levels + ['scheduler=WARN', 'conductor=WARN',
                                        'compute=WARN']
    CONF.set_default('default_log_levels', levels)
    CONF.set_default('use_stderr', True)


class _OneProcessCallsFilter(std_logging.Filter):
    """Drops oslo.messaging's "Number of call queues is N ... There could
    be a leak": it counts the calls waiting for a reply in one process,
    and the demo runs the conductor, the scheduler and every compute in
    one, whose calls (fifty computes' reports, the builds' updates) are
    many at once without any leak. Each daemon has a process of its own
    outside the demo, and the warning stays there."""

    def filter(self, record):
        return not record.getMessage().startswith('Number of call queues')


def _clean_broker():
    """Remove the demo's queues and exchange from a real broker, saying
    so (and what was left because something else uses it)."""
    try:
        left = demo_broker.remove(CONF.transport_url, _services(CONF.hosts),
                                  CONF.control_exchange)
    except exception.GanttException as error:
        sys.stderr.write('gantt-demo: warning: %s\n' % error)
        return
    if left is None:
        return
    if left:
        sys.stderr.write('gantt-demo: warning: left on the broker, in use '
                         'by others: %s\n' % ', '.join(left))
    print('The demo removed its queues and its exchange from %s.'
          % config.redact_transport_url(CONF.transport_url))


def _terminate(signum):
    """SIGTERM ends the demo as an error does: its cleaning runs (the
    services stop, its queues and its database go)."""
    sys.stderr.write('gantt-demo: terminated (signal %d)\n' % signum)
    raise SystemExit(128 + signum)


# The SIGTERM handler main() sets: the demo ends at the main thread's
# next step (a service started, a build asked for, a poll of a wait),
# never inside one. Raised where it landed, the SystemExit once cut an
# RPC call's frame short on a pooled connection: the next thread that
# published on it waited for its confirm until the broker dropped the
# connection, minutes later, and the demo with it.
_termination = deferred_signal.Deferred(_terminate)


def main(argv=None):
    _quiet_logging_defaults()
    demo_broker.shorten_transient_queues()
    global _termination
    _termination = deferred_signal.Deferred(_terminate)
    signal.signal(signal.SIGTERM, _termination)
    config.parse_args(argv or sys.argv, cli_opts=cli_opts,
                      description='Run Gantt end to end in one process.')
    std_logging.getLogger('oslo_messaging._drivers.amqpdriver').addFilter(
        _OneProcessCallsFilter())
    # Its daemons, and its own calls (the builds it asks for), as clients.
    demo_broker.pool_per_service(len(_services(CONF.hosts)) + 1)
    objects.register_all()
    workdir = tempfile.TemporaryDirectory(prefix='gantt-demo-')
    url = CONF.demo_database_connection or \
        'sqlite:///%s/gantt.sqlite' % workdir.name
    CONF.set_override('transport_url', CONF.demo_transport_url)
    try:
        with demo_database.own_database(url) as demo_url:
            CONF.set_override('connection', demo_url, group='database')
            states = _run_demo(random.Random(CONF.seed))
    except exception.GanttException as error:
        sys.stderr.write('gantt-demo: error: %s\n' % error)
        return 1
    finally:
        workdir.cleanup()
    return 0 if set(states) <= {db_instances.ACTIVE,
                                db_instances.ERROR} else 1


def _run_demo(rng):
    """Start everything, boot, report; the servers' states."""
    started = []
    try:
        migration.db_sync()
        _termination.check()
        rpc.init(CONF, check_broker=True)
        notifications.init(CONF)
        _termination.check()
        _start_cluster(started, CONF.hosts)
        begin = time.monotonic()
        uuids, flavors = _boot(CONF.servers, rng)

        def done():
            with db_api.reader() as session:
                rows = db_instances.list_instances(session, uuids=uuids)
            return len(rows) == len(uuids) and all(
                r.vm_state != db_instances.BUILDING for r in rows)
        _wait_for(done, CONF.timeout, 'the servers to finish building')
        return _report(uuids, flavors, time.monotonic() - begin)
    finally:
        # Each stops before what it calls, so that the requests it has in
        # flight can end (a call to a stopped service would wait its
        # rpc_response_timeout): the computes call the conductor, which
        # calls the scheduler, which calls neither.
        by_binary = {}
        for server in started:
            by_binary.setdefault(server.binary, []).append(server)
        service.stop_all(by_binary.pop(compute_manager.BINARY, []))
        service.stop_all(by_binary.pop('gantt-conductor', []))
        service.stop_all([server for servers in by_binary.values()
                          for server in servers])
        notifications.cleanup()
        rpc.cleanup()
        db_api.dispose_engine()
        _clean_broker()


if __name__ == '__main__':
    sys.exit(main())
