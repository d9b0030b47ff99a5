"""Cold migration and resize; confirm and revert.

A cold migration moves an ACTIVE instance to another host; a resize does
the same with a new flavor (and may stay on its host with ``[DEFAULT]
allow_resize_to_same_host``). Both end in ``resized``, holding two claims
until the user decides:

* the source's claim, handed at the start to the migration's own
  consumer (the migration record's UUID), in the same transaction that
  records the migration;
* the destination's claim, made by the scheduler under the instance's
  UUID (the filters and weighers see the new flavor; a server group's
  hard policy is checked in the claim's transaction, the instance itself
  not counting as one of the other members).

``confirm`` drops the source's claim and tells the source the instance
left; ``revert`` drops the destination's claim and gives the source's
back to the instance, which goes back to its old host and flavor.

When no host can take the instance (NoValidHost, a scheduler that does
not answer, destinations that all refuse it), everything is put back in
one transaction: the instance is ACTIVE on its source with exactly the
claim it had, and the migration record says ``error`` and why::

    task = migrate.MigrateTask(scheduler_api, compute_api)
    task.migrate(ctxt, uuid, flavor=bigger)   # -> resized on a new host
    task.revert(ctxt, uuid)                   # -> active where it was

Each method answers :func:`conductor.tasks.common.view` of the instance
and its migration, and raises InstanceNotFound, InstanceInvalidState,
InvalidRequest, MigrationNotFound, NoValidHost or MaxRetriesExceeded.
"""

import oslo_messaging as messaging
from oslo_log import log as logging

from conductor.tasks import build
from conductor.tasks import common
from scheduler import cells
from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instance_groups as db_groups
from scheduler.db import instances as db_instances
from scheduler.db import inventories as db_inventories
from scheduler.db import moves
from scheduler import exception
from scheduler import hardware
from scheduler.objects import request_spec as request_spec_obj
from scheduler.resources import amounts

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The flavor fields that make its size (what a resize must change).
SIZE_FIELDS = ('vcpus', 'memory_mb', 'root_gb', 'ephemeral_gb', 'swap')


# -- what the move operations share (live_migrate uses these too) ----------

@db_api.retry_on_db_error
def record(row, migration_type, new_flavor=None):
    """Record a migration of the instance ``row`` from its host and hand
    the instance's allocations to the migration's consumer, in one
    transaction; the migration row."""
    with db_api.writer() as session:
        migration = moves.create(
            session, row.uuid, migration_type, source_host=row.host,
            source_node=row.node, old_flavor=row.flavor,
            new_flavor=new_flavor if new_flavor is not None else row.flavor)
        moved = claims.move_allocations(session, row.uuid, migration.uuid)
    if not moved:
        LOG.warning('Instance %s held no allocation on %s when its %s '
                    'started', row.uuid, row.host, migration_type)
    LOG.info('Migration %s (%s) of instance %s from %s/%s recorded; the '
             'source claim now belongs to it', migration.uuid,
             migration_type, row.uuid, row.host, row.node)
    return migration


@db_api.retry_on_db_error
def undo(instance_uuid, migration_uuid, reason):
    """Put a move that failed back, in one transaction: drop what the
    instance claimed meanwhile, give it back the source's claim, mark the
    migration ``error`` with ``reason`` and clear the task."""
    with db_api.writer() as session:
        claims.release_resources(session, instance_uuid)
        claims.move_allocations(session, migration_uuid, instance_uuid)
        moves.update(session, migration_uuid, status=moves.ERROR,
                     error=reason)
        db_instances.update(session, instance_uuid, task_state=None)
    LOG.warning('Migration %s of instance %s failed and was undone: %s',
                migration_uuid, instance_uuid, reason)


def claim_on(node, instance_uuid, spec):
    """Claim ``spec``'s resources on ``node`` (a compute node row) for the
    instance, every class its request asks (see
    :func:`scheduler.resources.amounts.forced_amounts`), checking its
    server group's hard policy: True, False (no room) or a GroupConflict
    (false too)."""
    resources, extra = forced_claim_amounts(node, spec)
    return claims.claim_in_sql(
        node.id, instance_uuid, resources,
        claims.hard_group_uuid(spec), node.host,
        hardware=hardware.Request.from_spec(spec), extra=extra)


def forced_claim_amounts(node, spec):
    """``(resources, extra)`` of ``spec`` on ``node``, by the classes of
    the node's inventory."""
    with db_api.reader() as session:
        inventory = db_inventories.node_inventory(session, node.id) or {}
    return amounts.forced_amounts(spec, inventory)


def load_group(spec):
    """Give ``spec`` its server group; a group deleted since the build
    no longer constrains the move."""
    try:
        build.load_group(spec)
    except db_groups.InstanceGroupNotFound as error:
        LOG.warning('Moving instance %s without its server group: %s',
                    spec.instance_uuid, error)


