"""ServerGroupAffinityFilter: members of an affinity group share a host.

With a server group of policy ``affinity`` in the request
(``spec.instance_group``), only the hosts the group's members already run
on pass; while no member has a host yet, every host passes. Within one
multi-instance request the hosts chosen for the earlier instances count as
the group's hosts, so all the instances of the request land together::

    gantt-manage server-group create db affinity
    gantt-manage server create ... --count 3 --hint group=<uuid>
"""

from oslo_log import log as logging

from scheduler import filters

LOG = logging.getLogger(__name__)

POLICY = 'affinity'


def affinity_hosts(spec):
    """The group's hosts if the request's group has the affinity policy,
    else None."""
    group = spec.obj_get('instance_group')
    if group is None or group.obj_get('policy') != POLICY:
        return None
    return list(group.obj_get('hosts', []))


class ServerGroupAffinityFilter(filters.BaseHostFilter):
    """Passes the hosts of the members of an affinity server group."""

    pure = True
    # Once a member has a host, every other host fails.
    reads_group = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        hosts = affinity_hosts(spec)
        if not hosts or host_state.host in hosts:
            return True
        LOG.debug('%(host)s is not a host of server group %(group)s '
                  '(policy affinity: %(hosts)s)',
                  {'host': host_state, 'group': spec.instance_group.uuid,
                   'hosts': ', '.join(hosts)})
        return False

    def filter_all(self, host_table, mask, spec):
        hosts = affinity_hosts(spec)
        if not hosts:
            return mask
        return mask & host_table.hosts_mask(hosts, ignore_case=False)
