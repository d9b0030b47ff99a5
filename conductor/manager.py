"""The conductor's RPC endpoints.

``ConductorManager`` is the database conduit of compute agents: they send
heartbeats, inventory and instance state here and never open SQL
themselves. ``ComputeTaskManager`` (namespace ``compute_task``) sees
compute operations through; its methods are thin and hand off to
``conductor/tasks``.

Only the methods marked ``@rpc.expose`` are callable over RPC. Each checks
its arguments first (``conductor/payloads.py`` for what computes send,
``scheduler/validation.py`` and ``RequestSpec.validate`` for the rest):
a call gets InvalidRequest naming the field, a cast (``build_instances``)
is logged at ERROR and dropped, and nothing is written for either. A
compute's build failure counts only for an instance still building on
the node it names.

With ``[api_database]`` the conductor is a super-conductor: builds go
through :mod:`conductor.tasks.super_build`, build requests nobody works
on are resumed by :mod:`conductor.tasks.resume_builds` (a periodic task
of their own, also run at start), and operations on existing servers
run in the database of the server's cell
(:mod:`conductor.tasks.instance_cell`).
"""

import oslo_messaging as messaging
from oslo_log import log as logging

from compute import rpcapi as compute_rpcapi
from conductor import heartbeats
from conductor import payloads
from conductor import rpcapi as conductor_rpcapi
from conductor.tasks import build
from conductor.tasks import instance_cell
from conductor.tasks import instance_sync
from conductor.tasks import delete
from conductor.tasks import live_migrate
from conductor.tasks import migrate
from conductor.tasks import reaper
from conductor.tasks import rebuild
from conductor.tasks import resume_builds
from conductor.tasks import shelve
from conductor.tasks import super_build
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import inventories as db_inventories
from scheduler.db import models
from scheduler import conf
from scheduler import exception
from scheduler.objects import request_spec as request_spec_obj
from scheduler.objects import selection as selection_obj
from scheduler import rpc
from scheduler import rpcapi as scheduler_rpcapi
from scheduler import service
from scheduler import validation

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# A service version fits an SQL INTEGER.
MAX_SERVICE_VERSION = 2 ** 31 - 1


