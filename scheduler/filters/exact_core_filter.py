"""ExactCoreFilter: only hosts whose free vCPUs are exactly the flavor's.

Nova's filter for baremetal nodes (deprecated there in Pike, kept in
Gantt for ``[filter_scheduler] baremetal_enabled_filters``): a baremetal
node is taken whole, so a flavor must describe the machine exactly. Free
vCPUs are ``vcpus_total - vcpus_used``, as Nova counted them: no
allocation ratio, nothing reserved. A node that reports no vCPUs at all
passes nothing (its CPU inventory is taken for broken). Example: a free
8-core node passes an 8-vCPU flavor only.
"""

from oslo_log import log as logging

from scheduler import filters

LOG = logging.getLogger(__name__)


class ExactCoreFilter(filters.BaseHostFilter):
    """Passes hosts whose free vCPUs equal the flavor's vCPUs."""

    pure = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        if not host_state.vcpus_total:
            LOG.warning('%s reports no vCPUs; its CPU inventory looks '
                        'broken, not choosing it', host_state)
            return False
        wanted = spec.flavor.vcpus
        free = host_state.vcpus_total - host_state.vcpus_used
        if wanted == free:
            return True
        LOG.debug('%(host)s does not have exactly %(wanted)s usable vCPUs, '
                  'it has %(free)s',
                  {'host': host_state, 'wanted': wanted, 'free': free})
        return False

    def filter_all(self, host_table, mask, spec):
        total = host_table.columns['vcpus_total']
        broken = mask & (total == 0)
        if broken.any():
            LOG.warning('%d host(s) report no vCPUs; their CPU inventory '
                        'looks broken, not choosing them',
                        int(broken.sum()))
        free = total - host_table.columns['vcpus_used']
        return mask & (total != 0) & (free == spec.flavor.vcpus)
