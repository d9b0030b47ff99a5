"""The service version: what a running Gantt service says it speaks.

Every service records ``SERVICE_VERSION`` with its heartbeats
(``services.version``, as Nova's services do), so that an operator, and
``gantt-status upgrade check``, can tell which services run which
release during a rolling upgrade. The number grows by one with each
change of what services send each other; its history:

* (none) - services of the releases before this one record no version.
* 1 - services record their version; the conductor RPC API 1.2
  (``service_update`` carries it).

``OLDEST_SUPPORTED_SERVICE_VERSION`` is the oldest version this release's
control services (scheduler, conductor) still talk to: ``None`` means
the unversioned services of the previous release still work, through the
``[upgrade_levels]`` caps::

    from scheduler import version
    if row.version is not None and row.version > version.SERVICE_VERSION:
        ...   # a compute newer than this conductor
"""

SERVICE_VERSION = 1

OLDEST_SUPPORTED_SERVICE_VERSION = None
