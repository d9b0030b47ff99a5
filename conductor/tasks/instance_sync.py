"""Sync a compute's instances with the database: what repairs lost reports.

A compute reports a spawn once (``instance_update``), retrying for a
while if the conductor or its database does not answer. What still slips
through an outage is repaired here: every ``[DEFAULT]
sync_power_state_interval`` seconds each compute sends the instances it
runs, ``{uuid: node}``, and (conductor API 1.4) the builds it is still
spawning; :func:`sync_host_instances`

* records what the compute said (``compute_reports``, which ``gantt-manage
  db check`` holds the instances against);
* marks ``active`` each running one still ``building`` on this very
  host and node: the compute says it runs, so its spawn succeeded and
  only the report was lost. A build still spawning is never marked
  active, and neither is anything of a 1.1 sync, which cannot tell the
  two apart;
* answers which ones the compute should forget: instances Gantt has no
  record of, deleted ones, builds that ended in ERROR off any host
  (timed out, or failed while the report was lost), and builds placed on
  another host or node (a build message that came after the instance
  moved on, or came twice; the spawn report of such a one is refused,
  but it may have been lost). Their claims were released when they
  ended or moved; the compute only stops counting them;
* takes the builds placed on this host that it has not heard of (neither
  running nor spawning) for two sync intervals: the build message was
  lost on its way (a broker that restarted drops the messages of its
  queues). Each is taken by one conductor (``task_state`` from
  ``spawning`` back to ``scheduling``), its claim on this host released
  in the same transaction; the caller moves it to its next alternate
  (``BuildTask.reschedule_lost``), as after a failed spawn.

Instances in any other state are left as they are: during a resize both
the source and the destination run the instance until it is confirmed or
reverted.

Example::

    outcome = instance_sync.sync_host_instances('cmp1', {uuid: 'cmp1'}, [])
    # {'activated': [uuid], 'forget': [], 'lost': [],
    #  'lost_builds': []}    (LostBuild tuples, for the caller only)
"""

import collections
import datetime

from oslo_log import log as logging

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import compute_reports
from scheduler.db import instances as db_instances
from scheduler.db import models

CONF = conf.CONF
LOG = logging.getLogger(__name__)

DELETED = 'deleted'
SPAWNING = 'spawning'
SCHEDULING = 'scheduling'

LOST_REASON = ('the build never reached compute %s (its message was lost '
               'on the way)')

# A build taken back from the host it never reached: what moving it to
# its next alternate needs.
LostBuild = collections.namedtuple(
    'LostBuild', 'uuid host node request_spec alternates tried reason')


@db_api.retry_on_db_error
def sync_host_instances(host, instances, spawning=None):
    """Repair the records of the instances ``host`` runs (``{uuid:
    node}``) and spawns (uuids; None from a 1.1 sync); ``{'activated':
    [uuids], 'forget': [uuids], 'lost': [uuids], 'lost_builds':
    [LostBuild]}``, the lists of uuids sorted."""
    activated, forget, stale = [], [], []
    with db_api.writer() as session:
        compute_reports.record(session, host, instances, spawning or ())
        rows = {row.uuid: row for row in db_instances.list_instances(
            session, uuids=sorted(instances))}
        for uuid, node in sorted(instances.items()):
            row = rows.get(uuid)
            if row is None or row.vm_state == DELETED or (
                    row.vm_state == db_instances.ERROR and row.host is None):
                forget.append(uuid)
            elif row.vm_state == db_instances.BUILDING and \
                    (row.host, row.node) != (host, node):
                # Built here from a build message that came after the
                # instance moved on (or came twice): it is placed, and
                # claims, elsewhere.
                stale.append(uuid)
            elif spawning is not None and \
                    row.vm_state == db_instances.BUILDING and \
                    db_instances.update(
                        session, uuid,
                        expected_vm_state=db_instances.BUILDING,
                        refused_task_state=db_instances.DELETING,
                        expected_host=host, expected_node=node,
                        vm_state=db_instances.ACTIVE, task_state=None,
                        launched_at=models.utcnow(), build_alternates=None):
                activated.append(uuid)
    heard = set(instances) | set(spawning or ())
    lost = take_lost_builds(host, heard)
    for uuid in activated:
        LOG.warning('Instance %s runs on %s but was still building: its '
                    'spawn report was lost; now active', uuid, host)
    if forget:
        LOG.info('Compute %s runs instances that ended or are unknown; '
                 'it forgets them: %s', host, ', '.join(forget))
    if stale:
        LOG.warning('Compute %s runs builds placed on another host or node '
                    '(their build message came after they moved on); it '
                    'forgets them: %s', host, ', '.join(stale))
    return {'activated': activated, 'forget': sorted(forget + stale),
            'lost': sorted(build.uuid for build in lost),
            'lost_builds': lost}


@db_api.retry_on_db_error
def take_lost_builds(host, heard):
    """Take back the builds placed on ``host`` longer ago than two sync
    intervals that it has not heard of (not in ``heard``): each back to
    ``scheduling``, its claim on the host released; a
    :class:`LostBuild` for each one taken here (another conductor may
    have taken some first)."""
    interval = CONF.sync_power_state_interval
    if interval <= 0:
        return []
    cutoff = models.utcnow() - datetime.timedelta(seconds=2 * interval)
    lost = []
    with db_api.writer() as session:
        for row in db_instances.list_instances(
                session, host=host, vm_state=db_instances.BUILDING):
            if row.uuid in heard or row.task_state != SPAWNING or \
                    row.updated_at is None or row.updated_at > cutoff:
                continue
            if not db_instances.update(
                    session, row.uuid, expected_vm_state=db_instances.BUILDING,
                    expected_task_state=SPAWNING, task_state=SCHEDULING,
                    host=None, node=None, build_alternates=None):
                continue
            node = db_compute_nodes.get_node_by_name(session, host, row.node)
            if node is not None:
                claims.release_resources(session, row.uuid, node.id)
            record = row.build_alternates or {}
            lost.append(LostBuild(
                row.uuid, host, row.node, row.request_spec,
                list(record.get('alternates') or ()),
                [list(pair) for pair in record.get('tried') or ()],
                LOST_REASON % host))
    for build in lost:
        LOG.warning('Instance %s was placed on %s, which never heard of it '
                    'in two syncs: its claim there released, it moves to '
                    'its next alternate (%d left)', build.uuid, host,
                    len(build.alternates))
    return lost
