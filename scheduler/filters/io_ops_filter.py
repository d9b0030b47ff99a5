"""IoOpsFilter: only hosts with fewer than ``max_io_ops_per_host`` I/O
intensive instances.

A host's ``io_workload`` (Nova's ``num_io_ops``) counts its instances that
are building, resizing, migrating, snapshotting... A host passes while the
count is below ``[filter_scheduler] max_io_ops_per_host`` (8)::

    [filter_scheduler]
    max_io_ops_per_host = 4
"""

from oslo_log import log as logging

from scheduler import conf
from scheduler import filters

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class IoOpsFilter(filters.BaseHostFilter):
    """Passes hosts with fewer I/O operations under way than the limit."""

    pure = True

    RUN_ON_REBUILD = False

    def max_io_ops(self, host_state):
        """The limit for ``host_state``."""
        return CONF.filter_scheduler.max_io_ops_per_host

    def max_io_ops_per_row(self, host_table):
        """The limit for every row: a number or an array."""
        return CONF.filter_scheduler.max_io_ops_per_host

    def host_passes(self, host_state, spec):
        limit = self.max_io_ops(host_state)
        if host_state.num_io_ops < limit:
            return True
        LOG.debug('%(host)s fails I/O ops check: max I/O ops %(limit)s, '
                  'I/O ops %(ops)s', {'host': host_state, 'limit': limit,
                                      'ops': host_state.num_io_ops})
        return False

    def filter_all(self, host_table, mask, spec):
        return mask & (host_table.io_workload
                       < self.max_io_ops_per_row(host_table))
