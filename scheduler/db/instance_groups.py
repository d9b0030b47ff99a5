"""Queries over server groups (``instance_groups``) and their members.

A server group asks the scheduler to place its members by a policy:

* ``affinity``: every member on one host (ServerGroupAffinityFilter);
* ``anti-affinity``: members on different hosts, or at most
  ``max_server_per_host`` of them per host when that rule is given
  (ServerGroupAntiAffinityFilter);
* ``soft-affinity`` / ``soft-anti-affinity``: a preference only
  (ServerGroupSoftAffinityWeigher / ServerGroupSoftAntiAffinityWeigher).

As in Nova, rules are only accepted with ``anti-affinity`` and
``max_server_per_host`` is the only rule. Instances join a group when the
conductor receives their build with the ``group`` hint; the hosts of a
group are the hosts of its members that have one.

Groups and members live where Nova keeps them: in the API database
(sessions of :func:`scheduler.db.api.api_writer` and
:func:`~scheduler.db.api.api_reader`), which is ``[database]`` itself
when no ``[api_database]`` is set. The members' instances are in the
cells: :func:`member_hosts` reads one cell's, :func:`find_member_hosts`
each member's own cell (by its instance mapping)::

    with db_api.api_writer() as session:
        group = instance_groups.create(session, 'web', 'anti-affinity',
                                       rules={'max_server_per_host': 2})
        instance_groups.add_members(session, group.id, [uuid1, uuid2])
    with db_api.api_reader() as session:
        group = instance_groups.get(session, group.uuid)
    hosts = instance_groups.find_member_hosts(group.members)
"""

import dataclasses
from typing import Optional

from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import uuidutils
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler import exception
from scheduler.db import api as db_api
from scheduler.db import mappings
from scheduler.db import models
from scheduler import placement_types

LOG = logging.getLogger(__name__)

# The API database's tables have the same definitions (api_models).
_GROUP = models.InstanceGroup.__table__
_MEMBER = models.InstanceGroupMember.__table__
_INSTANCE = models.Instance.__table__

POLICIES = placement_types.GROUP_POLICIES
MAX_SERVER_PER_HOST = placement_types.MAX_SERVER_PER_HOST


class InstanceGroupNotFound(exception.NotFound):
    msg_fmt = "Server group %(ident)s could not be found."


class InvalidServerGroup(exception.InvalidRequest):
    msg_fmt = "Invalid request: %(reason)s"


@dataclasses.dataclass(frozen=True)
class ServerGroup:
    """A server group as readers see it, with its members' UUIDs."""

    id: int
    uuid: str
    name: Optional[str]
    project_id: Optional[str]
    user_id: Optional[str]
    policy: str
    rules: dict
    members: tuple


def validated_rules(policy, rules):
    """``rules`` checked against ``policy``; values become integers.

    Raises InvalidServerGroup for an unknown policy, an unknown rule, a
    rule with a policy other than anti-affinity, or a
    ``max_server_per_host`` that is not a positive integer.
    """
    if policy not in POLICIES:
        raise InvalidServerGroup(reason='unknown policy %r; use one of %s'
                                 % (policy, ', '.join(POLICIES)))
    rules = dict(rules or {})
    if rules and policy != 'anti-affinity':
        raise InvalidServerGroup(reason='only the anti-affinity policy '
                                 'takes rules')
    unknown = set(rules) - {MAX_SERVER_PER_HOST}
    if unknown:
        raise InvalidServerGroup(reason='unknown rule(s) %s; the only rule '
                                 'is %s' % (', '.join(sorted(unknown)),
                                            MAX_SERVER_PER_HOST))
    if MAX_SERVER_PER_HOST in rules:
        value = rules[MAX_SERVER_PER_HOST]
        try:
            number = int(str(value).strip())
        except ValueError:
            number = 0
        if number < 1:
            raise InvalidServerGroup(reason='%s must be a positive integer, '
                                     'not %r' % (MAX_SERVER_PER_HOST, value))
        rules[MAX_SERVER_PER_HOST] = number
    return rules


def _members(session, group_ids):
    rows = session.execute(
        sa.select(_MEMBER.c.group_id, _MEMBER.c.instance_uuid)
        .where(_MEMBER.c.group_id.in_(list(group_ids)))
        .order_by(_MEMBER.c.id)).all()
    found = {}
    for row in rows:
        found.setdefault(row.group_id, []).append(row.instance_uuid)
    return found


def _read(session, where=None):
    query = sa.select(_GROUP).order_by(_GROUP.c.id)
    if where is not None:
        query = query.where(where)
    rows = session.execute(query).all()
    members = _members(session, [row.id for row in rows]) if rows else {}
    return [ServerGroup(id=row.id, uuid=row.uuid, name=row.name,
                        project_id=row.project_id, user_id=row.user_id,
                        policy=row.policy, rules=dict(row.rules or {}),
                        members=tuple(members.get(row.id, ())))
            for row in rows]


