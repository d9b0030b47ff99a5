"""RAMWeigher: prefer hosts with more free RAM (spreading).

The raw weight is the host's free RAM in MB, not counting overcommit
(``free_ram_mb``). Set ``[filter_scheduler] ram_weight_multiplier`` (or the
same key in aggregate metadata) negative to stack instead::

    [filter_scheduler]
    ram_weight_multiplier = -1.0
"""

from scheduler import weights


class RAMWeigher(weights.BaseHostWeigher):
    """Weighs hosts by free RAM; higher weights win."""

    pure = True

    minval = 0
    multiplier_option = 'ram_weight_multiplier'

    def _weigh_object(self, host_state, spec):
        return host_state.free_ram_mb

    def raw_column(self, host_table):
        return host_table.free_ram_mb
