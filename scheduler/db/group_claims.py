"""A server group's hard policy, checked by the claim of each member.

A claim of a member of an ``affinity`` or ``anti-affinity`` group
(:func:`scheduler.db.claims.claim_in_sql` with ``group_uuid``) is
refused when it would break the policy given the claims the group's
*other* members hold now. Members of one group claimed at the same time
by several schedulers, workers or conductors take turns on a lock of the
group's row, so each sees what the ones before it committed.

One database (no ``[api_database]``): the group, its members and the
allocations are in ``[database]``; :func:`check_group_policy` locks the
group's row in the claim's own transaction and counts the members'
allocations there, one query.

Cells (``[api_database]`` set): the group and its members are in the API
database, the allocations in the cells. :func:`policy_lock` opens an API
transaction that locks the group's row (``SELECT ... FOR UPDATE``; the
database's write lock on SQLite) and holds it around the claim's own
transaction in the target cell, then lets it go: one group's claims take
turns whatever cell they claim in. Under that lock:

* anti-affinity counts the other members' allocations on the target
  host in the target cell, in the claim's transaction. Host names are
  unique across cells (host mappings), so every claim on that host is
  in that cell's database;
* affinity is refused when another member holds an allocation on any
  other host: in the target cell (the claim's transaction), and in every
  other cell a member may be in, by its instance mapping (a member not
  mapped to a cell yet, being built, is looked for in every cell but
  cell0). A cell that cannot be read refuses the claim (where its
  members are cannot be known).

When the API database is the target cell's own database (one database
holding both schemas), the lock is taken in the claim's transaction, as
with one database::

    with group_claims.policy_lock(group_uuid) as check:
        with db_api.writer() as session:
            conflict = check(session, consumer_uuid, host)
            if conflict is None:
                ...  # claim
"""

import contextlib

from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import mappings
from scheduler.db import models
from scheduler import placement_types

CONF = conf.CONF
LOG = logging.getLogger(__name__)

HARD_POLICIES = placement_types.HARD_POLICIES

_NODE = models.ComputeNode.__table__
_ALLOC = models.Allocation.__table__
# The same definitions in the API database (api_models copies them).
_GROUP = models.InstanceGroup.__table__
_MEMBER = models.InstanceGroupMember.__table__

# Members per IN list.
CHUNK = 500


class GroupConflict:
    """Why a claim would break a server group's policy.

    ``hosts`` counts the hosts where the group's other members hold
    claims now; :meth:`allows` tells whether another host would do, so
    that a caller can skip hosts without asking the database again.
    ``unreadable`` names the cells whose database could not be read for
    an affinity check: then no host is allowed.
    """

    def __init__(self, group_uuid, policy, max_per_host, hosts,
                 unreadable=()):
        self.group_uuid = group_uuid
        self.policy = policy
        self.max_per_host = max_per_host
        self.hosts = hosts
        self.unreadable = tuple(unreadable)

    def __bool__(self):
        # A refused claim: ``if claim(...)`` reads False for it too.
        return False

    def allows(self, host):
        if self.unreadable:
            return False
        if self.policy == 'affinity':
            return not self.hosts or host in self.hosts
        return self.hosts.get(host, 0) < self.max_per_host

    def __str__(self):
        if self.unreadable:
            return ('server group %s (affinity): cannot tell where its '
                    'members are, cell(s) %s cannot be read'
                    % (self.group_uuid, ', '.join(self.unreadable)))
        if self.policy == 'affinity':
            return ('server group %s (affinity) has members on %s'
                    % (self.group_uuid, ', '.join(sorted(self.hosts))))
        return ('server group %s (anti-affinity, at most %d per host) '
                'already has that many members there'
                % (self.group_uuid, self.max_per_host))


def _max_per_host(rules):
    return int((rules or {}).get(placement_types.MAX_SERVER_PER_HOST, 1))


def check_group_policy(session, group_uuid, consumer_uuid, host):
    """One database: lock the server group's row and check that
    ``consumer_uuid`` may hold a claim on ``host`` under its hard
    policy; None if it may, else a :class:`GroupConflict`.

    Call it in the claim's transaction, before the claim: the row lock
    (``SELECT ... FOR UPDATE``; SQLite's writers are serialized anyway)
    makes concurrent claims of one group's members take turns, and each
    sees the claims the ones before it committed. A deleted group, or a
    soft policy, allows everything.
    """
    group = _lock_group(session, group_uuid)
    if group is None or group.policy not in HARD_POLICIES:
        return None
    others = (sa.select(_MEMBER.c.instance_uuid)
              .where(_MEMBER.c.group_id == group.id,
                     _MEMBER.c.instance_uuid != consumer_uuid))
    rows = session.execute(
        sa.select(_NODE.c.host, sa.func.count().label('members'))
        .join(_ALLOC, _ALLOC.c.compute_node_id == _NODE.c.id)
        .where(_ALLOC.c.consumer_uuid.in_(others))
        .group_by(_NODE.c.host)).all()
    conflict = GroupConflict(group_uuid, group.policy,
                             _max_per_host(group.rules),
                             {row.host: row.members for row in rows})
    return None if conflict.allows(host) else conflict


def _lock_group(session, group_uuid):
    return session.execute(
        sa.select(_GROUP.c.id, _GROUP.c.policy, _GROUP.c.rules)
        .where(_GROUP.c.uuid == group_uuid).with_for_update()).first()


