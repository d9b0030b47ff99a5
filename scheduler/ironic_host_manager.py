"""IronicHostManager: baremetal nodes, each taken whole by one instance.

Nova's IronicHostManager, chosen by ``[scheduler] host_manager =
ironic_host_manager``. An Ironic node (hypervisor type ``ironic``) is a
physical machine: it cannot be cut into several instances, so whatever
the flavor asks for, the instance on it uses all of it. The host manager
gives such nodes an :class:`IronicNodeState`, which

* reports every vCPU, MB of RAM and GB of disk used once the node holds
  an instance: when a claim is consumed in the cache
  (:meth:`IronicNodeState.consumed`), and when the node is read from SQL
  with usage or with instances its compute reported;
* asks its claims for the whole node (:meth:`IronicNodeState.claim_amounts`):
  the scheduler's SQL claim, and the ``allocation_request`` of its
  Selections (which the conductor claims when it falls back on an
  alternate), take the node's full capacity. Two schedulers racing for
  one node cannot both win, the node's usage equals its capacity after
  the claim, and releasing the claim gives all of it back.

"Whole" is the capacity the claims check, ``total * allocation_ratio -
reserved`` of each resource (rounded down to whole units): Nova's Ironic
driver reports ratios of 1.0 and nothing reserved, which makes it the
node's vCPUs, RAM and disk. Other nodes are shared as by the default
host manager.

With ``[filter_scheduler] use_baremetal_filters`` the scheduler filters
with ``baremetal_enabled_filters`` (by default Nova's list, ending with
the exact filters) instead of ``enabled_filters``, for every request, as
Nova did::

    manager = IronicHostManager()
    table = manager.snapshot()
    state = table.states[0]
    state.claim_amounts(claims.Resources(1, 512, 10))
    # Resources(vcpus=8, memory_mb=16384, disk_gb=200) on an 8-core node
"""

import math

from oslo_log import log as logging
from oslo_log import versionutils

from scheduler import conf
from scheduler.db import claims
from scheduler import host_cache

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The hypervisor type of the nodes Ironic's compute driver reports.
IRONIC = 'ironic'

# resource -> the HostState attribute of its usage
_USED = {resource: attrs[1]
         for resource, attrs in host_cache.RESOURCE_ATTRS.items()}


def is_baremetal(state_or_row):
    """True for a node (HostState or ``compute_nodes`` row) of Ironic."""
    return getattr(state_or_row, 'hypervisor_type', None) == IRONIC


def whole_node(state):
    """The Resources that take all of ``state``'s node: its capacity of
    each resource, rounded down, and never below 0."""
    return claims.Resources(*(max(0, math.floor(state.capacity(resource)))
                              for resource in claims.Resources._fields))


class IronicNodeState(host_cache.HostState):
    """A baremetal node: free, or taken whole (see the module docstring)."""

    __slots__ = ()

    @classmethod
    def from_host_state(cls, state):
        """The IronicNodeState of a node read as a plain HostState: used
        up entirely if it holds anything."""
        node = cls.__new__(cls)
        for name in host_cache.HostState.__slots__:
            setattr(node, name, getattr(state, name))
        if node.in_use():
            node._take_whole()
        return node

    def in_use(self):
        """True if the node holds an instance: its compute reports one,
        or a claim uses part of it."""
        return bool(self.num_instances) or any(
            self.used(resource) > 0 for resource in _USED)

    def _take_whole(self):
        for resource, amount in zip(claims.Resources._fields,
                                    whole_node(self)):
            setattr(self, _USED[resource], max(self.used(resource), amount))

    def consumed(self, resources, hardware_record=None, extra=None):
        """A copy taken whole by one more instance, whatever it asked
        (``extra``'s classes as asked)."""
        state = super().consumed(resources, hardware_record, extra)
        state._take_whole()
        return state

    def claim_amounts(self, resources):
        """A claim on a baremetal node takes the whole node."""
        return whole_node(self)


class IronicHostManager(host_cache.HostManager):
    """HostManager whose Ironic nodes are IronicNodeStates."""

    def __init__(self, auto_refresh=True):
        super().__init__(auto_refresh=auto_refresh)
        versionutils.report_deprecated_feature(
            LOG, 'The ironic_host_manager is deprecated, as it was in Nova '
                 'since its 17.0.0 Queens release.')

    def _make_state(self, row, ratios, *more):
        state = super()._make_state(row, ratios, *more)
        if is_baremetal(row):
            return IronicNodeState.from_host_state(state)
        return state

    def filter_names(self):
        """``baremetal_enabled_filters`` when ``use_baremetal_filters`` is
        set, else ``enabled_filters``; with the option that holds them."""
        options = CONF.filter_scheduler
        if options.use_baremetal_filters:
            return ('baremetal_enabled_filters',
                    list(options.baremetal_enabled_filters))
        return super().filter_names()
