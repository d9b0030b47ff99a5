"""CachingScheduler: the FilterScheduler over a periodically loaded cache.

The host cache is loaded once when the driver starts (or on the first
request) and then only by :meth:`CachingScheduler.run_periodic_tasks`,
which the manager calls every ``[scheduler] periodic_task_interval``
seconds; no background thread reads the database. Claims are still made
in SQL, and recorded in the cache, so a stale cache costs at most a lost
claim race and a retry. Compute services are up or down as the last
refresh judged them (a heartbeat older than ``[DEFAULT]
service_down_time`` then): a host that died since can be chosen until
the next refresh::

    [scheduler]
    driver = caching_scheduler
    periodic_task_interval = 60
"""

from scheduler.drivers import filter_scheduler


class CachingScheduler(filter_scheduler.FilterScheduler):
    """FilterScheduler whose host states the periodic task refreshes."""

    def _create_host_manager(self):
        return super()._create_host_manager(auto_refresh=False)

    def run_periodic_tasks(self, context):
        """Refresh the host cache (incrementally) from SQL."""
        self.host_manager.refresh()
