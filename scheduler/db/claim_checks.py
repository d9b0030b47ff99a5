"""Checks of the claims against the usage they account for: what
``gantt-manage db check``, ``gantt-status upgrade check`` and the
conductor's reaper read.

* :func:`find_inconsistent_nodes`: nodes whose usage columns differ from
  the sum of their allocations, or exceed their capacity, and whose
  ``used`` of another resource class (``compute_node_inventories``)
  differs from the sum of their allocation items of it.
* :func:`find_stray_allocations` (and :func:`stray_claims`): allocations
  that no consumer holds legitimately (a failed build's, a deleted
  instance's, an ended migration's...), and :func:`release_if_stray`,
  which gives one back if it is still stray::

    with db_api.writer() as session:
        for row, kind in claim_checks.stray_claims(session, cutoff):
            claim_checks.release_if_stray(session, row.consumer_uuid,
                                          row.compute_node_id, cutoff)
"""

import collections

import sqlalchemy as sa

from scheduler.db import class_claims
from scheduler.db import claims
from scheduler.db import models
from scheduler import hardware

_NODE = models.ComputeNode.__table__
_ALLOC = models.Allocation.__table__
Resources = claims.Resources
RESOURCE_COLUMNS = claims.RESOURCE_COLUMNS
capacity_expression = claims.capacity_expression
release_resources = claims.release_resources


def find_inconsistent_nodes(session):
    """Nodes whose usage columns differ from their allocations or capacity.

    Returns a list of ``(node row, [problem strings])``; empty when all is
    well. Used by ``gantt-manage db check``.
    """
    sums = (sa.select(_ALLOC.c.compute_node_id,
                      sa.func.sum(_ALLOC.c.vcpus).label('vcpus'),
                      sa.func.sum(_ALLOC.c.memory_mb).label('memory_mb'),
                      sa.func.sum(_ALLOC.c.disk_gb).label('disk_gb'))
            .group_by(_ALLOC.c.compute_node_id).subquery())
    query = (sa.select(_NODE, sums.c.vcpus.label('alloc_vcpus'),
                       sums.c.memory_mb.label('alloc_memory_mb'),
                       sums.c.disk_gb.label('alloc_disk_gb'),
                       *[capacity_expression(f).label('cap_' + f)
                         for f in Resources._fields])
             .outerjoin(sums, sums.c.compute_node_id == _NODE.c.id)
             .order_by(_NODE.c.host, _NODE.c.hypervisor_hostname))
    records = collections.defaultdict(list)
    for node_id, record in session.execute(
            sa.select(_ALLOC.c.compute_node_id, _ALLOC.c.hardware)
            .where(_ALLOC.c.hardware.is_not(None))):
        records[node_id].append(record)
    class_problems = class_claims.usage_problems(session)
    problems = []
    for row in session.execute(query):
        found = []
        for field in Resources._fields:
            used = getattr(row, RESOURCE_COLUMNS[field][0])
            allocated = getattr(row, 'alloc_' + field) or 0
            capacity = getattr(row, 'cap_' + field)
            if used != allocated:
                found.append('%s used %s but allocations sum to %s'
                             % (field, used, allocated))
            if used > capacity:
                found.append('%s used %s exceeds capacity %s'
                             % (field, used, capacity))
        found.extend(_hardware_problems(row, records.get(row.id, ())))
        found.extend(class_problems.get(row.id, ()))
        if found:
            problems.append((row, found))
    return problems


def _hardware_problems(row, records):
    """The node's NUMA and PCI usage against its allocations' records."""
    if not records and not row.numa_usage and not row.pci_usage:
        return []
    return hardware.usage_problems(hardware.Host(
        row.numa_topology, row.numa_usage, row.pci_device_pools or [],
        row.pci_usage or {}, row.cpu_allocation_ratio,
        row.ram_allocation_ratio), records)


# What ``find_stray_allocations`` calls each kind of claim that no live
# consumer holds legitimately.
STRAY_ERROR = 'stray claim (instance in error)'
STRAY_DELETED = 'stray claim (instance deleted)'
STRAY_OFFLOADED = 'stray claim (instance offloaded)'
STRAY_UNKNOWN = 'stray claim (unknown consumer)'
STRAY_SUPERSEDED = 'stray claim (superseded)'
STRAY_MIGRATION_ENDED = 'stray claim (migration ended)'
STRAY_KINDS = (STRAY_ERROR, STRAY_DELETED, STRAY_OFFLOADED, STRAY_UNKNOWN,
               STRAY_SUPERSEDED, STRAY_MIGRATION_ENDED)

_ENDED_MIGRATIONS = ('confirmed', 'reverted', 'completed', 'done', 'error',
                     'failed')
