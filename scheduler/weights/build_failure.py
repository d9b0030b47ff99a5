"""BuildFailureWeigher: push back hosts whose recent builds failed.

The raw weight is the host's ``failed_builds`` stat (0 when the compute
reports none), and the multiplier is minus ``[filter_scheduler]
build_failure_weight_multiplier`` (1e6): the more failures, the lower the
host ranks, and the default outweighs every other weigher so a failing
host is tried last. An aggregate overrides the option with the metadata
key ``build_failure_weight_multiplier`` (smallest value wins) before it is
negated::

    gantt-manage aggregate set-metadata flaky-rack \\
        build_failure_weight_multiplier=10
"""

import numpy as np

from scheduler import weights


def failed_builds(host_state):
    return host_state.failed_builds


class BuildFailureWeigher(weights.BaseHostWeigher):
    """Weighs hosts down by their recent failed builds."""

    pure = True

    multiplier_option = 'build_failure_weight_multiplier'

    def weight_multiplier(self, host_state):
        return -1.0 * super().weight_multiplier(host_state)

    def weight_multipliers(self, host_table, rows):
        default = float(self.default_multiplier())
        overrides = host_table.aggregate_multipliers(self.multiplier_option)
        if overrides is None:
            return -1.0 * default
        picked = overrides[rows]
        return -1.0 * np.where(np.isnan(picked), default, picked)

    def _weigh_object(self, host_state, spec):
        return host_state.failed_builds

    def constant_weight(self, host_table):
        return host_table.constant(self._column(host_table))

    def raw_column(self, host_table):
        return self._column(host_table)

    @staticmethod
    def _column(host_table):
        return host_table.state_column('failed_builds', failed_builds,
                                       np.float64)
