"""Scheduler drivers, chosen by ``[scheduler] driver``.

* ``filter_scheduler``: :class:`filter_scheduler.FilterScheduler`, filters
  then weighers then a claim, over a host cache refreshed in the
  background;
* ``caching_scheduler``: :class:`caching_scheduler.CachingScheduler`, the
  same over a cache refreshed only by the periodic task;
* ``chance_scheduler``: :class:`chance_scheduler.ChanceScheduler`, a
  random host whose compute service is up.

See :mod:`scheduler.drivers.base` for the contract the manager relies on.
"""
