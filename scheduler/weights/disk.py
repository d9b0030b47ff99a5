"""DiskWeigher: prefer hosts with more free local disk (spreading).

The raw weight is the host's free disk in MB, not counting overcommit
(``free_disk_mb``). Set ``[filter_scheduler] disk_weight_multiplier`` (or
the same key in aggregate metadata) negative to stack instead::

    [filter_scheduler]
    disk_weight_multiplier = -1.0
"""

from scheduler import weights


class DiskWeigher(weights.BaseHostWeigher):
    """Weighs hosts by free disk; higher weights win."""

    pure = True

    minval = 0
    multiplier_option = 'disk_weight_multiplier'

    def _weigh_object(self, host_state, spec):
        return host_state.free_disk_mb

    def raw_column(self, host_table):
        return host_table.free_disk_mb
