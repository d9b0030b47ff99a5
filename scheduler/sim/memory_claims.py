"""Claims in memory: the simulator's truth of usage without SQL round trips.

A scheduler's claim is a conditional write in SQL (see
:mod:`scheduler.db.claims`); in a simulation it cost more than the
decision itself (about 1 ms a claim on SQLite, through SQLAlchemy, and as
much again for each re-read of a node). :class:`Usage` keeps what those
rows would hold instead, and answers as the SQL claim does:

* a claim wins only if every resource it asks for (amount > 0) still fits
  under ``total * allocation_ratio - reserved`` (the host cache's
  :meth:`HostState.capacity`, which resolves ratios as the claims do);
  a consumer that holds a claim already is refused;
* a hard server-group policy (affinity, anti-affinity) is checked
  against the hosts the group's other members hold claims on, and a
  :class:`GroupConflict` says which;
* a release gives back what the claim took.

It is the drivers' :attr:`claimer` (the seam of
:mod:`scheduler.drivers.claimers`), shared by every simulated worker, so
that workers race for room as they would in SQL. Each worker's host cache
is a :class:`SimHostManager`: its :meth:`~SimHostManager.refresh_nodes`
(after a lost claim, a release, and at a round's start for what the
other workers changed) reads a node from :class:`Usage` rather than from
SQL, as a re-read would have found it. Between two such reads a worker
sees only its own claims, as before.

What it does not model (:func:`suits` refuses those clouds, which keep
the SQL claims): NUMA cells, pinned CPUs, pages, PCI devices, and
resource classes beyond VCPU, MEMORY_MB and DISK_GB (baremetal
included)::

    usage = memory_claims.Usage(table)
    driver.claimer = usage
    driver.host_manager.usage = usage
"""

import copy

from scheduler.db import group_claims
from scheduler import host_cache
from scheduler import placement_types

FIELDS = placement_types.Resources._fields
# Flavor extra specs that make a claim take NUMA cells, devices or other
# resource classes: the SQL claims fit those.
_SQL_ONLY_SPECS = ('hw:', 'hw_', 'pci_passthrough:', 'resources')


def suits(cloud):
    """True if :class:`Usage` claims what the SQL claims would on
    ``cloud`` (a :class:`scheduler.sim.cloud.Cloud`): no host reports
    NUMA cells, PCI devices or other resource classes, and no flavor
    asks for them."""
    for group in cloud.groups:
        if (group.numa_topology or group.pci_device_pools
                or group.inventories or group.resource_class
                or group.provider_configs):
            return False
    return not any(key.startswith(_SQL_ONLY_SPECS)
                   for flavor in cloud.flavors
                   for key in flavor.extra_specs)


class Usage:
    """The used amounts of every node of ``table`` (a HostTable as first
    loaded), claimed and released in memory; see the module docstring."""

    def __init__(self, table):
        states = table.states
        self.row_by_uuid = {state.uuid: row for row, state in
                            enumerate(states)}
        # Python lists: a claim reads three numbers of one row, which
        # NumPy's scalar indexing would make slower.
        self.capacity = [[state.capacity(field) for field in FIELDS]
                         for state in states]
        self.used = [[state.used(field) for field in FIELDS]
                     for state in states]
        # The rows as read: what a re-read finds beside the usage (the
        # claims change nothing else of a node).
        self.loaded = list(states)
        self.hosts = [state.host for state in states]
        # {consumer uuid: (row, amounts, group uuid or None)}
        self.held = {}
        # {group uuid: policy}, {group uuid: {consumer uuid: host}}
        self.policies = {}
        self.members = {}

    # -- the claimer seam (scheduler.drivers.claimers) ---------------------

    def claim(self, host_state, consumer_uuid, resources, report,
              group_uuid=None, hardware=None, extra=None, owner=None):
        """True, False (no room, or the consumer holds a claim) or a
        GroupConflict, as :class:`claimers.SqlClaimer` answers."""
        if hardware is not None or extra:
            raise NotImplementedError(
                'claims of NUMA cells, devices or other resource classes '
                'are SQL claims (see memory_claims.suits)')
        row = self.row_by_uuid[host_state.uuid]
        if consumer_uuid in self.held or min(resources) < 0:
            return False
        if group_uuid is not None:
            conflict = self._group_conflict(group_uuid, host_state.host)
            if conflict is not None:
                return conflict
        used = self.used[row]
        capacity = self.capacity[row]
        for index, amount in enumerate(resources):
            if amount > 0 and used[index] + amount > capacity[index]:
                return False
        for index, amount in enumerate(resources):
            used[index] += amount
        self.held[consumer_uuid] = (row, tuple(resources), group_uuid)
        if group_uuid is not None:
            self.members.setdefault(group_uuid, {})[consumer_uuid] = \
                host_state.host
        return True

    def release(self, claimed):
        """Give back the claims ``[(consumer_uuid, node id)]`` (the node
        is the one the claim was made on)."""
        for consumer_uuid, _node in claimed:
            held = self.held.pop(consumer_uuid, None)
            if held is None:
                continue
            row, amounts, group_uuid = held
            used = self.used[row]
            for index, amount in enumerate(amounts):
                used[index] -= amount
            if group_uuid is not None:
                self.members[group_uuid].pop(consumer_uuid, None)

    # -- server groups -----------------------------------------------------

    def add_group(self, group_uuid, policy):
        """A server group whose hard policy claims check."""
        self.policies[group_uuid] = policy

    def _group_conflict(self, group_uuid, host):
        policy = self.policies.get(group_uuid)
        if policy not in group_claims.HARD_POLICIES:
            return None
        hosts = {}
        for other in self.members.get(group_uuid, {}).values():
            hosts[other] = hosts.get(other, 0) + 1
        conflict = group_claims.GroupConflict(group_uuid, policy, 1, hosts)
        return None if conflict.allows(host) else conflict

    # -- what a re-read of a node finds ------------------------------------

    def state(self, row, cached):
        """``cached`` (the row's HostState in a host cache) as a re-read
        would make it: the usage claimed now, the instance and I/O counts
        as the node's row holds them, the instances on the host kept."""
        loaded = self.loaded[row]
        state = copy.copy(cached)
        state.vcpus_used, state.memory_mb_used, state.local_gb_used = \
            self.used[row]
        state.num_instances = loaded.num_instances
        state.io_workload = loaded.io_workload
        return state


class SimHostManager(host_cache.HostManager):
    """A host cache whose node re-reads come from :attr:`usage` (a
    :class:`Usage`) when it is set, from SQL otherwise."""

    usage = None

    def refresh_nodes(self, node_ids):
        if self.usage is None:
            return super().refresh_nodes(node_ids)
        fresh = {}
        with self._lock:
            table = self._table
            replaced = {}
            for node_id in node_ids:
                # A node with a claim in flight keeps its cached row, as
                # in HostManager.refresh_nodes.
                if (node_id not in table.row_by_id
                        or node_id in self._in_flight):
                    continue
                row = table.row_by_id[node_id]
                cached = table.states[row]
                state = self.usage.state(self.usage.row_by_uuid[cached.uuid],
                                         cached)
                replaced[row] = fresh[node_id] = state
            self._put_states(replaced)
        return fresh
