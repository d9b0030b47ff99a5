"""What one refresh of the host cache read, and the settings every read
shares.

The HostManager (:mod:`scheduler.host_cache.host_manager`) and its reads
over cells (:mod:`scheduler.host_cache.cell_refresh`) both fill a
:class:`Changes` and start their incremental reads :data:`WRITE_SLACK`
seconds before the previous refresh began; both live here so that
neither imports the other::

    changes = Changes()
    changes.alive_since, changes.alive_until = alive_window(began)
"""

import datetime

from scheduler import conf
from scheduler.db import claims
from scheduler.host_cache import node_extras

CONF = conf.CONF

# A refresh reads the nodes and services written since this many seconds
# before the previous refresh began, so that a row committed late (its
# updated_at is older than its commit) or by a host whose clock lags a
# little is not missed.
WRITE_SLACK = 2.0

_RATIO_OPTIONS = ('cpu_allocation_ratio', 'ram_allocation_ratio',
                  'disk_allocation_ratio')

# The key of the default availability zone in default_ratios' dict.
DEFAULT_AZ = 'default_availability_zone'


def default_ratios():
    """The configured allocation ratios, for nodes that report none, and
    ``[DEFAULT] default_availability_zone`` (read once per refresh, not
    per node)."""
    defaults = {name: claims.default_ratio(name) for name in _RATIO_OPTIONS}
    defaults[DEFAULT_AZ] = CONF.default_availability_zone
    return defaults


def alive_window(now):
    """``(earliest, latest)`` heartbeat that makes a service alive at
    ``now``."""
    window = datetime.timedelta(seconds=CONF.service_down_time)
    return now - window, now + window


class Changes:
    """What one refresh read from SQL, applied later under the lock."""

    def __init__(self):
        self.nodes = []
        self.removed = []
        self.services = []
        # Whether the services were compared with the cached ones
        # (Applying._compare_services): {host: ServiceInfo} of the rows
        # that change the cache, the hosts of those not alive, and the
        # hosts whose service a full read no longer found.
        self.services_compared = False
        self.services_changed = {}
        self.services_down = set()
        self.services_gone = set()
        # How many service rows the comparison read (``services`` may be
        # an iterator it consumed).
        self.services_count = None
        # Services whose last heartbeat lies between these are alive.
        self.alive_since = self.alive_until = None
        # A full read: ``nodes`` holds the rows whose generation changed,
        # ``services`` every service (those it does not name are gone),
        # unless the database compared them with the cache's
        # (``services_compared_on_server``, see
        # host_reads.read_service_differences): then ``services`` holds
        # those that may differ, and none is gone. Otherwise both hold
        # the rows written since the watermark.
        self.full = False
        self.services_compared_on_server = False
        self.aggregates = None
        self.aggregates_fingerprint = None
        # Aggregate fanouts applied when the refresh began (see _apply).
        self.aggregate_seq = 0
        # {host: {uuid: InstanceInfo}} read on the first load.
        self.instances = None
        # The inventories and traits of the nodes read (node_extras).
        self.extras = node_extras.none()

    def services_read(self):
        """How many service rows this refresh read."""
        if self.services_count is not None:
            return self.services_count
        return len(self.services)
