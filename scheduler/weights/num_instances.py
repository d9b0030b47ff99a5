"""NumInstancesWeigher: weigh hosts by how many instances they run.

The raw weight is the host's ``num_instances``. The multiplier
``[filter_scheduler] num_instances_weight_multiplier`` is 0.0 (off); a
positive value packs instances on the fullest hosts, a negative one
spreads them over the emptiest::

    [filter_scheduler]
    num_instances_weight_multiplier = -1.0
"""

from scheduler import weights


class NumInstancesWeigher(weights.BaseHostWeigher):
    """Weighs hosts by their number of instances."""

    minval = 0
    multiplier_option = 'num_instances_weight_multiplier'

    def _weigh_object(self, host_state, spec):
        return host_state.num_instances

    def weigh_all(self, host_table, rows, spec):
        return host_table.num_instances[rows].astype('float64')
