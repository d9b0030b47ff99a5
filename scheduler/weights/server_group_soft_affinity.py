"""ServerGroupSoftAffinityWeigher: prefer hosts running the group's members.

For a server group of policy ``soft-affinity``, a host weighs the number
of the group's members it runs, so members gather where they can without
failing when they cannot (unlike ServerGroupAffinityFilter). Other
requests weigh 0 everywhere. The multiplier is ``[filter_scheduler]
soft_affinity_weight_multiplier`` (aggregate metadata of the same name
overrides it)::

    [filter_scheduler]
    soft_affinity_weight_multiplier = 2.0
"""

import numpy as np

from scheduler import weights


class SoftAffinityWeigherBase(weights.BaseHostWeigher):
    """Weighs the members of a ``policy`` server group on each host;
    ``sign`` -1 turns gathering into spreading."""

    pure = True
    # The group's members: none weighs every host the same.
    reads_group = True

    policy = None
    sign = 1

    def _members(self, spec):
        group = spec.obj_get('instance_group')
        if group is None or group.obj_get('policy') != self.policy:
            return None
        return group.obj_get('members', [])

    def _weigh_object(self, host_state, spec):
        members = self._members(spec)
        if not members:
            return 0
        return self.sign * len(set(members).intersection(
            host_state.instances))

    def uniform(self, spec):
        return not self._members(spec)

    def weigh_all(self, host_table, rows, spec):
        members = self._members(spec)
        if not members:
            return np.zeros(len(rows))
        counts = host_table.instance_counts(members)[rows]
        return self.sign * counts.astype(np.float64)


class ServerGroupSoftAffinityWeigher(SoftAffinityWeigherBase):
    """Hosts running more members of a soft-affinity group win."""

    policy = 'soft-affinity'
    multiplier_option = 'soft_affinity_weight_multiplier'
