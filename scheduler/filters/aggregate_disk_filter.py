"""AggregateDiskFilter: DiskFilter with the aggregates' disk ratio.

The ratio is the ``disk_allocation_ratio`` metadata of the host's
aggregates (the smallest when several set it), else the node's own; see
:mod:`scheduler.filters.aggregate_capacity`. The disk a request needs is
counted as DiskFilter counts it (root, ephemeral, and swap rounded up to
whole GB), and a host that reports ``disk_available_least`` must also
have the room Nova finds in it with that ratio (see
:mod:`scheduler.filters.free_disk`)::

    gantt-manage aggregate set-metadata thin-disks disk_allocation_ratio=0.9
"""

from scheduler.filters import aggregate_capacity
from scheduler.filters import free_disk


class AggregateDiskFilter(aggregate_capacity.AggregateCapacityFilter):
    """Passes hosts with room for the flavor's disk, per aggregate."""

    RUN_ON_REBUILD = False

    resource = 'disk_gb'
    unit = 'GB'

    def host_passes(self, host_state, spec):
        amount = spec.resources().disk_gb
        return (super().host_passes(host_state, spec)
                and free_disk.least_allows(
                    host_state, self.host_ratio(host_state), amount))

    def filter_all(self, host_table, mask, spec):
        amount = spec.resources().disk_gb
        return (super().filter_all(host_table, mask, spec)
                & free_disk.least_allows_all(
                    host_table, self.row_ratios(host_table), amount))
