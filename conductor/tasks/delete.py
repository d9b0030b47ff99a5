"""Delete a server, as Nova does, releasing everything it holds.

A delete starts with one conditional UPDATE that sets ``task_state``
``deleting``: from any vm_state with no task under way, or from
``building`` whatever the build is doing (a delete may interrupt a
build), or from ``deleting`` itself (a delete asked again drives an
interrupted one on). Any other task under way refuses it with
InstanceInvalidState.

If the instance has a host whose compute service is up, the compute is
told (``terminate_instance``: it forgets the instance and tells the
schedulers). Without a host (still scheduling, failed, offloaded) or with
its compute down, the instance is deleted here only (Nova's *local
delete*, logged). Then one transaction releases every claim of the
instance and of its migrations in progress (marked ``error``), and marks
the instance deleted (``vm_state`` deleted, ``deleted`` = its id,
``deleted_at``, no host, no task). The schedulers hear of it
(``delete_instance_info``) when the instance had a host.

A delete that an outage cuts short (the compute does not answer, the
conductor dies, the database goes away) leaves the instance ``deleting``;
the conductor's periodic task (:meth:`DeleteTask.finish_interrupted`)
finishes it once it has not changed for ``[conductor]
delete_retry_interval`` seconds. A build racing the delete loses: its
placement and its compute's ACTIVE report are refused while the instance
is ``deleting`` or deleted, and a claim that still slips through is a
stray claim of kind ``instance deleted`` that the reaper releases::

    task = delete.DeleteTask(scheduler_api, compute_api)
    task.delete(ctxt, uuid)            # -> the instance, vm_state deleted
    task.finish_interrupted(ctxt)      # periodic

``delete`` answers :func:`conductor.tasks.common.view` (a deleted
instance as it is, again and again) and raises InstanceNotFound and
InstanceInvalidState.
"""

import datetime

from oslo_log import log as logging
import sqlalchemy as sa

from conductor.tasks import build
from conductor.tasks import common
from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler.db import moves
from scheduler.db import services as db_services
from scheduler import exception

CONF = conf.CONF
LOG = logging.getLogger(__name__)

COMPUTE_BINARY = 'gantt-compute'
MIGRATION_ERROR = 'The instance was deleted during the migration.'

_INSTANCE = models.Instance.__table__


@db_api.retry_on_db_error
def _take(instance_uuid):
    """Set task_state ``deleting``; the row as it was before, or None if
    the instance is deleted already.

    :raises: InstanceNotFound, InstanceInvalidState
    """
    with db_api.writer() as session:
        row = db_instances.get(session, instance_uuid)
        if row.vm_state == db_instances.DELETED:
            return None
        result = session.execute(
            sa.update(_INSTANCE)
            .where(_INSTANCE.c.uuid == instance_uuid,
                   _INSTANCE.c.vm_state != db_instances.DELETED,
                   sa.or_(_INSTANCE.c.task_state.is_(None),
                          _INSTANCE.c.task_state == db_instances.DELETING,
                          _INSTANCE.c.vm_state == db_instances.BUILDING))
            .values(task_state=db_instances.DELETING,
                    updated_at=models.utcnow()))
        if result.rowcount != 1:
            raise exception.InstanceInvalidState(
                action='delete', uuid=instance_uuid, vm_state=row.vm_state,
                task_state=row.task_state)
    return row


@db_api.retry_on_db_error
def _release_and_mark_deleted(instance_uuid):
    """In one transaction: release the claims of the instance and of its
    migrations in progress (now ``error``), mark it deleted. What was
    released (``[(consumer, node id, Resources)]``), or None if the
    instance was deleted meanwhile (by another conductor)."""
    with db_api.writer() as session:
        row = db_instances.get(session, instance_uuid)
        if row.vm_state == db_instances.DELETED:
            return None
        released = [(instance_uuid, node_id, amounts) for node_id, amounts
                    in claims.release_resources(session, instance_uuid)]
        for migration in moves.list_migrations(session, instance_uuid):
            if migration.status not in moves.IN_PROGRESS:
                continue
            released.extend(
                (migration.uuid, node_id, amounts) for node_id, amounts
                in claims.release_resources(session, migration.uuid))
            moves.update(session, migration.uuid, status=moves.ERROR,
                         error=MIGRATION_ERROR)
        db_instances.soft_delete(session, instance_uuid)
    return released