def create(session, name, policy, rules=None, project_id=None, user_id=None,
           uuid=None):
    """Create a group; InvalidServerGroup if the policy or rules are bad."""
    rules = validated_rules(policy, rules)
    now = models.utcnow()
    result = session.execute(sa.insert(_GROUP).values(
        uuid=uuid or uuidutils.generate_uuid(), name=name, policy=policy,
        rules=rules, project_id=project_id, user_id=user_id,
        created_at=now, updated_at=now))
    return _read(session, _GROUP.c.id == result.inserted_primary_key[0])[0]


def get(session, ident):
    """One group by UUID, or by name if exactly one group has it."""
    if uuidutils.is_uuid_like(ident):
        found = _read(session, _GROUP.c.uuid == ident)
    else:
        found = _read(session, _GROUP.c.name == ident)
        if len(found) > 1:
            raise InvalidServerGroup(
                reason='%d server groups are named %s; give a UUID'
                % (len(found), ident))
    if not found:
        raise InstanceGroupNotFound(ident=ident)
    return found[0]


def list_groups(session, project_id=None):
    where = None if project_id is None else _GROUP.c.project_id == project_id
    return _read(session, where)


def delete(session, ident):
    """Delete a group and its memberships (the instances stay)."""
    group = get(session, ident)
    session.execute(sa.delete(_MEMBER).where(_MEMBER.c.group_id == group.id))
    session.execute(sa.delete(_GROUP).where(_GROUP.c.id == group.id))
    return group


def add_members(session, group_id, instance_uuids):
    """Add instances to a group (those already members are skipped).

    The group's row is locked first, so that concurrent additions take
    turns: otherwise MariaDB deadlocks them (each insert's foreign key
    share-locks the row that the update then needs exclusively).
    """
    session.execute(sa.select(_GROUP.c.id).where(_GROUP.c.id == group_id)
                    .with_for_update())
    existing = set(_members(session, [group_id]).get(group_id, ()))
    new = [uuid for uuid in dict.fromkeys(instance_uuids)
           if uuid not in existing]
    if new:
        session.execute(sa.insert(_MEMBER), [
            {'group_id': group_id, 'instance_uuid': uuid} for uuid in new])
        session.execute(sa.update(_GROUP).where(_GROUP.c.id == group_id)
                        .values(updated_at=models.utcnow()))
    return new


def member_hosts(session, instance_uuids):
    """``{instance uuid: host}`` of the members that have a host."""
    uuids = list(instance_uuids)
    hosts = {}
    for start in range(0, len(uuids), 500):
        rows = session.execute(
            sa.select(_INSTANCE.c.uuid, _INSTANCE.c.host)
            .where(_INSTANCE.c.uuid.in_(uuids[start:start + 500]),
                   _INSTANCE.c.host.is_not(None))).all()
        hosts.update((row.uuid, row.host) for row in rows)
    return hosts


def find_member_hosts(instance_uuids):
    """``{instance uuid: host}`` of the members that have a host,
    wherever they are: ``[database]`` (the targeted cell) without
    ``[api_database]``; with it, each member in the cell its instance
    mapping names. A cell that cannot be read is left out with a
    WARNING (its members count as having no host: the claims still
    check a hard policy). Reads only, tried once.
    """
    uuids = list(instance_uuids)
    if not uuids:
        return {}
    if not db_api.api_database_configured():
        with db_api.reader() as session:
            return member_hosts(session, uuids)
    by_cell = {}
    with db_api.api_reader() as session:
        for start in range(0, len(uuids), 500):
            for row in mappings.list_instance_mappings(
                    session, uuids[start:start + 500]):
                if row.cell_id is not None and \
                        row.cell_uuid != mappings.CELL0_UUID:
                    cell = (row.cell_name or row.cell_uuid,
                            row.database_connection)
                    by_cell.setdefault(cell, []).append(row.instance_uuid)
    hosts = {}
    for (name, url), members in sorted(by_cell.items(),
                                       key=lambda item: item[0][0]):
        try:
            with db_api.target_cell(url), db_api.reader() as session:
                hosts.update(member_hosts(session, members))
        except (db_exc.DBError, sa_exc.SQLAlchemyError) as error:
            LOG.warning('The hosts of %d server group member(s) in cell %s '
                        'are unknown: %s', len(members), name,
                        db_api.describe_error(error))
    return hosts


def claimed_hosts(session, instance_uuids):
    """``{instance uuid: host}`` of the members holding a claim (an
    allocation) on a compute node: where they are or are about to be."""
    allocation = models.Allocation.__table__
    node = models.ComputeNode.__table__
    uuids = list(instance_uuids)
    hosts = {}
    for start in range(0, len(uuids), 500):
        rows = session.execute(
            sa.select(allocation.c.consumer_uuid, node.c.host)
            .join(node, node.c.id == allocation.c.compute_node_id)
            .where(allocation.c.consumer_uuid.in_(
                uuids[start:start + 500]))).all()
        hosts.update((row.consumer_uuid, row.host) for row in rows)
    return hosts
