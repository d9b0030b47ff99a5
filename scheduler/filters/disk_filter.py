"""DiskFilter: only hosts with enough local disk for one more instance.

The request is ``root_gb + ephemeral_gb`` plus swap (MB, rounded up to
whole GB), as ``RequestSpec.resources()`` counts it. Capacity is
``local_gb * disk_allocation_ratio - reserved_disk_gb``, with the node's
own ratio (a node that never reported one: ``[DEFAULT]
disk_allocation_ratio``, else ``initial_disk_allocation_ratio``); a host
passes if ``local_gb_used`` plus the request fits in it, exactly the check
its claim makes. Example: root 20 GB, ephemeral 10 GB and 1536 MB of swap
ask for 32 GB.

A host that reports ``disk_available_least`` must also have the room
Nova's DiskFilter finds in it (see :mod:`scheduler.filters.free_disk`).
"""

from scheduler import filters
from scheduler.filters import free_disk


class DiskFilter(filters.CapacityFilter):
    """Passes hosts with room for the flavor's disk."""

    RUN_ON_REBUILD = False

    resource = 'disk_gb'
    unit = 'GB'

    def host_passes(self, host_state, spec):
        amount = spec.resources().disk_gb
        return (super().host_passes(host_state, spec)
                and free_disk.least_allows(
                    host_state, host_state.disk_allocation_ratio, amount))

    def filter_all(self, host_table, mask, spec):
        amount = spec.resources().disk_gb
        if amount > 0 and float(amount).is_integer():
            # Both bounds in one pass (see host_table._room).
            return mask & host_table.at_least('disk_filter_room', amount)
        return (super().filter_all(host_table, mask, spec)
                & free_disk.least_allows_all(
                    host_table, host_table.columns['disk_ratio'], amount))
