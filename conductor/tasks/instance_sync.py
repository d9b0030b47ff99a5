"""Sync a compute's instances with the database: what repairs lost reports.

A compute reports a spawn once (``instance_update``), retrying for a
while if the conductor or its database does not answer. What still slips
through an outage is repaired here: every ``[DEFAULT]
sync_power_state_interval`` seconds each compute sends the instances it
runs, ``{uuid: node}``, and :func:`sync_host_instances`

* marks ``active`` each one still ``building`` on this very host (its
  spawn report was lost), so that the build timeout never puts a running
  instance in ERROR;
* answers which ones the compute should forget: instances Gantt has no
  record of, deleted ones, and builds that ended in ERROR off any host
  (timed out, or failed while the report was lost). Their claims were
  released when they ended; the compute only stops counting them.

* puts in ERROR, releasing their claims, the builds placed on this host
  that it has not heard of (neither running nor spawning) for two sync
  intervals: the build message was lost on its way (a broker that
  restarted drops the messages of its queues). Left alone they would hold
  their claims, building, until ``[DEFAULT] instance_build_timeout``.

Instances in any other state are left as they are: during a resize both
the source and the destination run the instance until it is confirmed or
reverted.

Example::

    outcome = instance_sync.sync_host_instances('cmp1', {uuid: 'cmp1'})
    # {'activated': [uuid], 'forget': []}
"""

import datetime

from oslo_log import log as logging

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import models

CONF = conf.CONF
LOG = logging.getLogger(__name__)

DELETED = 'deleted'


@db_api.retry_on_db_error
def sync_host_instances(host, instances):
    """Repair the records of the instances ``host`` runs (``{uuid:
    node}``); ``{'activated': [uuids], 'forget': [uuids], 'lost':
    [uuids]}``, sorted."""
    activated, forget = [], []
    with db_api.writer() as session:
        rows = {row.uuid: row for row in db_instances.list_instances(
            session, uuids=sorted(instances))}
        for uuid in sorted(instances):
            row = rows.get(uuid)
            if row is None or row.vm_state == DELETED or (
                    row.vm_state == db_instances.ERROR and row.host is None):
                forget.append(uuid)
            elif row.vm_state == db_instances.BUILDING and \
                    row.host == host and db_instances.update(
                        session, uuid,
                        expected_vm_state=db_instances.BUILDING,
                        vm_state=db_instances.ACTIVE, task_state=None,
                        launched_at=models.utcnow()):
                activated.append(uuid)
    lost = _fail_lost_builds(host, instances)
    for uuid in activated:
        LOG.warning('Instance %s runs on %s but was still building: its '
                    'spawn report was lost; now active', uuid, host)
    if forget:
        LOG.info('Compute %s runs instances that ended or are unknown; '
                 'it forgets them: %s', host, ', '.join(forget))
    return {'activated': activated, 'forget': forget, 'lost': lost}


LOST_FAULT = ('The build never reached compute %s (its message was lost on '
              'the way); its claims were released')


@db_api.retry_on_db_error
def _fail_lost_builds(host, instances):
    """ERROR, with their claims released, for the builds placed on
    ``host`` longer ago than two sync intervals that it did not report;
    their UUIDs, sorted."""
    interval = CONF.sync_power_state_interval
    if interval <= 0:
        return []
    cutoff = models.utcnow() - datetime.timedelta(seconds=2 * interval)
    lost = []
    with db_api.writer() as session:
        for row in db_instances.list_instances(
                session, host=host, vm_state=db_instances.BUILDING):
            if row.uuid in instances or row.task_state != 'spawning' or \
                    row.updated_at is None or row.updated_at > cutoff:
                continue
            if db_instances.update(
                    session, row.uuid, expected_vm_state=db_instances.BUILDING,
                    expected_task_state='spawning',
                    vm_state=db_instances.ERROR, task_state=None, host=None,
                    node=None, fault=LOST_FAULT % host):
                claims.release_resources(session, row.uuid)
                lost.append(row.uuid)
    for uuid in lost:
        LOG.warning('Instance %s was placed on %s, which never heard of '
                    'it: now in ERROR, its claims released', uuid, host)
    return lost