def _compute_is_up(host):
    with db_api.reader() as session:
        return db_services.is_up(
            db_services.get_service(session, host, COMPUTE_BINARY))


class DeleteTask:
    def __init__(self, scheduler_api, compute_api):
        self.scheduler_api = scheduler_api
        self.compute_api = compute_api

    def delete(self, ctxt, instance_uuid, compute_api=None):
        """Delete the instance; answer it as it is afterwards (deleted,
        or still ``deleting`` if its compute did not answer: the periodic
        task finishes it). ``compute_api``: the client of the instance's
        compute (its cell's broker), by default this task's.

        :raises: InstanceNotFound, InstanceInvalidState
        """
        row = _take(instance_uuid)
        if row is None:
            LOG.info('Instance %s is deleted already', instance_uuid)
            return common.view(instance_uuid)
        LOG.info('Delete of instance %s started (%s, task %s, on %s)',
                 instance_uuid, row.vm_state, row.task_state,
                 row.host or 'no host')
        if self._terminate(ctxt, row.uuid, row.host, compute_api):
            self._finish(ctxt, row.uuid, row.host)
        return common.view(instance_uuid)

    def _terminate(self, ctxt, instance_uuid, host, compute_api=None):
        """Tell the instance's compute, if it has a host whose service is
        up; whether the delete may go on (False: the compute did not
        answer, the instance stays ``deleting``)."""
        if not host:
            LOG.info('Instance %s has no host: deleting it locally',
                     instance_uuid)
            return True
        if not _compute_is_up(host):
            LOG.warning('The compute service of %s is down: deleting '
                        'instance %s locally', host, instance_uuid)
            return True
        try:
            (compute_api or self.compute_api).terminate_instance(
                ctxt, host, instance_uuid)
        except Exception as error:
            LOG.warning('The compute on %s did not terminate instance %s '
                        '(%s); it stays deleting, and the conductor\'s '
                        'periodic task finishes the delete',
                        host, instance_uuid, build.error_text(error))
            return False
        return True

    def _finish(self, ctxt, instance_uuid, host):
        released = _release_and_mark_deleted(instance_uuid)
        if released is None:
            LOG.info('Instance %s was deleted meanwhile', instance_uuid)
            return
        LOG.info('Instance %s deleted; released %d allocation(s)%s',
                 instance_uuid, len(released),
                 ''.join(' (%s on node %s: %d vCPU, %d MB, %d GB)'
                         % (consumer, node_id, amounts.vcpus,
                            amounts.memory_mb, amounts.disk_gb)
                         for consumer, node_id, amounts in released))
        if host:
            self.scheduler_api.delete_instance_info(ctxt, host,
                                                    instance_uuid)

    def finish_interrupted(self, ctxt):
        """Finish the deletes left ``deleting`` for longer than
        ``[conductor] delete_retry_interval``; how many were finished.
        A compute that still does not answer does not hold the delete
        back: the instance is then deleted locally."""
        cutoff = models.utcnow() - datetime.timedelta(
            seconds=CONF.conductor.delete_retry_interval)
        with db_api.reader() as session:
            stuck = [(row.uuid, row.host) for row
                     in db_instances.stuck_deleting(session, cutoff)]
        finished = 0
        for uuid, host in stuck:
            LOG.warning('Finishing the interrupted delete of instance %s '
                        '(host %s)', uuid, host or '-')
            try:
                if not self._terminate(ctxt, uuid, host):
                    LOG.warning('Deleting instance %s locally: its compute '
                                'on %s still does not answer', uuid, host)
                self._finish(ctxt, uuid, host)
            except Exception:
                LOG.exception('Finishing the delete of %s failed; the '
                              'next periodic run tries again', uuid)
                continue
            finished += 1
        return finished
