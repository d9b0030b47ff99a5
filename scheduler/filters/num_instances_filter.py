"""NumInstancesFilter: only hosts with fewer than ``max_instances_per_host``
instances.

A host passes while its ``num_instances`` is below ``[filter_scheduler]
max_instances_per_host`` (50)::

    [filter_scheduler]
    max_instances_per_host = 20
"""

from oslo_log import log as logging

from scheduler import conf
from scheduler import filters

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class NumInstancesFilter(filters.BaseHostFilter):
    """Passes hosts with fewer instances than the limit."""

    pure = True

    RUN_ON_REBUILD = False

    def max_instances(self, host_state):
        """The limit for ``host_state``."""
        return CONF.filter_scheduler.max_instances_per_host

    def max_instances_per_row(self, host_table):
        """The limit for every row: a number or an array."""
        return CONF.filter_scheduler.max_instances_per_host

    def host_passes(self, host_state, spec):
        limit = self.max_instances(host_state)
        if host_state.num_instances < limit:
            return True
        LOG.debug('%(host)s fails num_instances check: max instances '
                  '%(limit)s, instances %(count)s',
                  {'host': host_state, 'limit': limit,
                   'count': host_state.num_instances})
        return False

    def filter_all(self, host_table, mask, spec):
        return mask & (host_table.num_instances
                       < self.max_instances_per_row(host_table))
