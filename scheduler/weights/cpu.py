"""CPUWeigher: prefer hosts with more free vCPUs (spreading).

The raw weight is ``vcpus * cpu_allocation_ratio - reserved_vcpus -
vcpus_used``, the vCPUs a claim could still take (``vcpus_free``). Set
``[filter_scheduler] cpu_weight_multiplier`` (or the same key in aggregate
metadata) negative to stack instead::

    [filter_scheduler]
    cpu_weight_multiplier = -1.0
"""

from scheduler import weights


class CPUWeigher(weights.BaseHostWeigher):
    """Weighs hosts by free vCPUs; higher weights win."""

    pure = True

    minval = 0
    multiplier_option = 'cpu_weight_multiplier'

    def _weigh_object(self, host_state, spec):
        return host_state.vcpus_free

    def raw_column(self, host_table):
        return host_table.vcpus_free
