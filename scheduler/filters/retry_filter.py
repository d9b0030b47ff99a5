"""RetryFilter: skip the nodes a rescheduled instance already failed on.

When a build fails and the conductor asks again, ``spec.retry.hosts``
lists the ``[host, node]`` pairs tried so far; those nodes fail this
filter (names compared exactly). A first attempt passes every host. The
alternates a selection carries usually make rescheduling go without the
scheduler; this filter is for the requests that come back::

    [filter_scheduler]
    enabled_filters = RetryFilter,ComputeFilter,RamFilter
"""

from oslo_log import log as logging
import numpy as np

from scheduler import filters

LOG = logging.getLogger(__name__)


def tried(spec):
    """The ``(host, node)`` pairs already tried, as a set."""
    retry = spec.obj_get('retry')
    if not retry:
        return set()
    return {tuple(pair) for pair in retry.obj_get('hosts', [])}


class RetryFilter(filters.BaseHostFilter):
    """Passes nodes the request has not tried yet."""

    pure = True

    # Where an instance was tried says nothing about rebuilding it.
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        attempts = tried(spec)
        if (host_state.host, host_state.nodename) not in attempts:
            return True
        LOG.info('Host %(host)s fails. Previously tried hosts: %(hosts)s',
                 {'host': host_state, 'hosts': sorted(attempts)})
        return False

    def filter_all(self, host_table, mask, spec):
        attempts = tried(spec)
        if not attempts:
            return mask
        failed = np.zeros(len(host_table), dtype=np.bool_)
        for pair in attempts:
            if len(pair) != 2:
                continue
            for row in host_table.rows_by_host.get(pair[0], ()):
                if host_table.states[row].nodename == pair[1]:
                    failed[row] = True
        return mask & ~failed
