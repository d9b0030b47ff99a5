"""The conductor's RPC endpoints.

``ConductorManager`` is the database conduit of compute agents: they send
heartbeats, inventory and instance state here and never open SQL
themselves. ``ComputeTaskManager`` (namespace ``compute_task``) sees
compute operations through; its methods are thin and hand off to
``conductor/tasks``.
"""

import oslo_messaging as messaging
from oslo_log import log as logging

from compute import rpcapi as compute_rpcapi
from conductor import rpcapi as conductor_rpcapi
from conductor.tasks import build
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler.db import services as db_services
from scheduler import exception
from scheduler.objects import request_spec as request_spec_obj
from scheduler import rpcapi as scheduler_rpcapi
from scheduler import service

LOG = logging.getLogger(__name__)

# What a compute may change on an instance it runs.
COMPUTE_WRITABLE_FIELDS = ('vm_state', 'task_state', 'fault', 'launched_at')


class ConductorManager(service.Manager):
    """Mission: conduct things, so that computes never touch SQL."""

    target = messaging.Target(version=conductor_rpcapi.CONDUCTOR_API_VERSION)

    def __init__(self):
        self.compute_task_mgr = ComputeTaskManager()
        self.additional_endpoints = [self.compute_task_mgr]

    def init_host(self):
        self.compute_task_mgr.init_host()

    @messaging.expected_exceptions(exception.InvalidRequest)
    def service_update(self, ctxt, host, binary, topic):
        if not all(isinstance(v, str) and v for v in (host, binary, topic)):
            raise exception.InvalidRequest(
                reason='host, binary and topic must be non-empty strings')
        with db_api.writer() as session:
            row = db_services.report_alive(session, host, binary, topic)
        return {'disabled': bool(row.disabled)}

    @messaging.expected_exceptions(exception.InvalidRequest)
    def compute_node_update(self, ctxt, host, nodes):
        if not isinstance(nodes, list) or not all(
                isinstance(n, dict) and isinstance(n.get('inventory'), dict)
                and n.get('uuid') and n.get('nodename') for n in nodes):
            raise exception.InvalidRequest(
                reason='nodes must be a list of {uuid, nodename, inventory}')
        try:
            with db_api.writer() as session:
                for node in nodes:
                    db_compute_nodes.report_inventory(
                        session, node['uuid'], host, node['nodename'],
                        node['inventory'])
        except ValueError as error:
            raise exception.InvalidRequest(reason=str(error))
        return len(nodes)

    @messaging.expected_exceptions(exception.InvalidRequest,
                                   exception.InstanceNotFound)
    def instance_update(self, ctxt, instance_uuid, updates):
        if not isinstance(updates, dict) or \
                set(updates) - set(COMPUTE_WRITABLE_FIELDS):
            raise exception.InvalidRequest(
                reason='a compute may update only %s'
                % ', '.join(COMPUTE_WRITABLE_FIELDS))
        updates = dict(updates)
        if 'launched_at' in updates:
            updates['launched_at'] = models.utcnow()
        with db_api.writer() as session:
            db_instances.update(session, instance_uuid, **updates)
        return True


class ComputeTaskManager:
    """Namespace ``compute_task``: operations seen through to the end."""

    target = messaging.Target(
        namespace=conductor_rpcapi.COMPUTE_TASK_NAMESPACE,
        version=conductor_rpcapi.COMPUTE_TASK_API_VERSION)

    def __init__(self):
        self.build_task = None

    def init_host(self):
        # RPC clients need the transport, which exists once the service
        # starts (in the worker process).
        self.build_task = build.BuildTask(scheduler_rpcapi.SchedulerAPI(),
                                          compute_rpcapi.ComputeAPI())

    def build_instances(self, ctxt, instance_uuids, request_spec,
                        host_lists=None, failure=None):
        if not isinstance(request_spec, request_spec_obj.RequestSpec):
            LOG.error('build_instances refused: request_spec is %s, not a '
                      'RequestSpec', type(request_spec).__name__)
            return
        if failure is None:
            self.build_task.build(ctxt, list(instance_uuids), request_spec)
            return
        for uuid in instance_uuids:
            self.build_task.reschedule(ctxt, uuid, request_spec,
                                       (host_lists or [[]])[0], failure)