class ConductorManager(service.Manager):
    """Mission: conduct things, so that computes never touch SQL."""

    target = messaging.Target(version=conductor_rpcapi.CONDUCTOR_API_VERSION)

    def __init__(self):
        if db_api.api_database_configured():
            resume_builds.check_options()
        self.compute_task_mgr = ComputeTaskManager()
        self.additional_endpoints = [self.compute_task_mgr]
        self.heartbeats = heartbeats.HeartbeatBatcher()

    def init_host(self):
        self.compute_task_mgr.init_host()

    def cleanup_host(self):
        self.compute_task_mgr.cleanup_host()

    def periodic_tasks(self):
        tasks = [service.PeriodicTask(
            'conductor_periodic_tasks', CONF.conductor.periodic_task_interval,
            self.compute_task_mgr.run_periodic_tasks)]
        if db_api.api_database_configured():
            # A super-conductor: at start, then every poll interval.
            tasks.append(service.PeriodicTask(
                'build_requests', CONF.conductor.build_request_poll_interval,
                self.compute_task_mgr.resume_builds, run_immediately=True))
        return tasks

    @rpc.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    def service_update(self, ctxt, host, binary, topic, version=None):
        payloads.checked_service(host, binary, topic)
        validation.integer('version', version, 0, MAX_SERVICE_VERSION,
                           nullable=True)
        # Written with the heartbeats of other computes arriving at the
        # same time, in one transaction (conductor/heartbeats.py).
        return {'disabled': self.heartbeats.report(host, binary, topic,
                                                   version)}

    @rpc.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    def compute_node_update(self, ctxt, host, nodes):
        nodes = payloads.checked_nodes(host, nodes)
        with db_api.writer() as session:
            for index, node in enumerate(nodes):
                _check_node_owner(session, 'nodes[%d]' % index, host, node)
            for node in nodes:
                node_id = db_compute_nodes.report_inventory(
                    session, node['uuid'], host, node['nodename'],
                    node['inventory'])
                # 1.5: the node's other classes and its traits (a node
                # reported without them keeps its own).
                db_inventories.report(session, node_id,
                                      node.get('inventories'),
                                      node.get('traits'))
        return len(nodes)

    @rpc.expose
    @messaging.expected_exceptions(exception.InvalidRequest,
                                   exception.InstanceNotFound)
    def instance_update(self, ctxt, instance_uuid, updates, host=None,
                        node=None):
        """A compute reports a spawn: ``building`` -> ``active``; since
        1.6 it names the ``host`` and ``node`` it spawned on."""
        validation.uuid('instance_uuid', instance_uuid)
        updates = payloads.checked_instance_updates(updates)
        if (host is None) != (node is None):
            validation.refuse('host' if host is None else 'node',
                              'is missing: a spawn report names both the '
                              'host and the node, or neither')
        if host is not None:
            validation.name('host', host)
            validation.name('node', node)
        if 'launched_at' in updates:
            updates['launched_at'] = models.utcnow()
        # A spawn report counts only for an instance still building there
        # and not being deleted. One the conductor timed out meanwhile
        # stays in ERROR, its claim gone; one moved to another host (its
        # build message came after the move, or came twice) stays where
        # its claim is. The compute forgets it when it reads False.
        spawned = updates.get('vm_state') == db_instances.ACTIVE
        if spawned:
            # Built: its alternates are of no more use.
            updates['build_alternates'] = None
        applied = _update_instance(instance_uuid, spawned, updates, host,
                                   node)
        if not applied and host is None:
            LOG.warning('Refused %s for instance %s: it is no longer '
                        'building', updates, instance_uuid)
        elif not applied:
            LOG.warning('Refused %s for instance %s from %s/%s: it is no '
                        'longer building there', updates, instance_uuid,
                        host, node)
        return applied

    @rpc.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    def sync_instances(self, ctxt, host, instances, spawning=None):
        """The instances a compute runs (``{uuid: node}``) and, since
        1.4, those it is still spawning; answers ``{'activated': [...],
        'forget': [...], 'lost': [...]}`` (see
        :mod:`conductor.tasks.instance_sync`). The builds found lost
        move to their next alternate, as a failed spawn does."""
        validation.name('host', host)
        validation.mapping('instances', instances,
                           max_items=validation.MAX_INSTANCES_PER_NODE)
        for uuid, node in instances.items():
            validation.uuid('instances key', uuid)
            validation.name('instances[%s]' % uuid, node)
        if spawning is not None:
            validation.sequence('spawning', spawning,
                                max_items=validation.MAX_INSTANCES_PER_NODE)
            for index, uuid in enumerate(spawning):
                validation.uuid('spawning[%d]' % index, uuid)
        outcome = instance_sync.sync_host_instances(host, instances,
                                                    spawning)
        build_task = self.compute_task_mgr.build_task
        for lost in outcome.pop('lost_builds', ()):
            # Not in the compute's call: claims and casts take a while.
            build_task.in_background(build_task.reschedule_lost, ctxt, lost)
        return outcome


@db_api.retry_on_db_error
def _update_instance(instance_uuid, spawned, updates, host=None, node=None):
    """Apply a compute's change; whether it holds. A spawn report that
    finds the instance already active on the same host and node (the
    same report again: a retry after a lost answer or connection)
    holds."""
    with db_api.writer() as session:
        if db_instances.update(
                session, instance_uuid,
                expected_vm_state=db_instances.BUILDING if spawned else None,
                refused_task_state=db_instances.DELETING if spawned else None,
                expected_host=host, expected_node=node, **updates):
            return True
        row = db_instances.get(session, instance_uuid)
        return (updates.get('vm_state') == db_instances.ACTIVE ==
                row.vm_state and
                (host is None or (row.host, row.node) == (host, node)))


def _check_node_owner(session, field, host, node):
    """A node keeps its host, and a host's nodename its uuid."""
    by_uuid = db_compute_nodes.get_node_by_uuid(session, node['uuid'])
    if by_uuid is not None and by_uuid.host != host:
        validation.refuse('%s.uuid' % field, 'is a node of host %s, not %s'
                          % (by_uuid.host, host))
    by_name = db_compute_nodes.get_node_by_name(session, host,
                                                node['nodename'])
    if by_name is not None and by_name.uuid != node['uuid']:
        validation.refuse('%s.nodename' % field, 'is node %s of host %s'
                          % (by_name.uuid, host))


# What operations on existing servers may raise to their caller.
OPERATION_EXCEPTIONS = (
    exception.InvalidRequest,      # InstanceInvalidState, ComputeServiceInUse
    exception.NotFound,            # InstanceNotFound, HostNotFound, ...
    exception.NoValidHost,         # MaxRetriesExceeded too
    exception.MigrationPreCheckError,
    exception.DatabaseUnavailable,  # the API database (finding the cell)
)


