"""Who works on each build request of the API database, and taking over.

A super-conductor process owns the build requests it accepted or took
over: its name is in ``owner`` and it renews their ``updated_at`` while
it lives (:func:`renew`). A build request whose owner stopped renewing
it for longer than a grace period (the process died), one left behind
with its ``fault`` that long ago, and one left waiting for a cell can
be taken over by another process with :func:`take`: one conditional
UPDATE, so two processes never both win it. What ends a build request
(:func:`finish`: its instance is mapped to a cell) or leaves it behind
(:func:`leave`) names the owner and changes nothing for a process that
lost it meanwhile::

    cutoff = models.utcnow() - datetime.timedelta(seconds=grace)
    with db_api.api_writer() as session:
        for row in build_requests.unowned(session, cutoff):
            if build_requests.take(session, row.instance_uuid, me, cutoff):
                ...                      # resume it
        build_requests.renew(session, me, uuids_in_hand)

Rows are SQLAlchemy rows of ``build_requests``; the times are naive UTC
(:func:`scheduler.db.models.utcnow`), so the super-conductors' clocks
must agree to well within the grace period (NTP), as Nova's
``service_down_time`` assumes.
"""

import sqlalchemy as sa

from scheduler.db import api_models
from scheduler.db import models

_BUILD = api_models.BuildRequest.__table__

# Statements of an IN list go in chunks of this many values.
CHUNK = 500


def _last_sign(table=_BUILD):
    """When the owner last said it works on the row (a row of an older
    release has no ``updated_at``: its creation)."""
    return sa.func.coalesce(table.c.updated_at, table.c.created_at)


def _takeable(cutoff):
    """Left waiting for a cell (whether that cell answers is for the
    caller to see), or not renewed (nor left) since ``cutoff``."""
    return sa.or_(sa.and_(_BUILD.c.owner.is_(None),
                          _BUILD.c.waiting_cell_uuid.is_not(None)),
                  _last_sign() < cutoff)


def renew(session, owner, instance_uuids):
    """Say that ``owner`` still works on those of ``instance_uuids`` it
    owns; how many rows it renewed."""
    uuids = sorted(set(instance_uuids))
    renewed = 0
    now = models.utcnow()
    for start in range(0, len(uuids), CHUNK):
        renewed += session.execute(
            sa.update(_BUILD)
            .where(_BUILD.c.owner == owner,
                   _BUILD.c.instance_uuid.in_(uuids[start:start + CHUNK]))
            .values(updated_at=now)).rowcount
    return renewed


def unowned(session, cutoff):
    """The build requests that may be taken over: left waiting for a
    cell, or whose owner has not renewed (or left) them since
    ``cutoff``; oldest first, without their request spec."""
    return session.execute(
        sa.select(_BUILD.c.instance_uuid, _BUILD.c.owner,
                  _BUILD.c.created_at, _BUILD.c.updated_at,
                  _BUILD.c.waiting_cell_uuid, _BUILD.c.fault)
        .where(_takeable(cutoff))
        .order_by(_BUILD.c.created_at, _BUILD.c.id)).all()


def take(session, instance_uuid, owner, cutoff):
    """Make ``owner`` the owner of the build request if it is still
    takeable (see :func:`unowned`), or already its (a retried write);
    whether it won it."""
    return session.execute(
        sa.update(_BUILD)
        .where(_BUILD.c.instance_uuid == instance_uuid,
               sa.or_(_takeable(cutoff), _BUILD.c.owner == owner))
        .values(owner=owner, updated_at=models.utcnow(),
                waiting_cell_uuid=None)).rowcount == 1


def finish(session, instance_uuid, owner):
    """Delete the build request if ``owner`` still owns it; whether it
    did."""
    return session.execute(
        sa.delete(_BUILD).where(_BUILD.c.instance_uuid == instance_uuid,
                                _BUILD.c.owner == owner)).rowcount == 1


def leave(session, instance_uuid, owner, fault, waiting_cell_uuid=None):
    """``owner`` leaves the build request behind with ``fault`` (and the
    cell whose database it waits for), for a later :func:`take`; whether
    it still owned it."""
    return session.execute(
        sa.update(_BUILD)
        .where(_BUILD.c.instance_uuid == instance_uuid,
               _BUILD.c.owner == owner)
        .values(owner=None, fault=fault, updated_at=models.utcnow(),
                waiting_cell_uuid=waiting_cell_uuid)).rowcount == 1


def owned_by(session, owner):
    """The instance uuids of the build requests ``owner`` owns."""
    return [row.instance_uuid for row in session.execute(
        sa.select(_BUILD.c.instance_uuid).where(_BUILD.c.owner == owner))]
