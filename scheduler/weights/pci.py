"""PCIWeigher: keep the hosts with free PCI devices for the requests that
need them.

Nova's scoring: a host's raw weight is ``MAX_DEVS - min(free, MAX_DEVS -
1)``, where ``free`` is its free PCI devices (the ``count`` of its pools
minus what claims use, ``HostState.free_pci_devices``). Fewer free devices
weigh more, whatever the request asks:

* a request without devices goes to hosts without any, keeping the PCI
  hosts for the requests that need them;
* a request with devices reaches only hosts that have enough (the
  PciPassthroughFilter's part), and among those stacks on the ones with
  the fewest left, keeping the hosts with many free devices whole for
  requests that want many.

The request's own device count therefore plays no part here (Nova's
weigher does not read it). Beyond ``MAX_DEVS - 1`` free devices all hosts
weigh the same: there is no scarcity to protect. Example: hosts with 0, 2
and 500 free devices weigh 100, 98 and 1; with the default
``[filter_scheduler] pci_weight_multiplier = 1.0`` they normalise to 1.0,
0.98 and 0.0.
"""

import numpy as np

from scheduler import weights

# Free devices beyond which hosts are no longer told apart.
MAX_DEVS = 100


class PCIWeigher(weights.BaseHostWeigher):
    """Weighs hosts by how few free PCI devices they have."""

    pure = True

    multiplier_option = 'pci_weight_multiplier'

    def _weigh_object(self, host_state, spec):
        free = max(host_state.free_pci_devices, 0)
        return MAX_DEVS - min(free, MAX_DEVS - 1)

    def constant_weight(self, host_table):
        free = host_table.constant(host_table.pci_free)
        return None if free is None else MAX_DEVS - min(max(free, 0),
                                                        MAX_DEVS - 1)

    def weigh_all(self, host_table, rows, spec):
        free = np.clip(host_table.pci_free[rows], 0, MAX_DEVS - 1)
        return (MAX_DEVS - free).astype(np.float64)