def failure(error, silent='The scheduler'):
    """What a failed move raises to its caller: the error as it came, a
    timeout as NoValidHost saying who (``silent``) did not answer."""
    if isinstance(error, messaging.MessagingTimeout):
        return exception.NoValidHost(
            reason='%s did not answer in time.' % silent)
    return error


def spec_with_flavor(request_spec, flavor):
    """The recorded ``request_spec`` primitive with ``flavor`` in it."""
    spec = request_spec_obj.RequestSpec.obj_from_primitive(request_spec)
    spec.flavor = flavor
    return spec.obj_to_primitive()


def _size(flavor):
    return tuple(flavor.obj_get(name, 0) for name in SIZE_FIELDS)


class MigrateTask:
    def __init__(self, scheduler_api, compute_api):
        self.scheduler_api = scheduler_api
        self.compute_api = compute_api

    # -- migrate / resize -----------------------------------------------------

    def migrate(self, ctxt, instance_uuid, flavor=None):
        """Cold-migrate the instance, or resize it to ``flavor``."""
        action = 'migrate' if flavor is None else 'resize'
        row = common.start(instance_uuid, action, (db_instances.ACTIVE,),
                           db_instances.RESIZE_PREP)
        try:
            spec = self._spec(row, flavor)
            migration = record(
                row, moves.MIGRATION if flavor is None else moves.RESIZE,
                None if flavor is None else common.flavor_dict(flavor))
        except Exception:
            common.abort(instance_uuid)
            raise
        try:
            dest = self._move(ctxt, row, spec, migration)
        except Exception as error:
            undo(instance_uuid, migration.uuid, build.error_text(error))
            common.ended(instance_uuid, failure(error))
            raise failure(error)
        with db_api.writer() as session:
            values = {}
            if flavor is not None:
                values = {'flavor': common.flavor_dict(flavor),
                          'request_spec': spec_with_flavor(row.request_spec,
                                                           flavor)}
            db_instances.update(session, instance_uuid,
                                host=dest.service_host, node=dest.nodename,
                                vm_state=db_instances.RESIZED,
                                task_state=None, **values)
            moves.update(session, migration.uuid, status=moves.FINISHED,
                         dest_host=dest.service_host,
                         dest_node=dest.nodename)
        common.ended(instance_uuid)
        LOG.info('Instance %s %s from %s to %s/%s; waiting for confirm or '
                 'revert', instance_uuid,
                 'migrated' if flavor is None else 'resized', row.host,
                 dest.service_host, dest.nodename)
        return common.view(instance_uuid, migration.uuid)

    @staticmethod
    def _spec(row, flavor):
        """The spec to schedule the move with; refuses what cannot move."""
        if not row.host or not row.node:
            raise exception.InvalidRequest(
                reason='instance %s has no host to move from' % row.uuid)
        spec = common.spec_for(row, flavor)
        if flavor is not None:
            request_spec_obj.validate_flavor(flavor)
            old = request_spec_obj.RequestSpec.obj_from_primitive(
                row.request_spec).flavor
            if _size(old) == _size(flavor):
                raise exception.InvalidRequest(
                    reason='the new flavor has the size of the current one '
                           '(%s)' % ', '.join(
                               '%s=%s' % pair
                               for pair in zip(SIZE_FIELDS, _size(old))))
        if not CONF.allow_resize_to_same_host:
            spec.ignore_hosts = [row.host]
        load_group(spec)
        common.keep_in_cell(spec, row)
        return spec

    def _move(self, ctxt, row, spec, migration):
        """Schedule (the destination is claimed under the instance) and
        hand the instance to the destination, falling back on the
        alternates; the Selection it went to."""
        LOG.info('Scheduling %s of instance %s (from %s)',
                 migration.migration_type, row.uuid, row.host)
        [selections] = self.scheduler_api.select_destinations(
            ctxt, spec, [row.uuid], return_objects=True,
            return_alternates=True)
        candidate, alternates = selections[0], list(selections[1:])
        common.refuse_other_cell(row.uuid, spec, candidate)
        tried, last_error = [], None
        while candidate is not None:
            tried.append(candidate.service_host)
            LOG.info('Instance %s goes to %s/%s (migration %s)', row.uuid,
                     candidate.service_host, candidate.nodename,
                     migration.uuid)
            try:
                self.compute_api.receive_instance(
                    ctxt, candidate.service_host, row.uuid,
                    candidate.nodename, spec)
                return candidate
            except Exception as error:
                last_error = build.error_text(error)
                LOG.warning('Host %s did not take instance %s: %s',
                            candidate.service_host, row.uuid, last_error)
            common.release(row.uuid)
            candidate = self._claim_alternate(row.uuid, spec, alternates,
                                              len(tried))
        raise exception.MaxRetriesExceeded(
            reason='Exhausted all hosts available for the %s of instance '
                   '%s. Hosts tried: %s. Last error: %s'
            % (migration.migration_type, row.uuid, ', '.join(tried),
               last_error))

    @staticmethod
    def _claim_alternate(instance_uuid, spec, alternates, attempts):
        """Claim the first alternate that still has room (and suits the
        server group) while attempts remain; it, or None."""
        while alternates and attempts < CONF.scheduler.max_attempts:
            selection = alternates.pop(0)
            if common.in_other_cell(spec, selection):
                continue    # no cross-cell move
            with cells.target(common.selection_cell(selection)):
                with db_api.reader() as session:
                    node = db_compute_nodes.get_node_by_uuid(
                        session, selection.compute_node_uuid)
                if node is None:
                    continue
                won = claim_on(node, instance_uuid, spec)
            if won:
                LOG.info('Claimed alternate %s for instance %s',
                         selection.service_host, instance_uuid)
                return selection
            LOG.info('Alternate %s cannot take instance %s: %s',
                     selection.service_host, instance_uuid,
                     won or 'no room left')
        return None

    # -- confirm / revert -----------------------------------------------------

    @staticmethod
    def _start_decision(instance_uuid, action, task_state):
        """Take a resized instance for confirm or revert; its row and its
        finished migration."""
        row = common.start(instance_uuid, action, (db_instances.RESIZED,),
                           task_state)
        with db_api.reader() as session:
            migration = moves.latest(session, instance_uuid,
                                     statuses=(moves.FINISHED,),
                                     types=(moves.MIGRATION, moves.RESIZE))
        if migration is None:
            common.abort(instance_uuid)
            raise exception.MigrationNotFound(what='finished',
                                              uuid=instance_uuid)
        return row, migration

    def confirm(self, ctxt, instance_uuid):
        """Keep the instance where it went: drop the source's claim."""
        row, migration = self._start_decision(
            instance_uuid, 'confirm-resize', db_instances.RESIZE_CONFIRMING)
        if migration.source_host != row.host:
            try:
                self.compute_api.remove_instance(ctxt, migration.source_host,
                                                 instance_uuid)
            except Exception as error:
                LOG.warning('Source host %s of instance %s did not answer '
                            '(%s); confirming anyway',
                            migration.source_host, instance_uuid,
                            build.error_text(error))
        with db_api.writer() as session:
            claims.release_resources(session, migration.uuid)
            moves.update(session, migration.uuid, status=moves.CONFIRMED)
            db_instances.update(session, instance_uuid,
                                vm_state=db_instances.ACTIVE,
                                task_state=None)
        common.ended(instance_uuid)
        LOG.info('Migration %s of instance %s confirmed: it stays on %s; '
                 'the claim on %s is released', migration.uuid,
                 instance_uuid, row.host, migration.source_host)
        return common.view(instance_uuid, migration.uuid)

    def revert(self, ctxt, instance_uuid):
        """Send the instance back to its source host and old flavor."""
        row, migration = self._start_decision(
            instance_uuid, 'revert-resize', db_instances.RESIZE_REVERTING)
        old_flavor = request_spec_obj.Flavor(**migration.old_flavor)
        spec = common.spec_for(row, old_flavor)
        try:
            self.compute_api.receive_instance(
                ctxt, migration.source_host, instance_uuid,
                migration.source_node, spec)
        except Exception as error:
            common.abort(instance_uuid)
            LOG.error('Revert of instance %s failed: %s did not take it '
                      'back: %s', instance_uuid, migration.source_host,
                      build.error_text(error))
            raise
        if migration.source_host != row.host:
            try:
                self.compute_api.remove_instance(ctxt, row.host,
                                                 instance_uuid)
            except Exception as error:
                LOG.warning('Host %s of instance %s did not answer (%s); '
                            'reverting anyway', row.host, instance_uuid,
                            build.error_text(error))
        with db_api.writer() as session:
            claims.release_resources(session, instance_uuid)
            claims.move_allocations(session, migration.uuid, instance_uuid)
            db_instances.update(
                session, instance_uuid, host=migration.source_host,
                node=migration.source_node, flavor=migration.old_flavor,
                request_spec=spec_with_flavor(row.request_spec, old_flavor),
                vm_state=db_instances.ACTIVE, task_state=None)
            moves.update(session, migration.uuid, status=moves.REVERTED)
        common.ended(instance_uuid)
        LOG.info('Migration %s of instance %s reverted: back on %s/%s; the '
                 'claim on %s is released', migration.uuid, instance_uuid,
                 migration.source_host, migration.source_node, row.host)
        return common.view(instance_uuid, migration.uuid)
