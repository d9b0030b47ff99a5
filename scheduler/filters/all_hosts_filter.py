"""AllHostsFilter: lets every host through.

Useful to run the weighers alone::

    [filter_scheduler]
    enabled_filters = AllHostsFilter
"""

from scheduler import filters


class AllHostsFilter(filters.BaseHostFilter):
    """No-op filter: every host passes."""

    pure = True

    # The answer cannot change within a request.
    run_filter_once_per_request = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        return True

    def filter_all(self, host_table, mask, spec):
        return mask
