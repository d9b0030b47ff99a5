"""ServerGroupSoftAntiAffinityWeigher: prefer hosts without the members.

For a server group of policy ``soft-anti-affinity``, a host weighs minus
the number of the group's members it runs, so members spread where they
can without failing when they cannot (unlike
ServerGroupAntiAffinityFilter). Other requests weigh 0 everywhere. The
multiplier is ``[filter_scheduler] soft_anti_affinity_weight_multiplier``
(aggregate metadata of the same name overrides it)::

    [filter_scheduler]
    soft_anti_affinity_weight_multiplier = 2.0
"""

from scheduler.weights import server_group_soft_affinity


class ServerGroupSoftAntiAffinityWeigher(
        server_group_soft_affinity.SoftAffinityWeigherBase):
    """Hosts running fewer members of a soft-anti-affinity group win."""

    policy = 'soft-anti-affinity'
    sign = -1
    multiplier_option = 'soft_anti_affinity_weight_multiplier'
