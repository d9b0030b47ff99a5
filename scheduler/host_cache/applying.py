"""How the HostManager merges what it read into its table.

:class:`Applying` is a mixin of
:class:`scheduler.host_cache.host_manager.HostManager`: under the
manager's lock, :meth:`Applying._apply` takes what a refresh read (a
:class:`scheduler.host_cache.refresh_changes.Changes`) into the cached
services, aggregates and rows, writing rows in place where it can and
building a new table where the set of nodes changed; the aggregate
fanouts (:meth:`Applying.update_aggregates`,
:meth:`Applying.delete_aggregate`) go through here too::

    manager.update_aggregates([aggregate])
"""

import sys

from oslo_log import log as logging

from scheduler.host_cache import cell_gather
from scheduler.host_cache import host_state
from scheduler.host_cache import host_table
from scheduler.host_cache import refresh_changes

LOG = logging.getLogger(__name__)

# The most hosts whose service changed whose rows an incremental
# refresh restates under the lock and writes in place (~12 us a row on
# the loaded 2-CPU machine: 3 ms for 256). Beyond, as when most services
# change liveness at once, it restates them and builds a new table off
# the lock, then swaps it in (~16 us a row of the whole table, 1.6 s at
# 100,000 hosts, during which requests and claims go on). A full read
# writes in place as an incremental refresh does only if it found at
# most as many changed nodes too (as it mostly does: the incremental
# reads took the rest); otherwise it builds a new table, so that no
# request sees one written in place half way.
RESTATE_UNDER_LOCK = 256


def aggregates_by_host(aggregates):
    """``{host: tuple of the aggregates holding it}``, in the order of
    ``aggregates``. Hosts in the same aggregates share one tuple (and so
    one zone set, see host_state.zones_of): a host's tuple grows one
    aggregate at a time, and each step from one shared tuple with one
    aggregate is made once (a million hosts in a few zones: a dict look-up
    or two a host, no tuple of its own)."""
    by_host = {}
    get = by_host.get
    # (id of a shared tuple, id of an aggregate) -> the tuple with it
    # (the dict holds every tuple it names: no id is reused meanwhile).
    steps = {}
    for aggregate in aggregates:
        alone = (aggregate,)
        for host in aggregate.hosts:
            held = get(host)
            if held is None:
                by_host[host] = alone
                continue
            key = id(held), id(aggregate)
            grown = steps.get(key)
            if grown is None:
                grown = steps[key] = held + alone
            by_host[host] = grown
    return by_host


def _rows_to_restate(table, hosts, skip_ids):
    """The rows of ``table`` that ``hosts`` have, but those of the nodes
    in ``skip_ids``, as they are asked for: a deferred build asks for
    them off the lock (a table's rows never move)."""
    for host in hosts:
        for position in table.rows_by_host.get(host, ()):
            if table.states[position].id not in skip_ids:
                yield position


# _make_state's default: the service looked up by the row's host.
_LOOK_UP = object()


class _InReadOrder:
    """The cached services of a first load's node rows, found in the
    order they were read before any look-up by name: a cloud's computes
    create their service and then their node, so both tables' reads
    mostly list the hosts in the same order, and the service a node
    wants is the one after the last one found. A look-up in a dict of a
    million names reads memory at random (0.4-0.8 s of a cold start at
    a million hosts, issue 53); two names compared do not."""

    def __init__(self, services):
        self._services = services
        self._ahead = iter(services.values())
        self._next = next(self._ahead, None)
        self._last = None

    def of(self, host):
        """The ServiceInfo of ``host``, or None."""
        service = self._next
        if service is not None and service.host == host:
            self._last = service
            self._next = next(self._ahead, None)
            return service
        last = self._last
        if last is not None and last.host == host:
            # Another node of the same host.
            return last
        return self._services.get(host)


