"""The real scheduler, conductor and compute endpoints behind real
oslo.messaging RPC servers on the ``fake://`` transport, for tests that
talk to them as any RPC client would.

Unlike :mod:`tests.unit.inprocess` it runs no heartbeat and no periodic
task, so the database changes only when an RPC method changes it; a test
can snapshot every table around one call::

    with rpc_harness.Harness() as harness:
        before = harness.snapshot()
        harness.call('conductor', 'service_update', host='h', ...)
        assert harness.snapshot() == before
"""

import time

import sqlalchemy as sa
import oslo_messaging as messaging

from compute import manager as compute_manager
from compute import rpcapi as compute_rpcapi
from conductor import manager as conductor_manager
from conductor import rpcapi as conductor_rpcapi
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler import manager as scheduler_manager
from scheduler import rpc
from scheduler import rpcapi as scheduler_rpcapi

COMPUTE_HOST = 'fz1'
CAPACITY = {'vcpus': 4, 'memory_mb': 4096, 'local_gb': 40}

# Each API: (topic, namespace, version, server), as its clients send.
APIS = {
    'scheduler': (scheduler_rpcapi.RPC_TOPIC, None,
                  scheduler_rpcapi.RPC_API_VERSION, None),
    'conductor': (conductor_rpcapi.RPC_TOPIC, None,
                  conductor_rpcapi.CONDUCTOR_API_VERSION, None),
    'compute_task': (conductor_rpcapi.RPC_TOPIC,
                     conductor_rpcapi.COMPUTE_TASK_NAMESPACE,
                     conductor_rpcapi.COMPUTE_TASK_API_VERSION, None),
    'compute': (compute_rpcapi.RPC_TOPIC, None,
                compute_rpcapi.RPC_API_VERSION, COMPUTE_HOST),
}


class Harness:
    """Start the three services' RPC servers; stop them on exit."""

    def __init__(self, timeout=30):
        self.timeout = timeout
        self.servers = []
        self.managers = {}
        self.clients = {}

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self):
        conductor = conductor_manager.ConductorManager()
        self._serve(conductor_rpcapi.RPC_TOPIC, 'conductor', conductor,
                    [conductor, conductor.compute_task_mgr])
        compute = compute_manager.ComputeManager(
            host=COMPUTE_HOST, capacity=CAPACITY, build_failure_rate=0.0)
        self._serve(compute_rpcapi.RPC_TOPIC, COMPUTE_HOST, compute,
                    [compute])
        compute.update_available_resource(gantt_context.get_admin_context())
        scheduler_manager.discover_hosts()
        scheduler = scheduler_manager.SchedulerManager()
        self._serve(scheduler_rpcapi.RPC_TOPIC, 'scheduler', scheduler,
                    [scheduler])
        self.managers = {'conductor': conductor, 'compute': compute,
                         'scheduler': scheduler}
        for name, (topic, namespace, version, server) in APIS.items():
            self.clients[name] = rpc.get_client(messaging.Target(
                topic=topic, namespace=namespace, version=version,
                server=server)).prepare(timeout=self.timeout)

    def _serve(self, topic, host, manager, endpoints):
        manager.init_host()
        server = rpc.get_server(messaging.Target(topic=topic, server=host),
                                endpoints)
        server.start()
        self.servers.append((server, manager))

    def __exit__(self, *exc_info):
        for server, manager in reversed(self.servers):
            server.stop()
            server.wait()
            manager.cleanup_host()
        self.servers = []

    def call(self, api, method, **kwargs):
        result = self.clients[api].call(gantt_context.get_admin_context(),
                                        method, **kwargs)
        if method == 'schedule_and_build_instances':
            # The build goes on after the answer: let it end, so that the
            # next call's snapshot sees only what that call changes.
            self._wait_built(result)
        return result

    def _wait_built(self, instance_uuids, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with db_api.reader() as session:
                rows = db_instances.list_instances(session,
                                                   uuids=instance_uuids)
            if all(row.vm_state != db_instances.BUILDING for row in rows):
                return
            time.sleep(0.02)
        raise AssertionError('builds of %s did not end within %ss'
                             % (instance_uuids, timeout))

    def cast(self, api, method, **kwargs):
        self.clients[api].cast(gantt_context.get_admin_context(), method,
                               **kwargs)

    @staticmethod
    def snapshot():
        """Every row of every table, as sorted tuples per table."""
        tables = {}
        with db_api.reader() as session:
            for table in models.Base.metadata.sorted_tables:
                rows = session.execute(sa.select(table)).all()
                tables[table.name] = sorted(
                    (tuple(map(repr, row)) for row in rows))
        return tables
