"""NumInstancesWeigher: weigh hosts by how many instances they run.

The raw weight is the host's ``num_instances``. The multiplier
``[filter_scheduler] num_instances_weight_multiplier`` is 0.0 (off); a
positive value packs instances on the fullest hosts, a negative one
spreads them over the emptiest. As in Nova (and unlike the RAM, CPU,
disk and I/O weighers) there is no floor of 0: the normalised weights
span the fewest to the most instances among the weighed hosts, so hosts
at 5, 10 and 20 instances weigh 0, 1/3 and 1 before the multiplier::

    [filter_scheduler]
    num_instances_weight_multiplier = -1.0
"""

from scheduler import weights


class NumInstancesWeigher(weights.BaseHostWeigher):
    """Weighs hosts by their number of instances."""

    pure = True

    multiplier_option = 'num_instances_weight_multiplier'

    def _weigh_object(self, host_state, spec):
        return host_state.num_instances

    def raw_column(self, host_table):
        return host_table.num_instances
