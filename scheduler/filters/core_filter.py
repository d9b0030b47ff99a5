"""CoreFilter: only hosts with enough vCPUs for one more instance.

Capacity is ``vcpus * cpu_allocation_ratio - reserved_vcpus``, with the
node's own ratio (a node that never reported one: ``[DEFAULT]
cpu_allocation_ratio``, else ``initial_cpu_allocation_ratio``); a host
passes if ``vcpus_used + flavor.vcpus`` fits in it, exactly the check its
claim makes. Example: a 16-core node with a ratio of 16.0 takes up to 256
vCPUs of instances.
"""

from scheduler import filters


class CoreFilter(filters.CapacityFilter):
    """Passes hosts with room for the flavor's vCPUs."""

    RUN_ON_REBUILD = False

    resource = 'vcpus'
    unit = ''