def _check_flags(**flags):
    for name, value in flags.items():
        validation.choice(name, value, (True, False))


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
        self.delete_task = None
        self.cell_computes = None

    def init_host(self):
        # RPC clients need the transport, which exists once the service
        # starts (in the worker process).
        scheduler_api = scheduler_rpcapi.SchedulerAPI()
        compute_api = compute_rpcapi.ComputeAPI()
        # With [api_database] this is the super-conductor: builds are
        # accepted in the API database and created in their host's cell.
        build_class = super_build.SuperBuildTask \
            if db_api.api_database_configured() else build.BuildTask
        self.build_task = build_class(scheduler_api, compute_api)
        self.migrate_task = migrate.MigrateTask(scheduler_api, compute_api)
        self.live_migrate_task = live_migrate.LiveMigrateTask(scheduler_api,
                                                              compute_api)
        self.rebuild_task = rebuild.RebuildTask(scheduler_api, compute_api)
        self.shelve_task = shelve.ShelveTask(scheduler_api, compute_api)
        self.delete_task = delete.DeleteTask(scheduler_api, compute_api)
        self.cell_computes = instance_cell.CellComputes(compute_api)

    def cleanup_host(self):
        if self.build_task is not None:
            self.build_task.stop()

    def resume_builds(self, context):
        """The super-conductor's build requests: renew those in hand,
        resume those nobody works on (:mod:`conductor.tasks.resume_builds`)."""
        resumer = getattr(self.build_task, 'resumer', None)
        if resumer is not None:
            resumer.run(context)

    def run_periodic_tasks(self, context):
        reaper.reap_stuck_builds(context)
        reaper.reap_stray_claims(context)
        self.delete_task.finish_interrupted(context)
        self.shelve_task.offload_expired(context)

    @rpc.expose
    @messaging.expected_exceptions(exception.InvalidRequest,
                                   exception.DatabaseUnavailable)
    def schedule_and_build_instances(self, ctxt, instance_uuids,
                                     request_spec):
        """1.2: accept a build (its instances recorded), answer, then
        schedule it in the background; the instance UUIDs.

        Asking again with the same request is safe: it is accepted and
        scheduled once.
        """
        instance_uuids = _checked_build(instance_uuids, request_spec,
                                        None, None)
        if self.build_task.accept(instance_uuids, request_spec):
            self.build_task.schedule_later(ctxt, instance_uuids,
                                           request_spec)
        return list(instance_uuids)

    @rpc.expose
    def build_instances(self, ctxt, instance_uuids, request_spec,
                        host_lists=None, failure=None):
        """Cast: a first build (``failure`` None), or a compute's report
        that the build of ``instance_uuids[0]`` failed on it."""
        try:
            instance_uuids = _checked_build(instance_uuids, request_spec,
                                            host_lists, failure)
        except exception.InvalidRequest as error:
            LOG.error('Dropped build_instances: %s', error)
            return
        if failure is None:
            self.build_task.build(ctxt, instance_uuids, request_spec)
            return
        for uuid in instance_uuids:
            self.build_task.reschedule(ctxt, uuid, request_spec,
                                       (host_lists or [[]])[0], failure)

    # -- 1.1: operations on existing servers (calls) -------------------------

    @rpc.expose
    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def migrate_server(self, ctxt, instance_uuid, flavor=None, live=False,
                       host=None, force=False):
        validation.uuid('instance_uuid', instance_uuid)
        validation.name('host', host, nullable=True)
        _check_flags(live=live, force=force)
        if live:
            if flavor is not None:
                raise exception.InvalidRequest(
                    reason='a live migration cannot resize')
            with instance_cell.target(instance_uuid):
                return self.live_migrate_task.execute(ctxt, instance_uuid,
                                                      host, force)
        if flavor is not None:
            request_spec_obj.validate_flavor(flavor)
        if host is not None or force:
            raise exception.InvalidRequest(
                reason='a cold migration or resize takes no host')
        with instance_cell.target(instance_uuid):
            return self.migrate_task.migrate(ctxt, instance_uuid, flavor)

    @rpc.expose
    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def confirm_resize(self, ctxt, instance_uuid):
        validation.uuid('instance_uuid', instance_uuid)
        with instance_cell.target(instance_uuid):
            return self.migrate_task.confirm(ctxt, instance_uuid)

    @rpc.expose
    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def revert_resize(self, ctxt, instance_uuid):
        validation.uuid('instance_uuid', instance_uuid)
        with instance_cell.target(instance_uuid):
            return self.migrate_task.revert(ctxt, instance_uuid)

    @rpc.expose
    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def rebuild_instance(self, ctxt, instance_uuid, image=None,
                         evacuate=False, host=None, force=False):
        validation.uuid('instance_uuid', instance_uuid)
        validation.name('host', host, nullable=True)
        _check_flags(evacuate=evacuate, force=force)
        if image is not None:
            request_spec_obj.validate_image(image)
        if evacuate:
            if image is not None:
                raise exception.InvalidRequest(
                    reason='an evacuation keeps the image')
            with instance_cell.target(instance_uuid):
                return self.rebuild_task.evacuate(ctxt, instance_uuid,
                                                  host, force)
        if host is not None or force:
            raise exception.InvalidRequest(
                reason='a rebuild stays on its host; only an evacuation '
                       'takes one')
        with instance_cell.target(instance_uuid):
            return self.rebuild_task.rebuild(ctxt, instance_uuid, image)

    @rpc.expose
    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def shelve_instance(self, ctxt, instance_uuid):
        validation.uuid('instance_uuid', instance_uuid)
        with instance_cell.target(instance_uuid):
            return self.shelve_task.shelve(ctxt, instance_uuid)

    @rpc.expose
    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def unshelve_instance(self, ctxt, instance_uuid):
        validation.uuid('instance_uuid', instance_uuid)
        with instance_cell.target(instance_uuid):
            return self.shelve_task.unshelve(ctxt, instance_uuid)

    # -- 1.2 ----------------------------------------------------------------

    @rpc.expose
    @messaging.expected_exceptions(*OPERATION_EXCEPTIONS)
    def delete_instance(self, ctxt, instance_uuid):
        validation.uuid('instance_uuid', instance_uuid)
        # As Nova's API: a server in any cell, its compute told over the
        # cell's broker.
        with instance_cell.target(instance_uuid, any_broker=True) as cell:
            return self.delete_task.delete(ctxt, instance_uuid,
                                           self.cell_computes.of(cell))


