"""ComputeFilter: only hosts whose compute service is enabled and up.

A host fails if its ``gantt-compute`` service is disabled (``gantt-manage
service disable``), forced down, or its last heartbeat is not within
``[DEFAULT] service_down_time`` seconds of now, either way; as in Nova's DB
servicegroup driver, a service that never sent one counts from when its
row was created (see :func:`scheduler.db.services.is_up`)::

    [filter_scheduler]
    enabled_filters = ComputeFilter,RamFilter
"""

from oslo_log import log as logging

from scheduler.conf import cached
from scheduler import filters

LOG = logging.getLogger(__name__)


def _last_heard(host_state):
    service = host_state.service
    if service is None:
        return 'no compute service'
    if service.forced_down:
        return 'forced down'
    if service.last_seen_up is None:
        return 'never heartbeated; created %s' % service.created_at
    return 'last heartbeat %s' % service.last_seen_up


class ComputeFilter(filters.BaseHostFilter):
    """Passes hosts with an enabled compute service that is up."""

    # Pure but for the time, which only service_up reads: a ranking made
    # ahead holds until the first heartbeat crosses the window (see
    # scheduler.drivers.ahead).
    pure = True

    RUN_ON_REBUILD = False

    # Services are read once per request.
    run_filter_once_per_request = True

    def host_passes(self, host_state, spec):
        if host_state.service_disabled:
            LOG.debug('%(host)s is disabled, reason: %(reason)s',
                      {'host': host_state,
                       'reason': host_state.disabled_reason})
            return False
        down_time = cached.group(None).service_down_time
        if not host_state.service_up(down_time):
            LOG.warning('%(host)s has not been heard from in a while '
                        '(%(last)s)', {'host': host_state,
                                       'last': _last_heard(host_state)})
            return False
        return True

    def filter_all(self, host_table, mask, spec):
        return (mask & ~host_table.disabled
                & host_table.service_up(
                    cached.group(None).service_down_time))
