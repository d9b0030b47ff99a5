"""Queries over ``instances``: the conductor's record of each server.

States follow Nova's vm_state values: ``building`` until a compute reports
the spawn, then ``active``; ``error`` with ``fault`` saying why. Moves add
``resized`` (a cold migration or resize waiting for confirm or revert),
``shelved`` (stopped, still holding its host) and ``shelved_offloaded`` (no
host, no claim); a delete ends in ``deleted``, the row kept with
``deleted`` set to its id (Nova's soft delete, :func:`soft_delete`).
``task_state`` says which operation is under way; an
operation starts only from ``task_state`` None, so that two operations on
one instance cannot interleave (:func:`update` with ``expected_task_state``).
"""

import sqlalchemy as sa

from scheduler import exception
from scheduler.db import models

_INSTANCE = models.Instance.__table__

BUILDING = 'building'
ACTIVE = 'active'
ERROR = 'error'
RESIZED = 'resized'
SHELVED = 'shelved'
SHELVED_OFFLOADED = 'shelved_offloaded'
DELETED = 'deleted'

# vm_states in which an instance holds no claim.
HOLDS_NO_CLAIM = (ERROR, SHELVED_OFFLOADED, DELETED)

# task_state values of the move operations (Nova's names).
RESIZE_PREP = 'resize_prep'
RESIZE_MIGRATING = 'resize_migrating'
RESIZE_CONFIRMING = 'resize_confirming'
RESIZE_REVERTING = 'resize_reverting'
MIGRATING = 'migrating'
REBUILDING = 'rebuilding'
REBUILD_SPAWNING = 'rebuild_spawning'
SHELVING = 'shelving'
SHELVING_OFFLOADING = 'shelving_offloading'
UNSHELVING = 'unshelving'
DELETING = 'deleting'

# expected_task_state=NO_TASK: only if task_state is NULL.
NO_TASK = 'none'

# Columns a caller may change through update(); anything else is refused.
UPDATABLE_FIELDS = ('host', 'node', 'vm_state', 'task_state', 'fault',
                    'launched_at', 'availability_zone', 'request_spec',
                    'flavor', 'display_name', 'build_alternates')


def create(session, uuid, flavor, request_spec, project_id=None,
           user_id=None, display_name=None, availability_zone=None):
    """Record a new instance in ``building``; returns its row's id.

    Creating an instance that already exists is an InvalidRequest, so a
    replayed request cannot build one server twice.
    """
    if session.execute(sa.select(_INSTANCE.c.id)
                       .where(_INSTANCE.c.uuid == uuid)).first():
        raise exception.InvalidRequest(
            reason='instance %s already exists' % uuid)
    now = models.utcnow()
    return session.execute(sa.insert(_INSTANCE).values(
        uuid=uuid, flavor=flavor, request_spec=request_spec,
        project_id=project_id, user_id=user_id, display_name=display_name,
        availability_zone=availability_zone, vm_state=BUILDING,
        task_state='scheduling', created_at=now,
        updated_at=now)).inserted_primary_key[0]


def get(session, uuid):
    """The instance row; InstanceNotFound if there is none."""
    row = session.execute(
        sa.select(_INSTANCE).where(_INSTANCE.c.uuid == uuid)).first()
    if row is None:
        raise exception.InstanceNotFound(uuid=uuid)
    return row


