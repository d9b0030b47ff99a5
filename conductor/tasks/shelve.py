"""Shelve, offload and unshelve.

A shelved instance is stopped but keeps its host and its claim
(``shelved``); an offloaded one has left its host and holds nothing
(``shelved_offloaded``). ``[DEFAULT] shelved_offload_time`` says when a
shelved instance is offloaded:

* ``0``: at once, as part of the shelve;
* ``-1``: never; it keeps its host until unshelved;
* ``N > 0``: by the conductor's periodic task (:meth:`offload_expired`),
  once the instance has been shelved for N seconds. Each instance is taken
  with one conditional UPDATE (still shelved, no task, shelved long
  enough), so two conductors never both offload it.

Offloading tells the compute (``remove_instance``), then releases the
instance's allocations and clears its host in one transaction.

Unshelving a ``shelved`` instance makes it ``active`` again where it is. An
offloaded one is scheduled afresh (its server group's policy applies) and
the scheduler claims the host; without a host it stays offloaded, holding
nothing, with a fault saying so, and the NoValidHost reaches the caller::

    task = shelve.ShelveTask(scheduler_api, compute_api)
    task.shelve(ctxt, uuid)      # -> shelved or shelved_offloaded
    task.unshelve(ctxt, uuid)    # -> active, with a host and a claim
    task.offload_expired(ctxt)   # periodic

``shelve`` and ``unshelve`` answer :func:`conductor.tasks.common.view` and
raise InstanceNotFound, InstanceInvalidState; ``unshelve`` also
NoValidHost, InstanceGroupNotFound and InvalidRequest.
"""

import datetime

from oslo_log import log as logging
import sqlalchemy as sa

from conductor.tasks import build
from conductor.tasks import common
from conductor.tasks import rebuild
from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler import exception

CONF = conf.CONF
LOG = logging.getLogger(__name__)

_INSTANCE = models.Instance.__table__


def _take_expired(instance_uuid, shelved_before):
    """Mark one instance as being offloaded if it is still shelved, idle
    and was shelved before ``shelved_before``; whether this caller won."""
    with db_api.writer() as session:
        result = session.execute(
            sa.update(_INSTANCE)
            .where(_INSTANCE.c.uuid == instance_uuid,
                   _INSTANCE.c.vm_state == db_instances.SHELVED,
                   _INSTANCE.c.task_state.is_(None),
                   _INSTANCE.c.updated_at < shelved_before)
            .values(task_state=db_instances.SHELVING_OFFLOADING,
                    updated_at=models.utcnow()))
        return result.rowcount == 1


def _shelved_before(session, shelved_before):
    """UUIDs of the idle shelved instances last changed before then."""
    return session.execute(
        sa.select(_INSTANCE.c.uuid)
        .where(_INSTANCE.c.vm_state == db_instances.SHELVED,
               _INSTANCE.c.task_state.is_(None),
               _INSTANCE.c.updated_at < shelved_before)
        .order_by(_INSTANCE.c.updated_at)).scalars().all()


