"""An in-process Gantt cluster over oslo.messaging's ``fake://`` transport.

The real conductor, scheduler and compute managers run as Services in this
process against the test's SQLite database, so a unit test can follow a
build through every component without a broker::

    with inprocess.Cluster({'h1': {'vcpus': 8}}) as cluster:
        uuids = cluster.boot(vcpus=1, memory_mb=512, root_gb=1, count=2)
        rows = cluster.wait_built(uuids)
"""

import time

from oslo_utils import uuidutils

from compute import manager as compute_manager
from conductor import manager as conductor_manager
from conductor import rpcapi as conductor_rpcapi
from scheduler import config
from scheduler import conf
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler import manager as scheduler_manager
from scheduler.objects import request_spec
from scheduler import rpc
from scheduler import rpcapi as scheduler_rpcapi
from scheduler import service

CONF = conf.CONF


def use_fake_transport(config_fixture):
    """This process's RPC on the ``fake://`` transport until the test
    ends (then cleaned up: a transport left behind would be taken by a
    later test's ``rpc.init``, which makes none while one exists)."""
    config.register_opts()
    config_fixture.config(transport_url='fake://')
    rpc.cleanup()
    rpc.init(CONF)
    config_fixture.addCleanup(rpc.cleanup)


def configure(config_fixture, refresh_interval=0.05, exact_ratios=False):
    """The options in-process cluster tests start from: the fake://
    transport, no reserved memory, 1s reports, a host cache refreshed
    every ``refresh_interval`` seconds; with ``exact_ratios`` CPU and RAM
    allocation ratios of 1.0, so that capacity is what the hosts say."""
    use_fake_transport(config_fixture)
    config_fixture.config(reserved_host_memory_mb=0, report_interval=1)
    config_fixture.config(host_state_refresh_interval=refresh_interval,
                          group='scheduler')
    if exact_ratios:
        config_fixture.config(cpu_allocation_ratio=1.0,
                              ram_allocation_ratio=1.0)
    return config_fixture


class Cluster:
    """``hosts`` maps host names to their capacity (``vcpus``,
    ``memory_mb``, ``local_gb``) and optionally ``build_failure_rate``."""

    def __init__(self, hosts):
        self.hosts = hosts
        self.services = []

    def __enter__(self):
        try:
            self._start_all()
        except BaseException:
            # Services already running would otherwise heartbeat into the
            # databases of the tests that come next.
            self.__exit__(None, None, None)
            raise
        return self

    def _start_all(self):
        self._start('conductor', 'gantt-conductor',
                    conductor_rpcapi.RPC_TOPIC,
                    conductor_manager.ConductorManager(),
                    service.db_reporter('conductor', 'gantt-conductor',
                                        conductor_rpcapi.RPC_TOPIC))
        for host, shape in self.hosts.items():
            capacity = dict(shape)
            failure_rate = capacity.pop('build_failure_rate', None)
            agent = compute_manager.ComputeManager(
                host=host, capacity=capacity,
                build_failure_rate=failure_rate)
            self._start(host, compute_manager.BINARY, 'compute', agent,
                        agent.heartbeat)
        scheduler_manager.discover_hosts()
        self._start('scheduler', 'gantt-scheduler',
                    scheduler_rpcapi.RPC_TOPIC,
                    scheduler_manager.SchedulerManager(),
                    service.db_reporter('scheduler', 'gantt-scheduler',
                                        scheduler_rpcapi.RPC_TOPIC))

    def _start(self, host, binary, topic, manager, reporter):
        server = service.Service(host, binary, topic, manager,
                                 reporter=reporter)
        server.start()
        self.services.append(server)
        if binary == compute_manager.BINARY:
            # The agent's first inventory report runs in a thread; wait
            # for it so that discovery sees the node.
            self.wait_until(lambda: self._node_reported(host), 10,
                            'the inventory of %s' % host)

    @staticmethod
    def _node_reported(host):
        with db_api.reader() as session:
            return any(row.host == host
                       for row in db_compute_nodes.get_nodes(session))

    def __exit__(self, *exc_info):
        # The conductor (started first) goes last: the others call it.
        service.stop_all(self.services[1:])
        service.stop_all(self.services[:1])
        rpc.cleanup()

    @staticmethod
    def wait_until(predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.02)
        raise AssertionError('timed out waiting for %s' % what)

    def wait_scheduler_sees(self, nodename, predicate, what,
                            timeout=10):
        """Wait until ``predicate(state)`` holds for ``nodename``'s row in
        the scheduler's host cache (what another service changed in SQL
        reaches it at its next refresh)."""
        scheduler = next(server for server in self.services
                         if server.binary == 'gantt-scheduler')

        def seen():
            table = scheduler.manager.driver.host_manager.snapshot()
            return predicate(
                table.states[table.rows_by_nodename[nodename][0]])

        self.wait_until(seen, timeout, 'the scheduler to see %s %s'
                        % (nodename, what))

    @staticmethod
    def spec(vcpus, memory_mb, root_gb, count=1, flavor_extra_specs=None,
             **kwargs):
        return request_spec.RequestSpec(
            num_instances=count,
            flavor=request_spec.Flavor(
                vcpus=vcpus, memory_mb=memory_mb, root_gb=root_gb,
                extra_specs=dict(flavor_extra_specs or {})), **kwargs)

    def boot(self, vcpus, memory_mb, root_gb, count=1, **kwargs):
        uuids = [uuidutils.generate_uuid() for _ in range(count)]
        conductor_rpcapi.ComputeTaskAPI().schedule_and_build_instances(
            gantt_context.get_admin_context(), uuids,
            self.spec(vcpus, memory_mb, root_gb, count, **kwargs))
        return uuids

    def cast_boot(self, vcpus, memory_mb, root_gb, count=1, **kwargs):
        """Like :meth:`boot` through the 1.0 ``build_instances`` cast."""
        uuids = [uuidutils.generate_uuid() for _ in range(count)]
        conductor_rpcapi.ComputeTaskAPI().build_instances(
            gantt_context.get_admin_context(), uuids,
            self.spec(vcpus, memory_mb, root_gb, count, **kwargs))
        return uuids

    def wait_built(self, uuids, timeout=30):
        """Wait until no instance of ``uuids`` is building; their rows."""
        def rows():
            with db_api.reader() as session:
                return db_instances.list_instances(session, uuids=uuids)

        self.wait_until(
            lambda: len(rows()) == len(uuids) and all(
                r.vm_state != db_instances.BUILDING for r in rows()),
            timeout, 'instances %s to be built' % uuids)
        return {row.uuid: row for row in rows()}