def _chunks(uuids):
    uuids = sorted(uuids)
    for start in range(0, len(uuids), CHUNK):
        yield uuids[start:start + CHUNK]


def count_by_host(session, consumer_uuids):
    """``{host: number of allocations}`` the consumers hold in the
    session's (cell) database."""
    hosts = {}
    for chunk in _chunks(consumer_uuids):
        for row in session.execute(
                sa.select(_NODE.c.host, sa.func.count().label('members'))
                .join(_ALLOC, _ALLOC.c.compute_node_id == _NODE.c.id)
                .where(_ALLOC.c.consumer_uuid.in_(chunk))
                .group_by(_NODE.c.host)):
            hosts[row.host] = hosts.get(row.host, 0) + row.members
    return hosts


class _LockedGroup:
    """A hard-policy group read under its row lock in the API database:
    its policy, the rule, and the other members than the claiming one
    are given to :meth:`check`."""

    def __init__(self, group_uuid, row, members):
        self.group_uuid = group_uuid
        self.policy = row.policy
        self.max_per_host = _max_per_host(row.rules)
        self.members = members

    def check(self, api_session, cell_session, consumer_uuid, host):
        """None if ``consumer_uuid`` may claim on ``host`` (of the cell
        of ``cell_session``), else a GroupConflict."""
        others = [uuid for uuid in self.members if uuid != consumer_uuid]
        hosts = count_by_host(cell_session, others) if others else {}
        unreadable = ()
        if self.policy == 'affinity' and others:
            elsewhere, unreadable = _hosts_in_other_cells(
                api_session, others, db_api.targeted_connection())
            for other_host, number in elsewhere.items():
                hosts[other_host] = hosts.get(other_host, 0) + number
        conflict = GroupConflict(self.group_uuid, self.policy,
                                 self.max_per_host, hosts, unreadable)
        return None if conflict.allows(host) else conflict


def _read_locked(session, group_uuid):
    """The group (a _LockedGroup) with its row locked in ``session`` (an
    API database's); None if it is gone or its policy is soft."""
    row = _lock_group(session, group_uuid)
    if row is None or row.policy not in HARD_POLICIES:
        return None
    members = session.execute(
        sa.select(_MEMBER.c.instance_uuid)
        .where(_MEMBER.c.group_id == row.id)).scalars().all()
    return _LockedGroup(group_uuid, row, members)


def _hosts_in_other_cells(api_session, members, target_url):
    """``({host: allocations}, [unreadable cell])`` of ``members`` in the
    cells other than the one at ``target_url``: each member is looked
    for in its mapped cell; one not mapped to a cell yet (or not mapped
    at all), in every cell. Cell0 holds no claims and is not read."""
    cell_rows = [row for row in mappings.list_cells(api_session)
                 if row.uuid != mappings.CELL0_UUID]
    mapped = {}
    for chunk in _chunks(members):
        for row in mappings.list_instance_mappings(api_session, chunk):
            mapped[row.instance_uuid] = row.cell_uuid
    unplaced = [uuid for uuid in members if mapped.get(uuid) is None]
    hosts, unreadable = {}, []
    for cell in cell_rows:
        if _same_database(cell.database_connection, target_url):
            continue
        wanted = unplaced + [uuid for uuid, cell_uuid in mapped.items()
                             if cell_uuid == cell.uuid]
        if not wanted:
            continue
        try:
            with db_api.target_cell(cell.database_connection), \
                    db_api.reader() as session:
                found = count_by_host(session, wanted)
        except (db_exc.DBError, sa_exc.SQLAlchemyError) as error:
            LOG.warning('Affinity check of a server group: cannot read '
                        'cell %s (%s)', cell.name or cell.uuid,
                        db_api.describe_error(error))
            unreadable.append(cell.name or cell.uuid)
            continue
        for host, number in found.items():
            hosts[host] = hosts.get(host, 0) + number
    return hosts, unreadable


def _same_database(url, target_url):
    return (url or CONF.database.connection) == target_url


@contextlib.contextmanager
def policy_lock(group_uuid):
    """Hold the group's lock around a claim (see the module's doc);
    yields ``check(cell_session, consumer_uuid, host)``, which answers
    None (the claim may go on) or a GroupConflict, in the claim's
    transaction of the target cell.

    One database: the check locks the row in the claim's transaction.
    Cells: the row is locked in an API transaction, before the claim
    and until the block ends (committing nothing). When the API
    database is the target cell's own, as with one database.
    """
    if not db_api.api_database_configured():
        yield lambda session, consumer_uuid, host: check_group_policy(
            session, group_uuid, consumer_uuid, host)
        return
    if _same_database(db_api.api_connection(),
                      db_api.targeted_connection()):
        def check_in_claim(session, consumer_uuid, host):
            group = _read_locked(session, group_uuid)
            return None if group is None else group.check(
                session, session, consumer_uuid, host)
        yield check_in_claim
        return
    claimed = False
    try:
        with db_api.api_writer() as api_session:
            group = _read_locked(api_session, group_uuid)
            if group is None:
                yield lambda session, consumer_uuid, host: None
            else:
                yield lambda session, consumer_uuid, host: group.check(
                    api_session, session, consumer_uuid, host)
            claimed = True
    except db_exc.DBConnectionError as error:
        if not claimed:
            raise
        # The claim is committed; the transaction wrote nothing, and its
        # lock went with the connection.
        LOG.warning('The API database went away as the lock of server '
                    'group %s was let go (%s); the claim stands',
                    group_uuid, db_api.describe_error(error))