class ShelveTask:
    def __init__(self, scheduler_api, compute_api):
        self.scheduler_api = scheduler_api
        self.compute_api = compute_api

    def shelve(self, ctxt, instance_uuid):
        """Shelve an active instance; offload it at once if
        ``shelved_offload_time`` is 0.

        :raises: InstanceNotFound, InstanceInvalidState
        """
        row = common.start(instance_uuid, 'shelve', (db_instances.ACTIVE,),
                           db_instances.SHELVING)
        if CONF.shelved_offload_time != 0:
            common.finish(instance_uuid, vm_state=db_instances.SHELVED)
            LOG.info('Instance %s shelved on %s (offload: %s)',
                     instance_uuid, row.host,
                     'never' if CONF.shelved_offload_time < 0 else
                     'after %d s' % CONF.shelved_offload_time)
            return common.view(instance_uuid)
        common.finish(instance_uuid, vm_state=db_instances.SHELVED,
                      task_state=db_instances.SHELVING_OFFLOADING)
        self._offload(ctxt, instance_uuid, row.host)
        return common.view(instance_uuid)

    def _offload(self, ctxt, instance_uuid, host):
        """Take a shelved instance (task_state shelving_offloading) off
        ``host``: the compute forgets it, its claim goes. If the compute
        does not answer, the instance stays shelved on its host (the
        periodic task tries again when shelved_offload_time > 0)."""
        common.notify_action(instance_uuid, 'shelve-offload', 'start')
        if host:
            try:
                self.compute_api.remove_instance(ctxt, host, instance_uuid)
            except Exception as error:
                LOG.warning('Offload of %s: the compute on %s did not '
                            'remove it (%s); it stays shelved there',
                            instance_uuid, host, build.error_text(error))
                common.finish(instance_uuid,
                              fault='Offload from %s failed: %s'
                              % (host, build.error_text(error)))
                return False
        with db_api.writer() as session:
            released = claims.release_resources(session, instance_uuid)
            db_instances.update(session, instance_uuid, host=None, node=None,
                                vm_state=db_instances.SHELVED_OFFLOADED,
                                task_state=None)
        LOG.info('Instance %s offloaded from %s (%d allocation(s) '
                 'released)', instance_uuid, host, len(released))
        common.notify_action(instance_uuid, 'shelve-offload', 'end')
        return True

    def offload_expired(self, ctxt):
        """Offload instances shelved longer than shelved_offload_time;
        how many were offloaded."""
        if CONF.shelved_offload_time <= 0:
            return 0
        cutoff = models.utcnow() - datetime.timedelta(
            seconds=CONF.shelved_offload_time)
        with db_api.reader() as session:
            uuids = _shelved_before(session, cutoff)
        offloaded = 0
        for uuid in uuids:
            if not _take_expired(uuid, cutoff):
                continue   # another conductor, or the user, was quicker
            with db_api.reader() as session:
                host = db_instances.get(session, uuid).host
            LOG.info('Instance %s has been shelved longer than %d s; '
                     'offloading it', uuid, CONF.shelved_offload_time)
            try:
                offloaded += self._offload(ctxt, uuid, host)
            except Exception:
                LOG.exception('Offload of %s failed', uuid)
                common.abort(uuid)
        return offloaded

    def unshelve(self, ctxt, instance_uuid):
        """Make a shelved instance active again: where it is if it was not
        offloaded, else on a host the scheduler chooses and claims.

        :raises: InstanceNotFound, InstanceInvalidState, NoValidHost,
            InstanceGroupNotFound, InvalidRequest
        """
        row = common.start(instance_uuid, 'unshelve',
                           (db_instances.SHELVED,
                            db_instances.SHELVED_OFFLOADED),
                           db_instances.UNSHELVING)
        if row.vm_state == db_instances.SHELVED:
            common.finish(instance_uuid, vm_state=db_instances.ACTIVE,
                          fault=None)
            LOG.info('Instance %s unshelved on %s', instance_uuid, row.host)
            return common.view(instance_uuid)
        try:
            spec = common.spec_for(row, rebuild.current_flavor(row))
            build.load_group(spec)
            # It stays in its cell (Nova restricts unshelve to it too).
            common.keep_in_cell(spec, row)
            LOG.info('Unshelve of %s: scheduling it', instance_uuid)
            [[selection]] = self.scheduler_api.select_destinations(
                ctxt, spec, [instance_uuid], return_objects=True,
                return_alternates=False)
            common.refuse_other_cell(instance_uuid, spec, selection)
        except exception.NoValidHost as error:
            fault = 'Unshelve of %s found no host: %s' % (
                instance_uuid, build.error_text(error))
            LOG.warning('%s', fault)
            error = exception.NoValidHost(message=fault)
            common.finish(instance_uuid, error=error, fault=fault)
            raise error
        except Exception:
            # A scheduler that timed out may still have claimed: an
            # offloaded instance holds nothing.
            released = common.release(instance_uuid)
            if released:
                LOG.warning('Unshelve of %s failed after a claim was made; '
                            'released it', instance_uuid)
            common.abort(instance_uuid)
            raise
        host, node = selection.service_host, selection.nodename
        LOG.info('Unshelve of %s: claimed %s/%s, telling its compute',
                 instance_uuid, host, node)
        try:
            self.compute_api.receive_instance(ctxt, host, instance_uuid,
                                              node, spec)
        except Exception as error:
            fault = 'Unshelve of %s on %s failed: %s' % (
                instance_uuid, host, build.error_text(error))
            LOG.error('%s', fault)
            with db_api.writer() as session:
                claims.release_resources(session, instance_uuid)
                db_instances.update(session, instance_uuid, task_state=None,
                                    fault=fault)
            common.ended(instance_uuid, error)
            raise
        common.finish(instance_uuid, vm_state=db_instances.ACTIVE, host=host,
                      node=node, fault=None)
        LOG.info('Instance %s unshelved on %s/%s', instance_uuid, host, node)
        return common.view(instance_uuid)
