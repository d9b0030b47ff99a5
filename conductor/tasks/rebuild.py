"""Rebuild in place, and evacuation from a host whose compute is down.

A **rebuild** keeps the instance on its host and node, possibly with a new
image. The scheduler is asked about that one host with ``is_rebuild`` set:
it claims nothing and runs only the filters whose ``RUN_ON_REBUILD`` is
true (ImagePropertiesFilter and the image isolation filters), so a full
host still takes the rebuild, but a host that cannot run the new image
refuses it (NoValidHost; the instance keeps its old image). The
allocation is never touched.

An **evacuation** moves an instance off a host whose compute service is
down (not heartbeating, or forced down); the dead compute is not called.
The destination is either forced (``host`` with ``force``: claimed
directly, no filters) or scheduled (``host`` without ``force`` narrows
the request to that host; without ``host`` any host but the source). The
new claim replaces the one on the dead host in the same transaction
(Placement's replace semantics, :func:`scheduler.db.claims.claim_in_sql`),
and a refused claim writes nothing, so a failed evacuation leaves the
instance, its claim on the dead host, and the usage as they were. The
move is recorded as an ``evacuation`` migration: ``accepted``, then
``done`` or ``error``::

    task = rebuild.RebuildTask(scheduler_api, compute_api)
    task.rebuild(ctxt, uuid, image=ImageMeta(properties={...}))
    task.evacuate(ctxt, uuid)                     # anywhere but the source
    task.evacuate(ctxt, uuid, host='h3', force=True)

Both answer :func:`conductor.tasks.common.view` (with the migration for an
evacuation) and raise InstanceNotFound, InstanceInvalidState, NoValidHost;
an evacuation also ComputeServiceInUse, HostNotFound, InvalidRequest and
InstanceGroupNotFound.
"""

from oslo_log import log as logging

from conductor.tasks import build
from conductor.tasks import common
from conductor.tasks import migrate
from scheduler import cells
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import moves
from scheduler.db import services as db_services
from scheduler import exception
from scheduler import hardware
from scheduler.objects import request_spec as request_spec_obj

LOG = logging.getLogger(__name__)

COMPUTE_BINARY = 'gantt-compute'
# States an instance may be rebuilt or evacuated from (Nova's).
REBUILD_STATES = (db_instances.ACTIVE, db_instances.ERROR)
EVACUATE_STATES = (db_instances.ACTIVE, db_instances.ERROR)


def current_flavor(row):
    """The instance's flavor as its row records it now (after a resize
    too), as a Flavor; None if the row has none."""
    if not row.flavor:
        return None
    return request_spec_obj.Flavor(**row.flavor)


