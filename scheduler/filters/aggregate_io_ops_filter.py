"""AggregateIoOpsFilter: IoOpsFilter with a limit per aggregate.

The limit is the ``max_io_ops_per_host`` metadata of the host's aggregates
(the smallest when several set it), else ``[filter_scheduler]
max_io_ops_per_host``; a value that is not an integer is logged and the
option used::

    gantt-manage aggregate set-metadata ssd-rack max_io_ops_per_host=16
"""

import numpy as np

from scheduler import conf
from scheduler.filters import aggregate_metadata
from scheduler.filters import io_ops_filter

CONF = conf.CONF
KEY = 'max_io_ops_per_host'


def _limit(aggregates):
    return aggregate_metadata.minimum_of(
        aggregates, KEY, CONF.filter_scheduler.max_io_ops_per_host, int)


class AggregateIoOpsFilter(io_ops_filter.IoOpsFilter):
    """Passes hosts below their aggregates' I/O operations limit."""

    RUN_ON_REBUILD = False

    def max_io_ops(self, host_state):
        return _limit(host_state.aggregates)

    def max_io_ops_per_row(self, host_table):
        # float64: a limit beyond int64 still compares right.
        return aggregate_metadata.per_row(host_table, _limit, np.float64)
