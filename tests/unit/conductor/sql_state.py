"""What the conductor's move tests read back from SQL: instances,
allocations, usage, migrations; whether usage matches allocations and
no ended or offloaded consumer still holds a claim."""

import sqlalchemy as sa

from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import claim_checks
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler.db import moves


def ctxt():
    return gantt_context.get_admin_context()


def instance(uuid):
    with db_api.reader() as session:
        return db_instances.get(session, uuid)


def allocations():
    """``{consumer uuid: host}`` of every allocation."""
    with db_api.reader() as session:
        rows = session.execute(sa.select(
            models.Allocation.consumer_uuid,
            models.ComputeNode.host).join(
                models.ComputeNode,
                models.ComputeNode.id ==
                models.Allocation.compute_node_id)).all()
    return {row.consumer_uuid: row.host for row in rows}


def node_id(host):
    """The id of ``host``'s compute node (one node per host here)."""
    with db_api.reader() as session:
        return session.execute(sa.select(models.ComputeNode.id).where(
            models.ComputeNode.host == host)).scalar_one()


def allocation_items(consumer_uuid):
    """``{node id: {class: amount}}``: the consumer's claims of the
    classes beyond VCPU, MEMORY_MB and DISK_GB."""
    with db_api.reader() as session:
        return claims.get_allocation_items(session, consumer_uuid)


def usage():
    """``{host: (vcpus_used, memory_mb_used, local_gb_used)}``."""
    with db_api.reader() as session:
        rows = session.execute(sa.select(
            models.ComputeNode.host, models.ComputeNode.vcpus_used,
            models.ComputeNode.memory_mb_used,
            models.ComputeNode.local_gb_used)).all()
    return {row.host: (row.vcpus_used, row.memory_mb_used,
                       row.local_gb_used) for row in rows}


def migrations(instance_uuid=None):
    with db_api.reader() as session:
        return moves.list_migrations(session, instance_uuid)


def assert_consistent():
    with db_api.reader() as session:
        assert claim_checks.find_inconsistent_nodes(session) == []
        assert claim_checks.find_stray_allocations(session) == []


def canonical(primitive):
    """A stored object primitive with its lists of changed fields sorted:
    oslo.versionedobjects writes them in set order, which differs between
    two serializations of the same object."""
    if isinstance(primitive, dict):
        return {key: sorted(value) if key.endswith('.changes')
                else canonical(value) for key, value in primitive.items()}
    if isinstance(primitive, (list, tuple)):
        return type(primitive)(canonical(item) for item in primitive)
    return primitive


def snapshot():
    """Everything an operation could change, to compare before/after."""
    with db_api.reader() as session:
        instances = [canonical(tuple(row)) for row in
                     db_instances.list_instances(session)]
        migration_rows = [tuple(row) for row in
                          moves.list_migrations(session)]
    return instances, allocations(), usage(), migration_rows


def set_service(host, **values):
    """Change a compute's service row (``forced_down``, ``disabled``),
    marked as updated so the schedulers' host cache reads it again."""
    values['updated_at'] = models.utcnow()
    with db_api.writer() as session:
        session.execute(sa.update(models.Service.__table__)
                        .where(models.Service.host == host)
                        .values(**values))
