"""The instances on each host, as the filters and weighers see them.

Every HostState carries ``instances``: ``{instance uuid: InstanceInfo}``
of the instances on its compute host (all nodes of one host share the
same dict, as in Nova). The affinity filters and weighers read it per host
(``uuid in host_state.instances``) or, on the batch path, as counts per
row (:meth:`scheduler.host_cache.host_table.HostTable.instance_counts`), which
an :class:`InstanceIndex` (instance uuid -> host) answers without looking at
every host.

The dicts are never changed in place: a change builds a new dict and new
HostStates (:func:`with_instances`), so a request that holds a table
snapshot keeps a consistent view::

    table = host_instances.with_instance(table, row, uuid, info)
    counts = table.instance_counts(spec.instance_group.members)
"""

import copy

from scheduler import placement_types

InstanceInfo = placement_types.InstanceInfo

NO_INSTANCES = {}

# Changes an index keeps apart from its base dict before it folds them in,
# and the most recent of them apart from the others (each change copies
# the recent ones, every _RECENT_LIMIT changes the others, every
# _DELTA_LIMIT the base).
_DELTA_LIMIT = 4096
_RECENT_LIMIT = 64


info_from_flavor_and_image = placement_types.info_from_flavor_and_image


def _primitive_data(primitive, *path):
    """Walk a versioned object primitive (``gantt_object.data`` dicts)."""
    for name in path:
        if not isinstance(primitive, dict):
            return None
        primitive = (primitive.get('gantt_object.data') or {}).get(name)
    return primitive


def info_from_row(row):
    """An InstanceInfo from an ``instances`` row (flavor, request_spec)."""
    properties = _primitive_data(row.request_spec, 'image', 'properties')
    return info_from_flavor_and_image(
        row.flavor, properties if isinstance(properties, dict) else {})


def group_rows(rows):
    """``{host: {uuid: InstanceInfo}}`` from ``instances`` rows."""
    by_host = {}
    for row in rows:
        by_host.setdefault(row.host, {})[row.uuid] = info_from_row(row)
    return by_host


def with_instances(state, instances):
    """A copy of a HostState with other ``instances``."""
    state = copy.copy(state)
    state.instances = instances
    return state


def host_rows(table, host):
    return [int(row) for row in table.rows_by_host.get(host, ())]


def host_states_with(table, host, instances):
    """``{row: HostState}``: the table's states of the nodes of ``host``,
    each with ``instances``."""
    return {row: with_instances(table.states[row], instances)
            for row in host_rows(table, host)}


def set_host_instances(table, host, instances):
    """A table where every node of ``host`` has ``instances``."""
    return table.replace(host_states_with(table, host, instances))


def with_instance(table, row, uuid, info):
    """A table where the host of ``row`` also runs instance ``uuid``."""
    return table.replace(states_with_instance(table, row, uuid, info))


def states_with_instance(table, row, uuid, info):
    """``{row: HostState}``: the table's states of the nodes of the host
    of ``row``, with instance ``uuid`` on that host too."""
    instances = dict(table.states[row].instances)
    instances[uuid] = info
    return host_states_with(table, table.states[row].host, instances)


class InstanceIndex:
    """Instance uuid -> host over the HostStates of one table.

    Persistent: :meth:`updated` returns a new index that shares this
    one's dicts, so deriving a table from another costs only the change
    (and a copy of the last few changes: a claim costs about as much at
    any number of instances).
    """

    def __init__(self, base, delta=None, recent=None):
        # Never changed once built; uuid -> host, or None: removed.
        self._base = base
        self._delta = delta or {}
        # The latest changes, read before the others.
        self._recent = recent or {}

    @classmethod
    def build(cls, states):
        base = {}
        seen = set()
        for state in states:
            if state.host in seen:
                continue
            seen.add(state.host)
            for uuid in state.instances:
                base[uuid] = state.host
        return cls(base)

    def get(self, uuid):
        if uuid in self._recent:
            return self._recent[uuid]
        if uuid in self._delta:
            return self._delta[uuid]
        return self._base.get(uuid)

    def updated(self, old_states, new_states):
        """The index after ``{row: HostState}`` replaced ``old_states``."""
        removed, added = {}, {}
        for row, state in new_states.items():
            old = old_states[row]
            if old.instances is state.instances and old.host == state.host:
                continue
            # The instances that left and came, as set differences of
            # the keys (a claim adds one instance to a host that may run
            # dozens: no Python loop over them).
            if old.host != state.host:
                gone, came = old.instances.keys(), state.instances.keys()
            else:
                gone = old.instances.keys() - state.instances.keys()
                came = state.instances.keys() - old.instances.keys()
            for uuid in gone:
                # (Unless another host took it meanwhile.)
                if self.get(uuid) == old.host:
                    removed[uuid] = None
            for uuid in came:
                added[uuid] = state.host
        if not removed and not added:
            return self
        recent = dict(self._recent)
        recent.update(removed)
        recent.update(added)
        if len(recent) <= _RECENT_LIMIT:
            return InstanceIndex(self._base, self._delta, recent)
        delta = dict(self._delta)
        delta.update(recent)
        if len(delta) <= _DELTA_LIMIT:
            return InstanceIndex(self._base, delta)
        base = dict(self._base)
        for uuid, host in delta.items():
            if host is None:
                base.pop(uuid, None)
            else:
                base[uuid] = host
        return InstanceIndex(base)
