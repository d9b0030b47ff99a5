"""The base of AggregateRamFilter, AggregateCoreFilter, AggregateDiskFilter.

These filters check room as RamFilter, CoreFilter and DiskFilter do, but
with the allocation ratio the host's aggregates set in their metadata
(``ram_allocation_ratio``, ``cpu_allocation_ratio``,
``disk_allocation_ratio``); several aggregates setting it: the smallest
value wins; none, or a value that is not a finite number: the node's own
ratio (for a node that never reported one, ``[DEFAULT]
*_allocation_ratio``, else ``initial_*_allocation_ratio``).

The claim in SQL still checks the node's own ratio, as placement did once
Nova deprecated these filters: an aggregate can lower a host's limit, not
raise it above what its claim allows, so a host passes only if both
checks pass. Example: a 64 GiB node whose ratio is 1.5 in an aggregate
with ``ram_allocation_ratio=1.0`` takes at most 64 GiB of instances::

    gantt-manage aggregate set-metadata rack1 ram_allocation_ratio=1.0
"""

from oslo_log import log as logging
import numpy as np

from scheduler import filters
from scheduler.filters import aggregate_metadata
from scheduler import host_cache

LOG = logging.getLogger(__name__)


def _or_nan(value):
    return np.nan if value is None else value


class AggregateCapacityFilter(filters.CapacityFilter):
    """CapacityFilter with the ratio from aggregate metadata."""

    RUN_ON_REBUILD = False

    def ratio_key(self):
        """The aggregate metadata key (and HostState attribute) of the
        resource's allocation ratio."""
        return host_cache.RESOURCE_ATTRS[self.resource][3]

    def host_ratio(self, host_state):
        """The ratio this filter uses for ``host_state``."""
        key = self.ratio_key()
        override = aggregate_metadata.minimum_of(
            host_state.aggregates, key, None, float, "the node's own ratio")
        return getattr(host_state, key) if override is None else override

    def host_passes(self, host_state, spec):
        amount = getattr(spec.resources(), self.resource)
        if amount <= 0:
            return True
        total, used, reserved, _ratio = host_cache.RESOURCE_ATTRS[
            self.resource]
        ratio = self.host_ratio(host_state)
        limit = (getattr(host_state, total) * ratio
                 - getattr(host_state, reserved))
        if getattr(host_state, used) + amount > limit:
            LOG.debug('%(host)s does not have %(amount)s %(unit)s usable '
                      '%(resource)s with the aggregate ratio %(ratio)s',
                      {'host': host_state, 'amount': amount,
                       'unit': self.unit, 'resource': self.resource,
                       'ratio': ratio})
            return False
        return super().host_passes(host_state, spec)

    def row_ratios(self, host_table_):
        """Column of the ratio this filter uses for each row."""
        key = self.ratio_key()
        ratio = host_cache.RESOURCE_COLUMNS[self.resource][3]
        overrides = aggregate_metadata.per_row(
            host_table_, lambda aggregates: _or_nan(
                aggregate_metadata.minimum_of(
                    aggregates, key, None, float, "the node's own ratio")),
            np.float64)
        return np.where(np.isnan(overrides), host_table_.columns[ratio],
                        overrides)

    def filter_all(self, host_table_, mask, spec):
        amount = getattr(spec.resources(), self.resource)
        if amount <= 0:
            return mask
        total, used, reserved, _ratio = host_cache.RESOURCE_COLUMNS[
            self.resource]
        columns = host_table_.columns
        ratios = self.row_ratios(host_table_)
        limits = columns[total] * ratios - columns[reserved]
        wanted = columns[used] + amount
        return (super().filter_all(host_table_, mask, spec)
                & (wanted <= limits))
