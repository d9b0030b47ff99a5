"""RamFilter: only hosts with enough RAM for one more instance.

Capacity is ``memory_mb * ram_allocation_ratio - reserved_memory_mb``, with
the node's own ratio (a node that never reported one: ``[DEFAULT]
ram_allocation_ratio``, else ``initial_ram_allocation_ratio``); a host
passes if ``memory_mb_used + flavor.memory_mb`` fits in it, exactly the
check its claim makes. Example: a 64 GiB node, ratio 1.5 and 512 MB
reserved takes up to 97,792 MB of instances.
"""

from scheduler import filters


class RamFilter(filters.CapacityFilter):
    """Passes hosts with room for the flavor's memory."""

    RUN_ON_REBUILD = False

    resource = 'memory_mb'
    unit = 'MB'
