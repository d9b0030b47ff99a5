"""ExactRamFilter: only hosts whose free RAM is exactly the flavor's.

Nova's filter for baremetal nodes (deprecated there in Pike, kept in
Gantt for ``[filter_scheduler] baremetal_enabled_filters``): a baremetal
node is taken whole, so a flavor must describe the machine exactly. Free
RAM is ``free_ram_mb``, ``memory_mb - reserved_memory_mb - memory_mb_used``
without any allocation ratio. Example: a free 16384 MB node passes a
16384 MB flavor only; once taken (used up whole) it passes none but a
0 MB flavor.
"""

from oslo_log import log as logging

from scheduler import filters

LOG = logging.getLogger(__name__)


class ExactRamFilter(filters.BaseHostFilter):
    """Passes hosts whose free RAM equals the flavor's memory."""

    pure = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        wanted = spec.flavor.memory_mb
        free = host_state.free_ram_mb
        if wanted == free:
            return True
        LOG.debug('%(host)s does not have exactly %(wanted)s MB of usable '
                  'RAM, it has %(free)s MB',
                  {'host': host_state, 'wanted': wanted, 'free': free})
        return False

    def filter_all(self, host_table, mask, spec):
        return mask & (host_table.free_ram_mb == spec.flavor.memory_mb)
