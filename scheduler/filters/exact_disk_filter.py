"""ExactDiskFilter: only hosts whose free disk is exactly the flavor's.

Nova's filter for baremetal nodes (deprecated there in Pike, kept in
Gantt for ``[filter_scheduler] baremetal_enabled_filters``): a baremetal
node is taken whole, so a flavor must describe the machine exactly. The
flavor asks for ``1024 * (root_gb + ephemeral_gb) + swap`` MB (swap is in
MB); free disk is ``free_disk_mb``, ``(local_gb - reserved_disk_gb -
local_gb_used) * 1024`` without any allocation ratio. Example: a free
200 GB node (204800 MB) passes a flavor with a 200 GB root disk, or one
with 199 GB of root disk and 1024 MB of swap, but not a 100 GB one.
"""

from oslo_log import log as logging

from scheduler import filters

LOG = logging.getLogger(__name__)


def requested_disk_mb(flavor):
    """The disk a flavor asks for, in MB, as Nova's filter counted it."""
    return 1024 * (flavor.root_gb + flavor.ephemeral_gb) + flavor.swap


class ExactDiskFilter(filters.BaseHostFilter):
    """Passes hosts whose free disk equals the flavor's disk."""

    pure = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        wanted = requested_disk_mb(spec.flavor)
        free = host_state.free_disk_mb
        if wanted == free:
            return True
        LOG.debug('%(host)s does not have exactly %(wanted)s MB of usable '
                  'disk, it has %(free)s MB',
                  {'host': host_state, 'wanted': wanted, 'free': free})
        return False

    def filter_all(self, host_table, mask, spec):
        wanted = requested_disk_mb(spec.flavor)
        return mask & (host_table.free_disk_mb == wanted)
