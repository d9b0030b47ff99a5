"""AggregateCoreFilter: CoreFilter with the aggregates' vCPU ratio.

The ratio is the ``cpu_allocation_ratio`` metadata of the host's
aggregates (the smallest when several set it), else the node's own; see
:mod:`scheduler.filters.aggregate_capacity`. Example: keep a rack of
latency sensitive hosts at one vCPU per core::

    gantt-manage aggregate set-metadata pinned cpu_allocation_ratio=1.0
"""

from scheduler.filters import aggregate_capacity


class AggregateCoreFilter(aggregate_capacity.AggregateCapacityFilter):
    """Passes hosts with room for the flavor's vCPUs, per aggregate."""

    RUN_ON_REBUILD = False

    resource = 'vcpus'
    unit = ''