class RebuildTask:
    def __init__(self, scheduler_api, compute_api):
        self.scheduler_api = scheduler_api
        self.compute_api = compute_api

    # -- rebuild in place ---------------------------------------------------

    def rebuild(self, ctxt, instance_uuid, image=None):
        """Rebuild the instance on its host (with ``image``, an ImageMeta).

        :raises: InstanceNotFound, InstanceInvalidState, InvalidRequest,
            NoValidHost (the host's filters refuse the image)
        """
        with db_api.reader() as session:
            current = db_instances.get(session, instance_uuid)
            if current.vm_state in REBUILD_STATES and not current.host:
                raise exception.InvalidRequest(
                    reason='instance %s has no host to rebuild on'
                    % instance_uuid)
        row = common.start(instance_uuid, 'rebuild', REBUILD_STATES,
                           db_instances.REBUILDING)
        try:
            spec = common.spec_for(row)
            if image is not None:
                spec.image = image
            spec.is_rebuild = True
            spec.requested_destination = request_spec_obj.Destination(
                host=row.host, node=row.node)
            LOG.info('Rebuild of %s: checking that %s/%s accepts image %s',
                     instance_uuid, row.host, row.node,
                     image.obj_get('id') if image is not None else '(same)')
            try:
                self.scheduler_api.select_destinations(
                    ctxt, spec, [instance_uuid], return_objects=True)
            except exception.NoValidHost as error:
                LOG.warning('Rebuild of %s refused: %s', instance_uuid,
                            build.error_text(error))
                raise exception.NoValidHost(
                    message='Host %s does not accept the image of the '
                           'rebuild of instance %s: %s'
                    % (row.host, instance_uuid, build.error_text(error)))
            stored = _stored_spec(row, image)
            self._receive_or_fail(ctxt, instance_uuid, row.host, row.node,
                                  spec, 'Rebuild')
        except Exception:
            common.abort(instance_uuid)
            raise
        common.finish(instance_uuid, vm_state=db_instances.ACTIVE,
                      fault=None, request_spec=stored)
        LOG.info('Rebuild of %s on %s done', instance_uuid, row.host)
        return common.view(instance_uuid)

    def _receive_or_fail(self, ctxt, instance_uuid, host, node, spec,
                         action):
        """Tell the compute the instance runs there now; on failure the
        instance goes to ERROR with a fault (claims untouched) and the
        error is raised."""
        try:
            self.compute_api.receive_instance(ctxt, host, instance_uuid,
                                              node, spec)
        except Exception as error:
            fault = '%s of %s failed on %s: %s' % (
                action, instance_uuid, host, build.error_text(error))
            LOG.error('%s', fault)
            common.finish(instance_uuid, vm_state=db_instances.ERROR,
                          fault=fault)
            raise

    # -- evacuation -----------------------------------------------------------

    def evacuate(self, ctxt, instance_uuid, host=None, force=False):
        """Move the instance off its host, whose compute must be down.

        :raises: InstanceNotFound, InstanceInvalidState,
            ComputeServiceInUse, HostNotFound, InvalidRequest,
            InstanceGroupNotFound, NoValidHost
        """
        row, dest_node = self._check_evacuation(instance_uuid, host, force)
        dest_cell = None if dest_node is None else \
            common.refuse_forced_cross_cell(row, dest_node.host)
        row = common.start(instance_uuid, 'evacuate', EVACUATE_STATES,
                           db_instances.REBUILDING)
        with db_api.writer() as session:
            migration = moves.create(
                session, instance_uuid, moves.EVACUATION,
                source_host=row.host, source_node=row.node,
                dest_host=dest_node.host if dest_node else None,
                dest_node=(dest_node.hypervisor_hostname if dest_node
                           else None))
        held_before = self._allocations(instance_uuid)
        try:
            spec = common.spec_for(row, current_flavor(row))
            build.load_group(spec)
            if dest_node is not None:
                with cells.target(dest_cell):
                    dest_host, dest_name = self._claim_forced(
                        instance_uuid, spec, dest_node)
            else:
                dest_host, dest_name = self._schedule(ctxt, row, spec, host)
        except Exception as error:
            # A failed claim writes nothing: the instance keeps its dead
            # host's claim. A scheduler that timed out may have claimed
            # elsewhere (replacing it): put the claim back on the source.
            self._restore_claims(instance_uuid, held_before)
            self._fail_migration(migration.uuid, error)
            common.abort(instance_uuid)
            raise
        LOG.info('Evacuation of %s: claimed %s/%s, telling its compute',
                 instance_uuid, dest_host, dest_name)
        try:
            self.compute_api.receive_instance(ctxt, dest_host, instance_uuid,
                                              dest_name, spec)
        except Exception as error:
            self._fail_after_claim(instance_uuid, migration.uuid, dest_host,
                                   error)
            common.ended(instance_uuid, error)
            raise
        with db_api.writer() as session:
            db_instances.update(session, instance_uuid, host=dest_host,
                                node=dest_name, vm_state=db_instances.ACTIVE,
                                task_state=None, fault=None)
            moves.update(session, migration.uuid, status=moves.DONE,
                         dest_host=dest_host, dest_node=dest_name)
        common.ended(instance_uuid)
        LOG.info('Evacuation of %s from %s to %s done', instance_uuid,
                 row.host, dest_host)
        return common.view(instance_uuid, migration.uuid)

    @staticmethod
    def _allocations(instance_uuid):
        """``([(node id, Resources)], {node id: {class: amount}})``: the
        instance's claims, classic and other classes."""
        with db_api.reader() as session:
            return (sorted(claims.get_allocations(session, instance_uuid)),
                    claims.get_allocation_items(session, instance_uuid))

    def _restore_claims(self, instance_uuid, before):
        """After a failed scheduling step, make the instance hold exactly
        the allocations it held before it (what :meth:`_allocations`
        read), its other classes (PCPU, custom ones) included."""
        if self._allocations(instance_uuid) == before:
            return
        before, items = before
        LOG.warning('Evacuation of %s: the scheduler claimed a host after '
                    'all; putting back the claims it held before',
                    instance_uuid)
        with db_api.writer() as session:
            claims.release_resources(session, instance_uuid)
            for node_id, resources in before:
                if not claims.claim_resources(session, node_id,
                                              instance_uuid, resources,
                                              extra=items.get(node_id)):
                    LOG.error('Evacuation of %s: could not claim node %s '
                              'again; the instance holds no claim there '
                              'now', instance_uuid, node_id)

    @staticmethod
    def _check_evacuation(instance_uuid, host, force):
        """What must hold before anything is written: the instance is in a
        state to evacuate, its host's compute is down, the requested host
        is another one (and exists, when forced). The instance row and the
        forced destination's node (or None)."""
        with db_api.reader() as session:
            row = db_instances.get(session, instance_uuid)
            if row.vm_state not in EVACUATE_STATES or \
                    row.task_state is not None:
                raise exception.InstanceInvalidState(
                    action='evacuate', uuid=instance_uuid,
                    vm_state=row.vm_state, task_state=row.task_state)
            if not row.host:
                raise exception.InvalidRequest(
                    reason='instance %s has no host to evacuate from'
                    % instance_uuid)
            service = db_services.get_service(session, row.host,
                                              COMPUTE_BINARY)
        if service is not None and db_services.is_up(service):
            raise exception.ComputeServiceInUse(host=row.host,
                                                uuid=instance_uuid)
        if host is not None and host == row.host:
            raise exception.InvalidRequest(
                reason='cannot evacuate instance %s to %s, the host it is '
                       'evacuated from' % (instance_uuid, host))
        if force and host is None:
            raise exception.InvalidRequest(
                reason='a forced evacuation needs a host')
        if force:
            return row, common.node_of(host)
        if host is not None:
            with db_api.reader() as session:
                if not any(node.host == host for node
                           in db_compute_nodes.get_nodes(session)):
                    raise exception.HostNotFound(host=host)
        return row, None

    @staticmethod
    def _claim_forced(instance_uuid, spec, node):
        """Claim on ``node`` without the filters; the claim replaces the
        instance's one on the dead host in its transaction."""
        resources, extra = migrate.forced_claim_amounts(node, spec)
        won = claims.claim_in_sql(
            node.id, instance_uuid, resources,
            claims.hard_group_uuid(spec), node.host,
            hardware=hardware.Request.from_spec(spec), extra=extra)
        if isinstance(won, claims.GroupConflict):
            raise exception.NoValidHost(
                reason='Unable to evacuate instance %s to %s: %s'
                % (instance_uuid, node.host, won))
        if not won:
            raise exception.NoValidHost(
                reason='Unable to evacuate instance %s to %s: there is not '
                       'enough capacity on the host for the instance.'
                % (instance_uuid, node.host))
        return node.host, node.hypervisor_hostname

    def _schedule(self, ctxt, row, spec, host):
        """Let the scheduler choose (and claim) a host of the instance's
        cell: ``host`` if given and it passes the filters, else any but
        its own."""
        if host is not None:
            spec.requested_destination = request_spec_obj.Destination(
                host=host)
        spec.ignore_hosts = [row.host]
        common.keep_in_cell(spec, row)
        try:
            [[selection]] = self.scheduler_api.select_destinations(
                ctxt, spec, [row.uuid], return_objects=True,
                return_alternates=False)
        except exception.NoValidHost as error:
            LOG.warning('Evacuation of %s found no host: %s', row.uuid,
                        build.error_text(error))
            raise
        common.refuse_other_cell(row.uuid, spec, selection)
        return selection.service_host, selection.nodename

    @staticmethod
    def _fail_migration(migration_uuid, error):
        with db_api.writer() as session:
            moves.update(session, migration_uuid, status=moves.ERROR,
                         error=build.error_text(error))

    @staticmethod
    def _fail_after_claim(instance_uuid, migration_uuid, dest_host, error):
        """The destination's compute did not take the instance: drop the
        claim made there; the instance goes to ERROR (its claim on the
        dead host was replaced and is gone too)."""
        fault = 'Evacuation of %s to %s failed: %s' % (
            instance_uuid, dest_host, build.error_text(error))
        LOG.error('%s', fault)
        with db_api.writer() as session:
            claims.release_resources(session, instance_uuid)
            db_instances.update(session, instance_uuid,
                                vm_state=db_instances.ERROR, task_state=None,
                                fault=fault)
            moves.update(session, migration_uuid, status=moves.ERROR,
                         error=fault)


def _stored_spec(row, image):
    """The instance's recorded request spec, with ``image`` if given."""
    if image is None:
        return row.request_spec
    spec = request_spec_obj.RequestSpec.obj_from_primitive(row.request_spec)
    spec.image = image
    return spec.obj_to_primitive()
