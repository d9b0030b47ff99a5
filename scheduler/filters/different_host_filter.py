"""DifferentHostFilter: only hosts that run none of the given instances.

The ``different_host`` scheduler hint lists instance UUIDs; a host passes
if it runs none of them. Without the hint every host passes::

    gantt-manage server create ... --hint different_host=<uuid>
"""

from oslo_log import log as logging

from scheduler import filters
from scheduler.filters import same_host_filter

LOG = logging.getLogger(__name__)

HINT = 'different_host'


class DifferentHostFilter(filters.BaseHostFilter):
    """Passes hosts that run none of the ``different_host`` instances."""

    pure = True

    # The hint and the instances it names do not change within a request.
    run_filter_once_per_request = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        uuids = same_host_filter.hint_uuids(spec, HINT)
        running = [uuid for uuid in uuids if uuid in host_state.instances]
        if not running:
            return True
        LOG.debug('%(host)s runs %(uuids)s (different_host)',
                  {'host': host_state, 'uuids': ', '.join(running)})
        return False

    def filter_all(self, host_table, mask, spec):
        uuids = same_host_filter.hint_uuids(spec, HINT)
        if not uuids:
            return mask
        return mask & (host_table.instance_counts(uuids) == 0)
