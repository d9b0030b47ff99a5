"""ServerGroupAntiAffinityFilter: members of a group spread over hosts.

With a server group of policy ``anti-affinity`` in the request, a host
passes while it runs fewer than ``max_server_per_host`` members of the
group (the group's rule; 1 without it). The instance being scheduled never
counts against the host it already runs on (a move may stay where it
is). Within one multi-instance request the earlier instances count where
they were placed::

    gantt-manage server-group create web anti-affinity \\
        --rule max_server_per_host=2
    gantt-manage server create ... --count 4 --hint group=<uuid>
"""

from oslo_log import log as logging

from scheduler import placement_types
from scheduler import filters

LOG = logging.getLogger(__name__)

POLICY = 'anti-affinity'


def max_server_per_host(group):
    """The group's ``max_server_per_host`` rule; 1 when it has none."""
    value = (group.obj_get('rules') or {}).get(
        placement_types.MAX_SERVER_PER_HOST)
    if value is None:
        return 1
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        LOG.warning('Server group %s has an invalid %s rule %r; using 1',
                    group.obj_get('uuid'), placement_types.MAX_SERVER_PER_HOST,
                    value)
        return 1


def _anti_affinity_group(spec):
    group = spec.obj_get('instance_group')
    if group is None or group.obj_get('policy') != POLICY:
        return None
    return group


class ServerGroupAntiAffinityFilter(filters.BaseHostFilter):
    """Passes hosts with room for one more member of an anti-affinity
    server group."""

    pure = True
    # The group's members and the instance being placed.
    reads_group = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        group = _anti_affinity_group(spec)
        if group is None:
            return True
        if spec.obj_get('instance_uuid') in host_state.instances:
            return True
        members = set(group.obj_get('members', []))
        on_host = len(members.intersection(host_state.instances))
        limit = max_server_per_host(group)
        if on_host < limit:
            return True
        LOG.debug('%(host)s runs %(count)d member(s) of server group '
                  '%(group)s, at most %(limit)d allowed (anti-affinity)',
                  {'host': host_state, 'count': on_host,
                   'group': group.uuid, 'limit': limit})
        return False

    def filter_all(self, host_table, mask, spec):
        group = _anti_affinity_group(spec)
        if group is None:
            return mask
        # The rows of the hosts the group's members fill (a few), not a
        # count for every host.
        limit = max_server_per_host(group)
        full = [row for row, count in host_table.instance_rows(
            group.obj_get('members', [])).items() if count >= limit]
        instance_uuid = spec.obj_get('instance_uuid')
        if full and instance_uuid:
            staying = host_table.instance_rows([instance_uuid])
            full = [row for row in full if row not in staying]
        if not full:
            return mask
        passed = mask.copy()
        passed[full] = False
        return passed
