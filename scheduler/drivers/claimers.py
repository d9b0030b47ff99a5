"""Where a driver's claims are written: the seam between the two modes.

:meth:`Scheduler.claim <scheduler.drivers.base.Scheduler.claim>` reserves
in the host cache, asks its claimer, and settles the reservation; what the
claimer writes is the only thing the modes do differently. The claimer is
chosen once, when the driver is built, from ``[scheduler] backend``::

    claimer = claimers.for_backend(driver)
    won = claimer.claim(host_state, consumer_uuid, resources, report,
                        group_uuid=..., hardware=..., extra=...,
                        owner=(project_id, user_id))
    claimer.release([(consumer_uuid, cache_id), ...])

* :class:`SqlClaimer` (``gantt``): one conditional write in the node's
  cell database (:func:`scheduler.db.claims.claim_in_sql`), which also
  checks a hard server-group policy and takes NUMA cells, pinned CPUs,
  pages and PCI devices; ``report['generation']`` is the node's
  generation after a won claim.
* :class:`PlacementClaimer` (``nova``): ``PUT /allocations/{consumer}``
  in Placement as Nova 34's scheduler writes it
  (:mod:`scheduler.nova.placement_claims`), on the node's root provider
  (the compute node's uuid), for the flavor's classes and the placement
  stage's others. As Nova's scheduler, it checks no group policy (Nova's
  computes check it late) and takes no NUMA cell or device (the compute's
  resource tracker does). ``report['generation']`` is the root
  provider's generation after a won claim, which the host cache's
  Nova-mode mirror holds as the node's generation: when it is the one
  after the generation the cached row was read at, the cached row (that
  read plus the reservation) is what Placement holds, and the host cache
  keeps it rather than re-read a mirror that has not caught up. Nothing
  is ever claimed in SQL: the mirror is read only.

A claim that wins returns True; one refused for room returns False; a
claimer raises when the truth of usage could not be asked (the database,
Placement unreachable), after writing nothing.
"""

import collections
import threading

from oslo_db import exception as db_exc
from oslo_log import log as logging

from scheduler import cells
from scheduler import conf
from scheduler.conf import cached
from scheduler.db import claims
from scheduler.drivers import group_commit
from scheduler import host_cache
from scheduler.nova import allocations
from scheduler.nova import placement_claims
from scheduler.nova import placement_client

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The moves (a consumer that held allocations before its claim) whose
# destination a release gives back, remembered for this many consumers.
MOVES_REMEMBERED = 1024


def for_backend(driver):
    """The claimer ``[scheduler] backend`` asks for, for ``driver``."""
    if cached.group('scheduler').backend == 'nova':
        return PlacementClaimer(driver.host_manager)
    return SqlClaimer(driver)


class SqlClaimer:
    """Claims in Gantt's own database, each in its node's cell."""

    def __init__(self, driver):
        self._driver = driver
        # {cell uuid: GroupCommit} of the driver's claim slots.
        self._groups = {}
        self._groups_lock = threading.Lock()

    def claim(self, host_state, consumer_uuid, resources, report,
              group_uuid=None, hardware=None, extra=None, owner=None):
        """True, False (no room, or the consumer already there), or a
        :class:`claims.GroupConflict`."""
        host_manager = self._driver.host_manager
        try:
            cell = host_manager.cell_of(host_state.id)
            slots = self._driver._claim_slots[cell.uuid]
            with cells.target(cell):
                group = self._group(cell.uuid, slots)
                if group is not None and group_uuid is None and \
                        hardware is None and not extra:
                    # The group commit takes a slot when it sends; the
                    # full path (if the claim takes it) a pooled
                    # connection.
                    return claims.claim_in_sql(
                        host_cache.node_id(host_state.id), consumer_uuid,
                        resources, group_uuid, host_state.host,
                        refuse_settled=True, report=report, batch=group)
                with slots.slot() as kept:
                    return claims.claim_in_sql(
                        host_cache.node_id(host_state.id), consumer_uuid,
                        resources, group_uuid, host_state.host,
                        refuse_settled=True, hardware=hardware,
                        report=report, kept=kept, extra=extra)
        except db_exc.DBDuplicateEntry:
            LOG.warning('Instance %(uuid)s already holds an allocation on '
                        'node %(node)s; not claiming there again',
                        {'uuid': consumer_uuid, 'node': host_state.uuid})
            return False

    def _group(self, cell_uuid, slots):
        """The cell's GroupCommit over ``slots`` (the driver's current
        ones), or None when claims there are not grouped
        (``[filter_scheduler] claim_group_commit``, the database's
        driver). Within the cell's target."""
        if not (cached.group('filter_scheduler').claim_group_commit
                and group_commit.supported()):
            return None
        with self._groups_lock:
            group = self._groups.get(cell_uuid)
            if group is None or not group.uses(slots):
                group = self._groups[cell_uuid] = \
                    group_commit.GroupCommit(slots,
                                             count=self._driver.count)
            return group

    def group_stats(self):
        """``{counter: value}`` of the group commits, summed over cells
        (``batches``, ``claims``, ``batched``, ``batches_failed``)."""
        total = collections.Counter()
        with self._groups_lock:
            for group in self._groups.values():
                total.update(group.stats)
        return dict(total)

    def release(self, claimed):
        """Remove the claims ``[(consumer_uuid, cache id)]``."""
        host_manager = self._driver.host_manager
        by_cell = {}
        for consumer_uuid, cache_id in claimed:
            by_cell.setdefault(host_manager.cell_of(cache_id), []).append(
                (consumer_uuid, host_cache.node_id(cache_id)))
        for cell, pairs in by_cell.items():
            with cells.target(cell):
                claims.release_in_sql(pairs)


