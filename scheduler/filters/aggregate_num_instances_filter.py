"""AggregateNumInstancesFilter: NumInstancesFilter with a limit per
aggregate.

The limit is the ``max_instances_per_host`` metadata of the host's
aggregates (the smallest when several set it), else ``[filter_scheduler]
max_instances_per_host``; a value that is not an integer is logged and the
option used::

    gantt-manage aggregate set-metadata dense max_instances_per_host=200
"""

import numpy as np

from scheduler import conf
from scheduler.filters import aggregate_metadata
from scheduler.filters import num_instances_filter

CONF = conf.CONF
KEY = 'max_instances_per_host'


def _limit(aggregates):
    return aggregate_metadata.minimum_of(
        aggregates, KEY, CONF.filter_scheduler.max_instances_per_host, int)


class AggregateNumInstancesFilter(num_instances_filter.NumInstancesFilter):
    """Passes hosts below their aggregates' instance limit."""

    RUN_ON_REBUILD = False

    def max_instances(self, host_state):
        return _limit(host_state.aggregates)

    def max_instances_per_row(self, host_table):
        # float64: a limit beyond int64 still compares right.
        return aggregate_metadata.per_row(host_table, _limit, np.float64)
