"""The conductor's RPC endpoints.

``ConductorManager`` is the database conduit of compute agents: they send
heartbeats, inventory and instance state here and never open SQL
themselves. ``ComputeTaskManager`` (namespace ``compute_task``) sees
compute operations through; its methods are thin and hand off to
``conductor/tasks``.
"""

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_utils import uuidutils

from compute import rpcapi as compute_rpcapi
from conductor import rpcapi as conductor_rpcapi
from conductor.tasks import build
from conductor.tasks import live_migrate
from conductor.tasks import migrate
from conductor.tasks import reaper
from conductor.tasks import rebuild
from conductor.tasks import shelve
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler.db import services as db_services
from scheduler import conf
from scheduler import exception
from scheduler.objects import request_spec as request_spec_obj
from scheduler import rpcapi as scheduler_rpcapi
from scheduler import service

CONF = conf.CONF
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

    def periodic_tasks(self):
        return [service.PeriodicTask(
            'conductor_periodic_tasks', CONF.conductor.periodic_task_interval,
            self.compute_task_mgr.run_periodic_tasks)]

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
        # A spawn report counts only for an instance still building: one
        # the conductor timed out meanwhile stays in ERROR, its claim gone,
        # and the compute forgets it when it reads False.
        expected = (db_instances.BUILDING
                    if updates.get('vm_state') == db_instances.ACTIVE
                    else None)
        with db_api.writer() as session:
            applied = db_instances.update(session, instance_uuid,
                                          expected_vm_state=expected,
                                          **updates)
        if not applied:
            LOG.warning('Refused %s for instance %s: it is no longer '
                        'building', updates, instance_uuid)
        return applied


# What operations on existing servers may raise to their caller.
OPERATION_EXCEPTIONS = (
    exception.InvalidRequest,      # InstanceInvalidState, ComputeServiceInUse
    exception.NotFound,            # InstanceNotFound, HostNotFound, ...
    exception.NoValidHost,         # MaxRetriesExceeded too
    exception.MigrationPreCheckError,
)


def _check_uuid(instance_uuid):
    if not isinstance(instance_uuid, str) or \
            not uuidutils.is_uuid_like(instance_uuid):
        raise exception.InvalidRequest(
            reason='instance_uuid must be a UUID string, not %r'
            % (instance_uuid,))


def _check_host(host):
    if host is not None and (not isinstance(host, str) or not host):
        raise exception.InvalidRequest(
            reason='host must be a non-empty string or None')


class ComputeTaskManager:
    """Namespace ``compute_task``: operations seen through to the end."""

    target = messaging.Target(
        namespace=conductor_rpcapi.COMPUTE_TASK_NAMESPACE,
        version=conductor_rpcapi.COMPUTE_TASK_API_VERSION)

    def __init__(self):
        self.build_task = None
        self.migrate_task = None
        self.live_migrate_task = None
        self.rebuild_task = None
        self.shelve_task = None

    def init_host(self):
        # RPC clients need the transport, which exists once the service
        # starts (in the worker process).
        scheduler_api = scheduler_rpcapi.SchedulerAPI()
        compute_api = compute_rpcapi.ComputeAPI()
        self.build_task = build.BuildTask(scheduler_api, compute_api)
        self.migrate_task = migrate.MigrateTask(scheduler_api, compute_api)
        self.live_migrate_task = live_migrate.LiveMigrateTask(scheduler_api,
                                                              compute_api)
        self.rebuild_task = rebuild.RebuildTask(scheduler_api, compute_api)
        self.shelve_task = shelve.ShelveTask(scheduler_api, compute_api)

    def run_periodic_tasks(self, context):
        reaper.reap_stuck_builds(context)
        self.shelve_task.offload_expired(context)

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

    # -- 1.1: operations on existing servers (calls) -------------------------

    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def migrate_server(self, ctxt, instance_uuid, flavor=None, live=False,
                       host=None, force=False):
        _check_uuid(instance_uuid)
        _check_host(host)
        if live:
            if flavor is not None:
                raise exception.InvalidRequest(
                    reason='a live migration cannot resize')
            return self.live_migrate_task.execute(ctxt, instance_uuid, host,
                                                  bool(force))
        if flavor is not None and not isinstance(flavor,
                                                 request_spec_obj.Flavor):
            raise exception.InvalidRequest(
                reason='flavor must be a Flavor object, not %s'
                % type(flavor).__name__)
        if host is not None or force:
            raise exception.InvalidRequest(
                reason='a cold migration or resize takes no host')
        return self.migrate_task.migrate(ctxt, instance_uuid, flavor)

    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def confirm_resize(self, ctxt, instance_uuid):
        _check_uuid(instance_uuid)
        return self.migrate_task.confirm(ctxt, instance_uuid)

    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def revert_resize(self, ctxt, instance_uuid):
        _check_uuid(instance_uuid)
        return self.migrate_task.revert(ctxt, instance_uuid)

    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def rebuild_instance(self, ctxt, instance_uuid, image=None,
                         evacuate=False, host=None, force=False):
        _check_uuid(instance_uuid)
        _check_host(host)
        if image is not None and not isinstance(image,
                                                request_spec_obj.ImageMeta):
            raise exception.InvalidRequest(
                reason='image must be an ImageMeta object, not %s'
                % type(image).__name__)
        if evacuate:
            if image is not None:
                raise exception.InvalidRequest(
                    reason='an evacuation keeps the image')
            return self.rebuild_task.evacuate(ctxt, instance_uuid, host,
                                              bool(force))
        if host is not None or force:
            raise exception.InvalidRequest(
                reason='a rebuild stays on its host; only an evacuation '
                       'takes one')
        return self.rebuild_task.rebuild(ctxt, instance_uuid, image)

    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def shelve_instance(self, ctxt, instance_uuid):
        _check_uuid(instance_uuid)
        return self.shelve_task.shelve(ctxt, instance_uuid)

    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def unshelve_instance(self, ctxt, instance_uuid):
        _check_uuid(instance_uuid)
        return self.shelve_task.unshelve(ctxt, instance_uuid)