class PlacementClaimer:
    """Claims in Placement, as Nova's scheduler makes them.

    ``client``: a :class:`placement_client.PlacementClient`; by default
    the one ``[placement]`` describes, built on the first claim.
    ``backoff``: the pause before a claim's next attempt after a provider
    generation conflict (Nova's by default).
    """

    def __init__(self, host_manager, client=None,
                 backoff=placement_claims.nova_backoff):
        self._host_manager = host_manager
        self._client = client
        self._client_lock = threading.Lock()
        self._backoff = backoff
        # {consumer uuid: providers its claim added to what it held}.
        self._moves = collections.OrderedDict()
        self._moves_lock = threading.Lock()

    @property
    def client(self):
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = placement_client.PlacementClient.from_conf(
                        CONF)
        return self._client

    def claim(self, host_state, consumer_uuid, resources, report,
              group_uuid=None, hardware=None, extra=None, owner=None):
        """True or False; ``group_uuid`` and ``hardware`` are not
        Placement's to check or take (see the module's docstring).

        :raises PlacementUnreachable: nothing was claimed.
        :raises ConsumerConflict: the consumer changed while claimed.
        """
        project_id, user_id = owner or (None, None)
        request = allocations.allocation_request(host_state.uuid, resources,
                                                 extra)
        claimed = {}
        won = placement_claims.claim(
            self.client, consumer_uuid, request, project_id, user_id,
            report=claimed, backoff=self._backoff)
        if not won:
            return False
        held = claimed.get('merged_with')
        if held:
            self._remember_move(consumer_uuid, [
                uuid for uuid in request['allocations'] if uuid not in held])
        try:
            report['generation'] = placement_claims.provider_generation(
                self.client, host_state.uuid)
        except placement_client.PlacementUnreachable as error:
            # The claim stands; the host cache reads the node again.
            LOG.warning('Claimed for %(uuid)s on %(node)s but could not read '
                        'its generation: %(error)s',
                        {'uuid': consumer_uuid, 'node': host_state.uuid,
                         'error': error})
        return True

    def _remember_move(self, consumer_uuid, added):
        with self._moves_lock:
            self._moves[consumer_uuid] = added
            while len(self._moves) > MOVES_REMEMBERED:
                self._moves.popitem(last=False)

    def release(self, claimed):
        """Remove the claims ``[(consumer_uuid, cache id)]``: all of a
        consumer's allocations (Nova's forced DELETE), or, for a move,
        what its claim added (the source's stay).

        :raises ReleaseFailed: Placement refused some (the others are
            released); a Placement that cannot be reached is logged.
        """
        plain = []
        for consumer_uuid, _cache_id in claimed:
            with self._moves_lock:
                added = self._moves.pop(consumer_uuid, None)
            if added is None:
                plain.append(consumer_uuid)
                continue
            try:
                placement_claims.give_back(self.client, consumer_uuid, added,
                                           backoff=self._backoff)
            except placement_client.PlacementUnreachable as error:
                LOG.error('Destination of the move of %(uuid)s not given '
                          'back: %(error)s',
                          {'uuid': consumer_uuid, 'error': error})
        placement_claims.release(self.client, plain)