_MOVING_MIGRATIONS = ('pre-migrating', 'accepted', 'finished')

StrayAllocation = collections.namedtuple(
    'StrayAllocation', 'consumer_uuid host node why')


def _stray_candidates(session, created_before=None, consumer_uuid=None,
                      compute_node_id=None):
    """Every allocation (or those asked for) with what is known of its
    consumer: the instance or migration it is, and whether the instance
    has a move in progress."""
    instance = models.Instance.__table__
    migration = models.Migration.__table__.alias('consumer_migration')
    moving = models.Migration.__table__.alias('moving_migration')
    in_progress = (sa.select(moving.c.id)
                   .where(moving.c.instance_uuid == _ALLOC.c.consumer_uuid,
                          moving.c.status.in_(_MOVING_MIGRATIONS))
                   .exists())
    query = (
        sa.select(_ALLOC.c.consumer_uuid, _ALLOC.c.compute_node_id,
                  _NODE.c.host.label('alloc_host'),
                  _NODE.c.hypervisor_hostname.label('alloc_node'),
                  instance.c.id.label('instance_id'), instance.c.vm_state,
                  instance.c.task_state, instance.c.host, instance.c.node,
                  instance.c.deleted, migration.c.id.label('migration_id'),
                  migration.c.status, in_progress.label('moving'))
        .join(_NODE, _NODE.c.id == _ALLOC.c.compute_node_id)
        .outerjoin(instance, instance.c.uuid == _ALLOC.c.consumer_uuid)
        .outerjoin(migration, migration.c.uuid == _ALLOC.c.consumer_uuid)
        .order_by(_ALLOC.c.consumer_uuid, _NODE.c.host))
    if created_before is not None:
        query = query.where(_ALLOC.c.created_at < created_before)
    if consumer_uuid is not None:
        query = query.where(_ALLOC.c.consumer_uuid == consumer_uuid)
    if compute_node_id is not None:
        query = query.where(_ALLOC.c.compute_node_id == compute_node_id)
    return session.execute(query).all()


def _instance_stray_kind(row):
    if row.deleted or row.vm_state == 'deleted':
        return STRAY_DELETED
    if row.vm_state == 'building' or row.task_state is not None:
        return None   # a build or an operation is under way
    if row.vm_state == 'shelved_offloaded':
        return STRAY_OFFLOADED
    if row.vm_state == 'error' and not row.host:
        return STRAY_ERROR
    if row.moving:
        return None
    if row.alloc_host != row.host or (
            row.node and row.alloc_node != row.node):
        return STRAY_SUPERSEDED
    return None


def stray_kind(row):
    """Which kind of stray claim the candidate ``row`` is; None if its
    consumer holds it legitimately."""
    if row.instance_id is not None:
        return _instance_stray_kind(row)
    if row.migration_id is not None:
        return (STRAY_MIGRATION_ENDED if row.status in _ENDED_MIGRATIONS
                else None)
    return STRAY_UNKNOWN


def stray_claims(session, created_before=None):
    """``[(candidate row, kind)]`` of the stray allocations (see
    :func:`find_stray_allocations`); a row has ``consumer_uuid``,
    ``compute_node_id``, ``alloc_host`` and ``alloc_node``."""
    return [(row, kind) for row in _stray_candidates(session, created_before)
            for kind in (stray_kind(row),) if kind is not None]


def find_stray_allocations(session, created_before=None):
    """Allocations no consumer holds legitimately, each as a
    :class:`StrayAllocation` whose ``why`` is one of :data:`STRAY_KINDS`:

    * an instance in ERROR without a host (a failed build), deleted, or
      shelved-offloaded, with no operation under way;
    * a consumer that is neither an instance nor a migration (e.g. a
      ``select_destinations`` for an instance that does not exist);
    * superseded: a settled instance holding a claim on a node other than
      its own, with no move in progress;
    * a migration that ended.

    An instance still building, or with a task under way, is never
    listed. With ``created_before`` only older allocations are.
    """
    return [StrayAllocation(row.consumer_uuid, row.alloc_host,
                            row.alloc_node, kind)
            for row, kind in stray_claims(session, created_before)]


def release_if_stray(session, consumer_uuid, compute_node_id,
                     created_before=None):
    """Release the consumer's allocation on the node if it is (still)
    stray; ``(kind, Resources)`` released, or None. Checking and
    releasing happen in the caller's transaction, and
    :func:`release_resources` gives back what one transaction deleted,
    so two callers at once release it once."""
    rows = _stray_candidates(session, created_before, consumer_uuid,
                             compute_node_id)
    kind = stray_kind(rows[0]) if rows else None
    if kind is None:
        return None
    released = release_resources(session, consumer_uuid, compute_node_id)
    if not released:
        return None
    return kind, released[0][1]
