"""Live migration: move an ACTIVE instance to another host while it runs.

The move starts as a cold migration does (:mod:`conductor.tasks.migrate`):
a ``live-migration`` record takes over the source's claim in the same
transaction, and the destination is claimed under the instance's UUID.
The destination is

* the scheduler's pick, the source and every host that refused the
  instance ignored;
* a requested ``host``, which the scheduler's filters still check
  (``requested_destination``);
* a requested ``host`` with ``force``: claimed directly on its node, with
  no filter run (the server group's hard policy is still checked in the
  claim's transaction).

The destination's compute is then asked whether it can take the instance
(``check_can_live_migrate_destination``). A refusal (or no answer) drops
its claim; a requested host then fails the operation, a scheduled one is
ignored and the scheduler asked again, up to ``[conductor]
migrate_max_retries`` retries (-1: while hosts are left; 0: none).

On success the instance runs on the destination, ACTIVE, the source's
claim is released and the migration is ``completed``. On failure it is
ACTIVE on its source with the claim it had, and the migration ``error``::

    task = live_migrate.LiveMigrateTask(scheduler_api, compute_api)
    task.execute(ctxt, uuid)                      # scheduled
    task.execute(ctxt, uuid, host='h2')           # filters check h2
    task.execute(ctxt, uuid, host='h2', force=True)

Raises InstanceNotFound, InstanceInvalidState, InvalidRequest,
HostNotFound, NoValidHost, MaxRetriesExceeded or MigrationPreCheckError.
"""

import oslo_messaging as messaging
from oslo_log import log as logging

