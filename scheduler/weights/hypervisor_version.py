"""HypervisorVersionWeigher: prefer hosts with newer hypervisors.

The raw weight is the ``hypervisor_version`` the compute reports (0 when
it reports none). Each virt driver encodes its version its own way, so
compare hosts of one hypervisor type only: put other types in aggregates
with their own ``hypervisor_version_weight_multiplier``. A negative
multiplier prefers older hypervisors::

    [filter_scheduler]
    hypervisor_version_weight_multiplier = -1.0
"""

import numpy as np

from scheduler import weights


def hypervisor_version(host_state):
    return host_state.hypervisor_version or 0


class HypervisorVersionWeigher(weights.BaseHostWeigher):
    """Weighs hosts by their hypervisor version."""

    pure = True

    multiplier_option = 'hypervisor_version_weight_multiplier'

    def _weigh_object(self, host_state, spec):
        return hypervisor_version(host_state)

    def constant_weight(self, host_table):
        return host_table.constant(self._column(host_table))

    def raw_column(self, host_table):
        return self._column(host_table)

    @staticmethod
    def _column(host_table):
        return host_table.state_column('hypervisor_version',
                                       hypervisor_version, np.float64)
