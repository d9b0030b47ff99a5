"""Time out builds stuck in BUILDING, so that no claim outlives its build.

A build can stop half-way without anybody left to finish it: a conductor
killed after the scheduler claimed and before the cast to the compute, a
scheduler answering a conductor that is gone, a compute that never reports
the spawn. Its claim would hold capacity for good. The conductor's periodic
task (every ``[conductor] periodic_task_interval`` seconds) calls
:func:`reap_stuck_builds`: with ``[DEFAULT] instance_build_timeout`` above
0, every instance still ``building`` that was created longer ago than that
goes to ERROR with a fault saying why, off its host (as a build that
failed), and all its allocations are released, in one transaction per
instance; a WARNING names the host and what was released.

The state change is conditional (only if the instance is still
``building``), so two conductors reaping at once, or a compute reporting
the spawn at that moment, cannot both win: either the spawn counts and the
instance stays, or the instance is reaped and the late ACTIVE report is
refused (``ConductorManager.instance_update``), after which the compute
forgets the instance.

It also releases stray claims (:func:`reap_stray_claims`): claims that no
consumer holds legitimately
(:func:`scheduler.db.claim_checks.find_stray_allocations` names the
kinds: an instance in ERROR without a host, deleted or shelved-offloaded;
an unknown consumer; a superseded claim; a migration that ended) and that
are older than ``[conductor] stray_allocation_grace_period``. Each is
re-checked and released in one transaction, so two conductors release it
once, and logged at WARNING with its kind.

Example::

    CONF.set_override('instance_build_timeout', 300)
    reaped = reaper.reap_stuck_builds(ctxt)   # how many went to ERROR
    released = reaper.reap_stray_claims(ctxt) # how many claims went
"""

import datetime

import sqlalchemy as sa
from oslo_log import log as logging

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import claim_checks
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler import prometheus

CONF = conf.CONF
LOG = logging.getLogger(__name__)

FAULT = ('Build timed out after %d seconds ([DEFAULT] '
         'instance_build_timeout); its claims were released')


def reap_stuck_builds(ctxt):
    """Put the instances building longer than ``[DEFAULT]
    instance_build_timeout`` in ERROR and release their claims; how many
    were reaped (0 when the timeout is 0, i.e. off)."""
    timeout = CONF.instance_build_timeout
    if timeout <= 0:
        return 0
    cutoff = models.utcnow() - datetime.timedelta(seconds=timeout)
    with db_api.reader() as session:
        stuck = [(row.uuid, row.host, row.node)
                 for row in db_instances.stuck_building(session, cutoff)]
    reaped = 0
    for uuid, host, node in stuck:
        released = _reap(uuid, timeout)
        if released is None:
            LOG.debug('Instance %s left building before it was reaped',
                      uuid)
            continue
        reaped += 1
        LOG.warning('Instance %s (host %s, node %s) was still building after '
                    '%d seconds ([DEFAULT] instance_build_timeout): now in '
                    'ERROR; released %s', uuid, host or '-', node or '-',
                    timeout, _describe(released) or 'no claims')
    prometheus.reaped('stuck_build', reaped)
    return reaped


def reap_stray_claims(ctxt):
    """Release the stray claims older than ``[conductor]
    stray_allocation_grace_period``; how many this conductor released."""
    cutoff = models.utcnow() - datetime.timedelta(
        seconds=CONF.conductor.stray_allocation_grace_period)
    with db_api.reader() as session:
        found = [(row.consumer_uuid, row.compute_node_id, row.alloc_host,
                  row.alloc_node)
                 for row, _kind in claim_checks.stray_claims(session, cutoff)]
    released = 0
    for consumer_uuid, node_id, host, node in found:
        outcome = _release_stray(consumer_uuid, node_id, cutoff)
        if outcome is None:
            continue   # no longer stray, or another conductor was quicker
        kind, amounts = outcome
        released += 1
        prometheus.reaped('stray_claim')
        LOG.warning('Released a %s: consumer %s held %s', kind,
                    consumer_uuid, _describe([(host, node, amounts)]))
    return released


@db_api.retry_on_db_error
def _release_stray(consumer_uuid, node_id, cutoff):
    with db_api.writer() as session:
        return claim_checks.release_if_stray(session, consumer_uuid, node_id,
                                       cutoff)


@db_api.retry_on_db_error
def _reap(instance_uuid, timeout):
    """ERROR and release, if the instance is still building; what was
    released (``[(host, node, Resources)]``), or None if it was not."""
    with db_api.writer() as session:
        if not db_instances.update(
                session, instance_uuid,
                expected_vm_state=db_instances.BUILDING,
                vm_state=db_instances.ERROR, task_state=None, host=None,
                node=None, fault=FAULT % timeout):
            return None
        released = claims.release_resources(session, instance_uuid)
        return [_node_names(session, node_id) + (amounts,)
                for node_id, amounts in released]


def _node_names(session, node_id):
    nodes = models.ComputeNode.__table__
    row = session.execute(
        sa.select(nodes.c.host, nodes.c.hypervisor_hostname)
        .where(nodes.c.id == node_id)).first()
    if row is None:
        return ('node id %s' % node_id, '')
    return (row.host, row.hypervisor_hostname)


def _describe(released):
    return ', '.join(
        '%d vCPU, %d MB RAM, %d GB disk on %s/%s'
        % (amounts.vcpus, amounts.memory_mb, amounts.disk_gb, host, node)
        for host, node, amounts in released)
