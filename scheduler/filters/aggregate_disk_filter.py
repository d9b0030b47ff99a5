"""AggregateDiskFilter: DiskFilter with the aggregates' disk ratio.

The ratio is the ``disk_allocation_ratio`` metadata of the host's
aggregates (the smallest when several set it), else the node's own; see
:mod:`scheduler.filters.aggregate_capacity`. The disk a request needs is
counted as DiskFilter counts it (root, ephemeral, and swap rounded up to
whole GB)::

    gantt-manage aggregate set-metadata thin-disks disk_allocation_ratio=0.9
"""

from scheduler.filters import aggregate_capacity


class AggregateDiskFilter(aggregate_capacity.AggregateCapacityFilter):
    """Passes hosts with room for the flavor's disk, per aggregate."""

    RUN_ON_REBUILD = False

    resource = 'disk_gb'
    unit = 'GB'
