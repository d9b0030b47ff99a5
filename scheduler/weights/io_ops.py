"""IoOpsWeigher: prefer hosts with fewer I/O intensive operations.

The raw weight is the host's ``io_workload`` (Nova's ``num_io_ops``: its
instances that are building, resizing, snapshotting...). The multiplier
``[filter_scheduler] io_ops_weight_multiplier`` is -1.0, so the least
busy hosts win; make it positive to prefer busy hosts::

    [filter_scheduler]
    io_ops_weight_multiplier = 2.0
"""

from scheduler import weights


class IoOpsWeigher(weights.BaseHostWeigher):
    """Weighs hosts by their I/O operations under way."""

    pure = True

    minval = 0
    multiplier_option = 'io_ops_weight_multiplier'

    def _weigh_object(self, host_state, spec):
        return host_state.num_io_ops

    def constant_weight(self, host_table):
        return host_table.constant(host_table.io_workload)

    def raw_column(self, host_table):
        return host_table.io_workload