def _checked_build(instance_uuids, request_spec, host_lists, failure):
    """The arguments of build_instances checked; the uuids as a list."""
    uuids = validation.sequence('instance_uuids', instance_uuids,
                                validation.MAX_NUM_INSTANCES)
    for index, uuid in enumerate(uuids):
        validation.uuid('instance_uuids[%d]' % index, uuid)
    if not uuids or len(set(uuids)) != len(uuids):
        validation.refuse('instance_uuids', 'must be distinct and at '
                          'least one')
    validation.instance_of('request_spec', request_spec,
                           request_spec_obj.RequestSpec)
    request_spec.validate()
    if failure is None:
        if host_lists is not None:
            validation.refuse('host_lists', 'goes only with a failure')
        if len(uuids) != request_spec.num_instances:
            validation.refuse('instance_uuids', 'has %d uuids for '
                              'num_instances=%d'
                              % (len(uuids), request_spec.num_instances))
        return uuids
    validation.mapping('failure', failure)
    if set(failure) - {'host', 'node', 'reason'}:
        validation.refuse('failure', 'may hold only host, node and reason')
    validation.name('failure.host', failure.get('host'))
    validation.name('failure.node', failure.get('node'))
    validation.text('failure.reason', failure.get('reason'),
                    validation.MAX_FAULT_LEN, nullable=True)
    if len(uuids) != 1:
        validation.refuse('instance_uuids', 'names one instance with a '
                          'failure')
    for index, host_list in enumerate(validation.sequence(
            'host_lists', host_lists or [], max_items=1)):
        for number, selection in enumerate(validation.objects(
                'host_lists[%d]' % index, host_list, selection_obj.Selection,
                max_items=validation.MAX_ITEMS)):
            selection.validate('host_lists[%d][%d]' % (index, number))
    _check_building_on(uuids[0], failure['host'], failure['node'])
    return uuids


def _check_building_on(instance_uuid, host, node):
    """A build failure counts for an instance building on that node."""
    with db_api.reader() as session:
        rows = db_instances.list_instances(session, uuids=[instance_uuid])
    if not rows:
        validation.refuse('instance_uuids[0]', 'names no instance')
    row = rows[0]
    if row.vm_state != db_instances.BUILDING or \
            (row.host, row.node) != (host, node):
        validation.refuse('failure', 'is for %s/%s but instance %s is %s '
                          'on %s/%s' % (host, node, instance_uuid,
                                        row.vm_state, row.host, row.node))
