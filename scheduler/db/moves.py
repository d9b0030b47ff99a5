"""Queries over ``migrations``: the record of each move of an instance.

(The module is not called ``migrations``: that is alembic's directory.)

Types and statuses follow Nova: ``migration`` (cold migrate), ``resize``,
``live-migration`` and ``evacuation``; a cold migration or resize goes
``pre-migrating`` -> ``finished`` (waiting for the user) -> ``confirmed`` or
``reverted``; a live migration ``accepted`` -> ``completed``; an evacuation
``accepted`` -> ``done``; any of them ``error`` when it failed, with
``error`` saying why::

    with db_api.writer() as session:
        record = moves.create(session, instance_uuid, moves.RESIZE,
                              source_host='h1', source_node='h1',
                              old_flavor=old, new_flavor=new)
        moves.update(session, record.uuid, status=moves.FINISHED,
                     dest_host='h2', dest_node='h2')
"""

from oslo_utils import uuidutils
import sqlalchemy as sa

from scheduler import exception
from scheduler.db import models

_MIGRATION = models.Migration.__table__

MIGRATION = 'migration'
RESIZE = 'resize'
LIVE_MIGRATION = 'live-migration'
EVACUATION = 'evacuation'
TYPES = (MIGRATION, RESIZE, LIVE_MIGRATION, EVACUATION)

PRE_MIGRATING = 'pre-migrating'
ACCEPTED = 'accepted'
FINISHED = 'finished'
CONFIRMED = 'confirmed'
REVERTED = 'reverted'
COMPLETED = 'completed'
DONE = 'done'
ERROR = 'error'

# Statuses of a migration that still holds something (a claim, a host).
IN_PROGRESS = (PRE_MIGRATING, ACCEPTED, FINISHED)

UPDATABLE_FIELDS = ('status', 'dest_host', 'dest_node', 'error')


def create(session, instance_uuid, migration_type, source_host=None,
           source_node=None, dest_host=None, dest_node=None, old_flavor=None,
           new_flavor=None, status=None):
    """Record a new migration; returns its row."""
    if migration_type not in TYPES:
        raise ValueError('unknown migration type %r' % migration_type)
    uuid = uuidutils.generate_uuid()
    now = models.utcnow()
    session.execute(sa.insert(_MIGRATION).values(
        uuid=uuid, instance_uuid=instance_uuid, migration_type=migration_type,
        status=status or (PRE_MIGRATING if migration_type in (MIGRATION,
                                                             RESIZE)
                          else ACCEPTED),
        source_host=source_host, source_node=source_node,
        dest_host=dest_host, dest_node=dest_node, old_flavor=old_flavor,
        new_flavor=new_flavor, created_at=now, updated_at=now))
    return get(session, uuid)


def get(session, uuid):
    row = session.execute(
        sa.select(_MIGRATION).where(_MIGRATION.c.uuid == uuid)).first()
    if row is None:
        raise exception.NotFound('Migration %s could not be found.' % uuid)
    return row


def update(session, uuid, **values):
    unknown = set(values) - set(UPDATABLE_FIELDS)
    if unknown:
        raise ValueError('cannot update migration fields %s'
                         % ', '.join(sorted(unknown)))
    values['updated_at'] = models.utcnow()
    session.execute(sa.update(_MIGRATION).where(_MIGRATION.c.uuid == uuid)
                    .values(**values))


def latest(session, instance_uuid, statuses=None, types=None):
    """The instance's newest migration (in ``statuses``, of ``types``), or
    None."""
    query = (sa.select(_MIGRATION)
             .where(_MIGRATION.c.instance_uuid == instance_uuid)
             .order_by(_MIGRATION.c.id.desc()))
    if statuses is not None:
        query = query.where(_MIGRATION.c.status.in_(list(statuses)))
    if types is not None:
        query = query.where(_MIGRATION.c.migration_type.in_(list(types)))
    return session.execute(query.limit(1)).first()


def list_migrations(session, instance_uuid=None):
    query = sa.select(_MIGRATION).order_by(_MIGRATION.c.id)
    if instance_uuid is not None:
        query = query.where(_MIGRATION.c.instance_uuid == instance_uuid)
    return session.execute(query).all()
