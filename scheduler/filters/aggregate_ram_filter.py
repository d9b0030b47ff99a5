"""AggregateRamFilter: RamFilter with the aggregates' RAM ratio.

The ratio is the ``ram_allocation_ratio`` metadata of the host's
aggregates (the smallest when several set it), else the node's own; see
:mod:`scheduler.filters.aggregate_capacity`. Enable it instead of
RamFilter::

    [filter_scheduler]
    enabled_filters = ComputeFilter,AggregateRamFilter,CoreFilter,DiskFilter
"""

from scheduler.filters import aggregate_capacity


class AggregateRamFilter(aggregate_capacity.AggregateCapacityFilter):
    """Passes hosts with room for the flavor's memory, per aggregate."""

    RUN_ON_REBUILD = False

    resource = 'memory_mb'
    unit = 'MB'