class Applying:
    """The merge of a HostManager's reads (a mixin: see the module's
    doc)."""

    def _apply(self, changes, seen_seq):
        """Merge what a refresh read; called with the lock held."""
        changed_hosts = self._apply_services(changes)
        rebuild = False
        if changes.instances is not None:
            self._load_instances(changes.instances)
            rebuild = True
        if changes.aggregate_seq != self._aggregate_seq:
            # A fanout changed the aggregates while this refresh read
            # them: what it read may be older. The fanout left the
            # fingerprint unset, so the next refresh reads them again.
            changes.aggregates = None
        if changes.aggregates is not None:
            self._set_aggregates(changes.aggregates)
            self._aggregates_fingerprint = changes.aggregates_fingerprint
            rebuild = True
        if self._table is None:
            self._first_build(changes)
            return
        for node_id in changes.removed:
            self._generations.pop(node_id, None)
            self._learned_at.pop(node_id, None)
            self._reread.discard(node_id)
            rebuild = True
        # Nodes claimed on after this refresh started its reads, or with
        # a reservation whose SQL claim has not returned: the row read may
        # predate the claim. Keep the consumed cached row and read the
        # node again next time.
        raced = {node_id for node_id, seq in self._consumed_at.items()
                 if seq > seen_seq}
        raced.update(self._in_flight)
        if not changes.full:
            # Rows written within the slack were mostly read already (and
            # are held as they are: the next reads may leave them out).
            unchanged = [row.id for row in changes.nodes
                         if self._generations.get(row.id) == row.generation]
            for node_id in unchanged:
                self._learned(node_id)
            if unchanged:
                changes.nodes = [row for row in changes.nodes
                                 if self._generations.get(row.id)
                                 != row.generation]
        # {node id: row} of the nodes whose rows this refresh takes (and
        # new nodes, even raced: the cache has nothing else of them).
        fresh = {}
        for row in changes.nodes:
            new = row.id not in self._generations
            if new:
                rebuild = True
            if row.id in raced:
                self._generations[row.id] = -1
                self._reread.add(row.id)
                if new:
                    fresh[row.id] = row
                continue
            self._generations[row.id] = row.generation
            self._learned(row.id)
            self._reread.discard(row.id)
            fresh[row.id] = row
        self._consumed_at = {node_id: seq for node_id, seq
                             in self._consumed_at.items() if seq > seen_seq}
        ratios = refresh_changes.default_ratios()
        if rebuild:
            self._defer_build(*self._rebuilt_states(
                fresh, raced, ratios, changes.extras))
            return
        table = self._table
        replaced = {table.row_by_id[node_id]: self._make_state(
            row, ratios, changes.extras) for node_id, row in fresh.items()}
        # The rows of the hosts whose service changed take it.
        restate = _rows_to_restate(table, changed_hosts,
                                   set(fresh).union(raced))
        if len(changed_hosts) <= RESTATE_UNDER_LOCK and (
                not changes.full or len(replaced) <= RESTATE_UNDER_LOCK):
            for position in restate:
                replaced[position] = self._restated(table.states[position],
                                                    ratios)
            self._put_states(replaced)
            return
        if not replaced and table.rows_by_host.keys().isdisjoint(
                changed_hosts):
            return
        # A full read that found many changed nodes, or most services
        # changing liveness at once: a new table, its states restated and
        # built off the lock and swapped in whole (see _defer_build),
        # never rows written into the one requests hold.
        states = list(table.states)
        for position, state in replaced.items():
            states[position] = state
        self._defer_build(states, restate)

    def _apply_services(self, changes):
        """Update the cached services; return the hosts that changed.
        What :meth:`_compare_services` prepared goes in whole (dict and
        set operations: no Python code a service under the lock)."""
        if not changes.services_compared:
            self._compare_services(changes)
        cached = self._services
        if self._table is None and not cached:
            # The first load: every service is new, and no table has rows
            # to restate (a million hosts: a dict and a set of them not
            # copied again).
            self._services = changes.services_changed
            self._dead_hosts.update(changes.services_down)
            return set()
        changed = set(changes.services_changed)
        cached.update(changes.services_changed)
        self._dead_hosts.difference_update(changed)
        self._dead_hosts.update(changes.services_down)
        for host in changes.services_gone:
            if host in cached:
                changed.add(host)
                self._cache_service(host, None)
        return changed

    def _compare_services(self, changes):
        """Put in ``changes.services_changed`` the ServiceInfos of the
        rows that change a cached service (by host), in
        ``changes.services_down`` the hosts of those that are not alive,
        and the hosts whose service is gone (a full read) in
        ``changes.services_gone``. The refresh calls it before it takes
        the lock: a full read's 100,000 services, or as many changing
        liveness at once, would hold the lock, and the claims that wait
        on it, for tens or hundreds of ms. Only
        the refresh (which holds the refresh lock) writes services but
        for :meth:`refresh_nodes`, whose newer rows a stale comparison
        here cannot undo (a row judged unchanged is not written)."""
        cached_get = self._services.get
        since, until = changes.alive_since, changes.alive_until
        service_info = host_state.service_info
        kept, down = {}, set()
        # The hosts of cached services no row names (a full read that
        # read every service only).
        gone = set(self._services) if (
            changes.full and not changes.services_compared_on_server) \
            else set()
        count = 0
        # (Names bound and the heartbeat judged inline, as
        # host_state.heartbeat_within judges it: a cold start runs this
        # once per compute service.) ``changes.services`` may be an
        # iterator (the first load's stream): read once.
        for count, row in enumerate(changes.services, 1):
            if gone:
                gone.discard(row.host)
            heartbeat = row.last_seen_up or row.created_at
            alive = heartbeat is not None and since <= heartbeat <= until
            # Rows read again within the slack, and the heartbeats of the
            # full read, mostly change nothing the filters see: compare
            # before building anything. (A cached last_seen_up is the one
            # of the row's last change; ``alive`` is what counts.)
            old = cached_get(row.host)
            if old is not None and old.alive == alive and \
                    old[:6] == tuple(row[:6]):
                continue
            service = service_info(row, alive)
            kept[service.host] = service
            if not alive:
                down.add(service.host)
        changes.services_gone = gone
        changes.services_count = count
        changes.services_changed = kept
        changes.services_down = down
        changes.services_compared = True

    def _cache_service(self, host, service):
        """Cache the host's ServiceInfo (None: forget it), keeping the
        set of dead hosts, which each refresh reads again."""
        if service is None:
            self._services.pop(host, None)
            self._dead_hosts.discard(host)
            return
        self._services[host] = service
        if service.alive:
            self._dead_hosts.discard(host)
        else:
            self._dead_hosts.add(host)

    def _set_aggregates(self, aggregates):
        self._aggregates = tuple(aggregates)
        self._aggregates_by_host = aggregates_by_host(self._aggregates)

    # -- aggregate fanouts ----------------------------------------------------

    def update_aggregates(self, aggregates):
        """Apply the new state of ``aggregates`` (db Aggregate tuples,
        created or changed) to the cache now."""
        with self._lock:
            by_id = {agg.id: agg for agg in self._aggregates}
            hosts = set()
            for aggregate in aggregates:
                old = by_id.get(aggregate.id)
                if old is not None:
                    hosts |= old.hosts
                hosts |= aggregate.hosts
                by_id[aggregate.id] = aggregate
            self._replace_aggregates(
                [by_id[agg_id] for agg_id in sorted(by_id)], hosts)
        LOG.debug('Applied the new state of aggregate(s) %s',
                  ', '.join(agg.name for agg in aggregates))

    def delete_aggregate(self, aggregate):
        """Forget ``aggregate`` (a db Aggregate tuple) now."""
        with self._lock:
            hosts = set(aggregate.hosts)
            for old in self._aggregates:
                if old.id == aggregate.id:
                    hosts |= old.hosts
            self._replace_aggregates(
                [agg for agg in self._aggregates if agg.id != aggregate.id],
                hosts)
        LOG.debug('Forgot deleted aggregate %s', aggregate.name)

    def _replace_aggregates(self, aggregates, hosts):
        """Called with the lock held: new aggregates, and new zones and
        aggregates for the HostStates of ``hosts``."""
        self._set_aggregates(aggregates)
        self._aggregate_seq += 1
        # The fingerprint no longer describes what the cache holds: the
        # next refresh reads the aggregates from SQL again.
        self._aggregates_fingerprint = None
        self.stats['aggregate_updates'] += 1
        table = self._table
        if table is None:
            return
        states = list(table.states)
        ratios = refresh_changes.default_ratios()
        for host in hosts:
            for row in table.rows_by_host.get(host, ()):
                states[row] = self._restated(states[row], ratios)
        self._table = host_table.HostTable.build_by_zone(
            states, self._aggregates)
        self.stats['full_builds'] += 1


    def _make_state(self, row, ratios, extras=None, service=_LOOK_UP):
        """A HostState from a node row just read (``ratios``: see
        :func:`refresh_changes.default_ratios`, which also holds the
        default zone; ``extras``: the node_extras.Extras read with it,
        None: none; ``service``: the host's cached ServiceInfo or None,
        if the caller found it)."""
        # The host's name is its service's (interned, see
        # host_state.service_info): one string per host, found without a
        # look-up in the interpreter's table of every interned name (a
        # random read of a table of a million names at a cold start).
        if service is _LOOK_UP:
            service = self._services.get(row.host)
        host = (service.host if service is not None
                else sys.intern(row.host))
        cell_uuid, cell_name = None, host_state.DEFAULT_CELL_NAME
        if row.id > cell_gather.NODE_MASK:
            cell = self._cells.cell_of(row.id)
            cell_uuid, cell_name = cell.uuid, cell.label()
        state = host_state.HostState.from_node(
            row, service, self._aggregates_by_host.get(host, ()), ratios,
            ratios[refresh_changes.DEFAULT_AZ], cell_uuid, cell_name,
            host=host)
        state.instances = self._instances_of(host)
        if extras is not None:
            state.inventories, state.traits = extras.of(row.id)
        return state

    def _restated(self, state, ratios):
        """``state`` with its host's current service, aggregates,
        instances and ratio defaults."""
        return state.restated(
            self._services.get(state.host),
            self._aggregates_by_host.get(state.host, ()), ratios,
            ratios[refresh_changes.DEFAULT_AZ], self._instances_of(state.host))

    def _first_build(self, changes):
        """The first table, from every node row (``changes.nodes``, an
        iterator ordered by id), one HostState per row as it comes;
        ``changes.nodes`` becomes the count read."""
        ratios = refresh_changes.default_ratios()
        self._generations = {}
        self._learned_at = {}
        states = []
        services = _InReadOrder(self._services)
        for row in changes.nodes:
            self._generations[row.id] = row.generation
            states.append(self._make_state(row, ratios, changes.extras,
                                           services.of(row.host)))
        changes.nodes = states
        self._table = host_table.HostTable.build_by_zone(
            states, self._aggregates)
        self.stats['full_builds'] += 1

    def _rebuilt_states(self, fresh, keep_ids, ratios, extras):
        """``(states, positions)``: the states of a new table over every
        known node, from ``fresh`` rows where given, else the old
        table's state; and the positions of those of them to restate
        (all but ``keep_ids``, raced by a claim, which are kept as they
        are), for :meth:`_swap_in_built` to restate off the lock."""
        old = self._table
        states, restate = [], []
        for node_id in sorted(self._generations):
            row = fresh.get(node_id)
            if row is not None:
                states.append(self._make_state(row, ratios, extras))
                continue
            if node_id not in keep_ids:
                restate.append(len(states))
            states.append(old.states[old.row_by_id[node_id]])
        return states, restate

    # -- a new table, built off the lock and swapped in -------------------

    def _defer_build(self, states, restate=()):
        """Called with the lock held: the table over ``states`` is to be
        built once the lock is released (:meth:`_swap_in_built`), the
        states at the positions ``restate`` restated first (with the
        services, aggregates and instances the cache holds then), while
        requests go on with the current one and claims take the lock;
        what is put in the current table meanwhile is kept
        (``_captured``) and put in the new one before it is swapped in."""
        self._pending = (self._table, states, self._aggregates, restate)
        self._captured = {}

    def _restate_off_lock(self, states, positions, ratios):
        """Restate ``states`` at ``positions`` in place; called by
        :meth:`_swap_in_built` without the lock (a state put meanwhile
        is captured, and put in restated once the lock is taken)."""
        for position in positions:
            states[position] = self._restated(states[position], ratios)

    def _swap_in_built(self):
        """Restate the states and build the table :meth:`_defer_build`
        asked for (without the lock: a copy of each state whose service
        changed, NumPy columns and indexes over every host, the values
        requests computed from every HostState of the table in use),
        then, under the lock, put in it the states written in the current
        table since (claims, instances, nodes read again) and make it the
        current table, whole; return it (None: nothing was pending). A table
        replaced meanwhile (aggregates, a state that changed identity)
        has its states restated with what the cache holds now, under
        the lock (rare: a fanout within a build's few hundred ms)."""
        pending = self._pending
        if pending is None:
            return None
        base, states, aggregates, restate = pending
        ratios = refresh_changes.default_ratios()
        try:
            self._restate_off_lock(states, restate, ratios)
            table = host_table.HostTable.build_by_zone(states, aggregates)
            # What requests computed from every HostState of the table
            # in use, computed here too rather than by the first request
            # this one serves.
            table.warm_like(self._table)
        except BaseException:
            with self._lock:
                self._pending = self._captured = None
                # The generations say rows are held that no table
                # holds: the next refresh reads every node again.
                self._generations = dict.fromkeys(self._generations, -1)
                self._last_full_read = 0.0
            raise
        with self._lock:
            self._pending = None
            captured, self._captured = self._captured, None
            if self._table is not base or self._aggregates is not \
                    aggregates:
                table = host_table.HostTable.build_by_zone(
                    [self._restated(state, ratios) for state in states],
                    self._aggregates)
            # A state put meanwhile (a claim's reservation, instances)
            # was made from the old table's: it takes the service,
            # aggregates and instances the cache holds now (this full
            # read's), not those it was made with.
            puts = {table.row_by_id[node_id]: self._restated(state, ratios)
                    for node_id, state in captured.items()
                    if node_id in table.row_by_id}
            if puts and not table.update_in_place(puts):
                table = table.replace(puts)
            self._table = table
            self.stats['full_builds'] += 1
            return table
