"""DiskFilter: only hosts with enough local disk for one more instance.

The request is ``root_gb + ephemeral_gb`` plus swap (MB, rounded up to
whole GB), as ``RequestSpec.resources()`` counts it. Capacity is
``local_gb * disk_allocation_ratio - reserved_disk_gb``, with the node's
own ratio (a node that never reported one: ``[DEFAULT]
disk_allocation_ratio``, else ``initial_disk_allocation_ratio``); a host
passes if ``local_gb_used`` plus the request fits in it, exactly the check
its claim makes. Example: root 20 GB, ephemeral 10 GB and 1536 MB of swap
ask for 32 GB.
"""

from scheduler import filters


class DiskFilter(filters.CapacityFilter):
    """Passes hosts with room for the flavor's disk."""

    RUN_ON_REBUILD = False

    resource = 'disk_gb'
    unit = 'GB'