from conductor.tasks import build
from conductor.tasks import common
from conductor.tasks import migrate
from scheduler import cells
from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import moves
from scheduler import exception
from scheduler.objects import request_spec as request_spec_obj
from scheduler import placement_types

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class LiveMigrateTask:
    def __init__(self, scheduler_api, compute_api):
        self.scheduler_api = scheduler_api
        self.compute_api = compute_api

    def execute(self, ctxt, instance_uuid, host=None, force=False):
        """Live-migrate the instance (to ``host`` if given)."""
        row = common.start(instance_uuid, 'live-migrate',
                           (db_instances.ACTIVE,), db_instances.MIGRATING)
        try:
            forced_node = self._check(row, host, force)
            forced_cell = None if forced_node is None else \
                common.refuse_forced_cross_cell(row, forced_node.host)
            spec = common.spec_for(row)
            migrate.load_group(spec)
            migration = migrate.record(row, moves.LIVE_MIGRATION)
        except Exception:
            common.abort(instance_uuid)
            raise
        try:
            dest_host, dest_node = self._find_destination(
                ctxt, row, spec, host, forced_node, forced_cell)
        except Exception as error:
            migrate.undo(instance_uuid, migration.uuid,
                         build.error_text(error))
            common.ended(instance_uuid, migrate.failure(error))
            raise migrate.failure(error)
        try:
            self.compute_api.receive_instance(ctxt, dest_host, instance_uuid,
                                              dest_node, spec)
        except Exception as error:
            migrate.undo(instance_uuid, migration.uuid,
                         'Host %s did not take the instance: %s'
                         % (dest_host, build.error_text(error)))
            error = migrate.failure(error, 'Destination host %s' % dest_host)
            common.ended(instance_uuid, error)
            raise error
        try:
            self.compute_api.remove_instance(ctxt, row.host, instance_uuid)
        except Exception as error:
            LOG.warning('Source host %s of instance %s did not answer (%s); '
                        'the live migration completes anyway', row.host,
                        instance_uuid, build.error_text(error))
        with db_api.writer() as session:
            claims.release_resources(session, migration.uuid)
            db_instances.update(session, instance_uuid, host=dest_host,
                                node=dest_node, vm_state=db_instances.ACTIVE,
                                task_state=None)
            moves.update(session, migration.uuid, status=moves.COMPLETED,
                         dest_host=dest_host, dest_node=dest_node)
        common.ended(instance_uuid)
        LOG.info('Instance %s live-migrated from %s to %s/%s (migration %s)',
                 instance_uuid, row.host, dest_host, dest_node,
                 migration.uuid)
        return common.view(instance_uuid, migration.uuid)

    @staticmethod
    def _check(row, host, force):
        """Refuse what cannot be live-migrated as asked; the node of a
        forced ``host``."""
        if not row.host or not row.node:
            raise exception.InvalidRequest(
                reason='instance %s has no host to move from' % row.uuid)
        if host is not None and host == row.host:
            raise exception.InvalidRequest(
                reason='instance %s already runs on %s' % (row.uuid, host))
        if host is None:
            if force:
                raise exception.InvalidRequest(
                    reason='force needs a host to force')
            return None
        try:
            node = common.node_of(host)   # HostNotFound if unknown
        except exception.InvalidRequest:
            if force:
                raise   # a forced host with several nodes: name one
            return None   # the scheduler picks among its nodes
        return node if force else None

    def _find_destination(self, ctxt, row, spec, host, forced_node,
                          forced_cell):
        """Claim a destination the compute accepts, in the instance's
        cell; ``(host, node)``."""
        ignored = [row.host]
        max_retries = CONF.conductor.migrate_max_retries
        retries = 0
        while True:
            if forced_node is not None:
                with cells.target(forced_cell):
                    dest_host, dest_node = self._claim_forced(
                        row.uuid, spec, forced_node)
            else:
                dest_host, dest_node = self._schedule(ctxt, row, spec, host,
                                                      ignored)
            refusal = self._precheck(ctxt, row.uuid, dest_host, dest_node)
            if refusal is None:
                return dest_host, dest_node
            common.release(row.uuid)
            if host is not None:
                raise refusal
            ignored.append(dest_host)
            tried = ', '.join(ignored[1:])
            if max_retries != -1 and retries >= max_retries:
                raise exception.MaxRetriesExceeded(
                    reason='Exceeded max scheduling retries %d for instance '
                           '%s during live migration. Hosts tried: %s.'
                    % (max_retries, row.uuid, tried))
            retries += 1
            LOG.info('Live migration of instance %s: retry %d (of %s), '
                     'ignoring %s', row.uuid, retries,
                     'unlimited' if max_retries == -1 else max_retries,
                     ', '.join(ignored))

    def _schedule(self, ctxt, row, spec, host, ignored):
        spec.ignore_hosts = list(ignored)
        if host is not None:
            spec.requested_destination = request_spec_obj.Destination(
                host=host)
            if not self.scheduler_api.client.can_send_version('1.1'):
                # API 1.0's legacy dicts carry no requested_destination:
                # force the host and ask for the filters all the same.
                spec.force_hosts = [host]
                hints = dict(spec.obj_get('scheduler_hints', {}))
                hints[placement_types.CHECK_TYPE_HINT] = ['live_migrate']
                spec.scheduler_hints = hints
        common.keep_in_cell(spec, row)
        try:
            [selections] = self.scheduler_api.select_destinations(
                ctxt, spec, [row.uuid], return_objects=True,
                return_alternates=False)
        except exception.NoValidHost as error:
            refused = ignored[1:]
            if not refused:
                raise
            raise exception.NoValidHost(
                '%s Hosts that refused the live migration: %s.'
                % (build.error_text(error), ', '.join(refused))) from None
        selection = selections[0]
        common.refuse_other_cell(row.uuid, spec, selection)
        LOG.info('Live migration of instance %s from %s: the scheduler '
                 'chose %s/%s', row.uuid, row.host, selection.service_host,
                 selection.nodename)
        return selection.service_host, selection.nodename

    @staticmethod
    def _claim_forced(instance_uuid, spec, node):
        won = migrate.claim_on(node, instance_uuid, spec)
        if not won:
            raise exception.NoValidHost(
                reason='Forced host %s cannot take instance %s: %s.'
                % (node.host, instance_uuid,
                   won or 'not enough free resources for %s'
                   % (spec.resources(),)))
        LOG.info('Live migration of instance %s forced to %s/%s (claimed, '
                 'no filters run)', instance_uuid, node.host,
                 node.hypervisor_hostname)
        return node.host, node.hypervisor_hostname

    def _precheck(self, ctxt, instance_uuid, host, node):
        """None if ``host`` accepts the instance, else the error saying
        why not (MigrationPreCheckError)."""
        try:
            self.compute_api.check_can_live_migrate_destination(
                ctxt, host, instance_uuid, node)
        except exception.MigrationPreCheckError as error:
            reason = build.error_text(error)
        except messaging.MessagingTimeout:
            reason = 'host %s did not answer the pre-check' % host
        else:
            LOG.info('Host %s accepts the live migration of instance %s',
                     host, instance_uuid)
            return None
        LOG.info('Host %s refused the live migration of instance %s: %s',
                 host, instance_uuid, reason)
        return exception.MigrationPreCheckError(
            reason=reason.removeprefix('Migration pre-check error: '))
