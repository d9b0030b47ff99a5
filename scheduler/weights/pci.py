"""PCIWeigher: keep hosts with PCI devices for the requests that need them.

In Nova this weigher ranks hosts by their free PCI devices: up for
requests that ask for devices, down for those that do not. Gantt does not
model PCI devices yet (no inventory, no requests), so every host has none
and weighs 0: the weigher is loaded, takes ``[filter_scheduler]
pci_weight_multiplier`` and its aggregate override like any other, and
changes no ranking, exactly as Nova's does on a cloud without PCI devices.
"""

import numpy as np

from scheduler import weights


class PCIWeigher(weights.BaseHostWeigher):
    """Weighs every host 0 (no PCI devices are modelled)."""

    multiplier_option = 'pci_weight_multiplier'

    def _weigh_object(self, host_state, spec):
        return 0.0

    def uniform(self, spec):
        return True

    def weigh_all(self, host_table, rows, spec):
        return np.zeros(len(rows))