def update(session, uuid, expected_vm_state=None, expected_task_state=None,
           refused_task_state=None, expected_host=None, expected_node=None,
           **values):
    """Update fields of one instance; InstanceNotFound if missing.

    With ``expected_vm_state`` (a state or a tuple of states) and/or
    ``expected_task_state`` (:data:`NO_TASK` for NULL) the update happens
    only if the instance is still so, with ``expected_host`` and
    ``expected_node`` only if it is (still) placed there, and with
    ``refused_task_state`` only if its task_state is not that one;
    returns False when it was not.
    """
    unknown = set(values) - set(UPDATABLE_FIELDS)
    if unknown:
        raise exception.InvalidRequest(
            reason='cannot update instance fields %s'
            % ', '.join(sorted(unknown)))
    query = sa.update(_INSTANCE).where(_INSTANCE.c.uuid == uuid)
    if isinstance(expected_vm_state, (tuple, list)):
        query = query.where(_INSTANCE.c.vm_state.in_(expected_vm_state))
    elif expected_vm_state is not None:
        query = query.where(_INSTANCE.c.vm_state == expected_vm_state)
    if expected_task_state == NO_TASK:
        query = query.where(_INSTANCE.c.task_state.is_(None))
    elif expected_task_state is not None:
        query = query.where(_INSTANCE.c.task_state == expected_task_state)
    if expected_host is not None:
        query = query.where(_INSTANCE.c.host == expected_host)
    if expected_node is not None:
        query = query.where(_INSTANCE.c.node == expected_node)
    if refused_task_state is not None:
        query = query.where(sa.or_(
            _INSTANCE.c.task_state.is_(None),
            _INSTANCE.c.task_state != refused_task_state))
    values['updated_at'] = models.utcnow()
    result = session.execute(query.values(**values))
    if result.rowcount == 0:
        get(session, uuid)  # raises InstanceNotFound if it does not exist
        return False
    return True


def list_instances(session, uuids=None, host=None, vm_state=None,
                   include_deleted=True):
    query = sa.select(_INSTANCE).order_by(_INSTANCE.c.created_at,
                                          _INSTANCE.c.id)
    if not include_deleted:
        query = query.where(_INSTANCE.c.deleted == 0)
    if uuids is not None:
        query = query.where(_INSTANCE.c.uuid.in_(list(uuids)))
    if host is not None:
        query = query.where(_INSTANCE.c.host == host)
    if vm_state is not None:
        query = query.where(_INSTANCE.c.vm_state == vm_state)
    return session.execute(query).all()


def on_hosts(session, hosts=None):
    """``uuid, host, flavor, request_spec`` of the instances placed on a
    host (on any host, or on one of ``hosts``), in creation order: what
    the scheduler knows of the instances on each host."""
    query = (sa.select(_INSTANCE.c.uuid, _INSTANCE.c.host, _INSTANCE.c.flavor,
                       _INSTANCE.c.request_spec)
             .where(_INSTANCE.c.host.is_not(None))
             .order_by(_INSTANCE.c.id))
    if hosts is None:
        return session.execute(query).all()
    hosts = sorted(set(hosts))
    rows = []
    for start in range(0, len(hosts), 500):
        rows.extend(session.execute(
            query.where(_INSTANCE.c.host.in_(hosts[start:start + 500]))))
    return rows


def soft_delete(session, uuid):
    """Mark the instance deleted as Nova does (``vm_state`` deleted,
    ``deleted`` = its row id, ``deleted_at`` now), off its host, no task.
    The caller releases its claims in the same transaction."""
    now = models.utcnow()
    session.execute(
        sa.update(_INSTANCE).where(_INSTANCE.c.uuid == uuid)
        .values(vm_state=DELETED, task_state=None, host=None, node=None,
                deleted=_INSTANCE.c.id, deleted_at=now, updated_at=now))


def purge_row(session, row_id):
    """Remove one instance row by its id, whatever its state (the
    super-conductor undoing a creation of its own, or one that a build
    request it took over left half-done: an instance that was never
    mapped); whether it was there. The caller releases its claims in the
    same transaction."""
    return session.execute(sa.delete(_INSTANCE).where(
        _INSTANCE.c.id == row_id)).rowcount == 1


def stuck_deleting(session, changed_before):
    """Instances left in task_state ``deleting`` since before the given
    naive UTC time (a delete an outage interrupted), oldest first."""
    return session.execute(
        sa.select(_INSTANCE)
        .where(_INSTANCE.c.task_state == DELETING,
               _INSTANCE.c.updated_at < changed_before)
        .order_by(_INSTANCE.c.updated_at)).all()


def stuck_building(session, created_before):
    """Instances still ``building`` that were created before the given
    naive UTC time, oldest first."""
    return session.execute(
        sa.select(_INSTANCE)
        .where(_INSTANCE.c.vm_state == BUILDING,
               _INSTANCE.c.created_at < created_before)
        .order_by(_INSTANCE.c.created_at)).all()
