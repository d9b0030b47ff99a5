"""The scheduler driver contract.

Claims go through the driver's claimer (:mod:`scheduler.drivers.claimers`,
chosen by ``[scheduler] backend``): in Gantt's own mode
:func:`scheduler.db.claims.claim_in_sql`, which the conductor's tasks call
too, in the database of the node's cell (with cells, the host cache's ids
are not the nodes' own: see :mod:`scheduler.host_cache.cell_gather`); in
Nova mode Placement's ``PUT /allocations``.

The RPC manager builds one driver per process from the ``[scheduler]
driver`` entry point and calls it::

    driver = loadables.load_driver(CONF.scheduler.driver)()
    driver.start()                      # optional: warm the host cache
    selections = driver.select_destinations(ctxt, spec, [uuid1, uuid2],
                                            return_alternates=True)
    driver.run_periodic_tasks(ctxt)     # every periodic_task_interval
    driver.reload_plugins()             # on SIGHUP
    driver.stop()

``select_destinations`` returns one list per instance: the claimed
:class:`scheduler.objects.selection.Selection` first, then alternates.
It raises :class:`scheduler.exception.NoValidHost` when an instance
cannot be placed, after releasing what it claimed for the request.

``stats`` counts what the driver did (requests, claims, lost claim races,
NoValidHost answers); ``last_timings`` holds the seconds the last request
spent filtering and weighing, and claiming.
"""

import abc
import collections
import contextlib
import queue
import threading

from oslo_config import cfg
from oslo_log import log as logging

from scheduler import conf
from scheduler.drivers import claimers
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import services as db_services
from scheduler import exception
from scheduler import host_cache
from scheduler import loadables
from scheduler.objects import selection as selection_obj
from scheduler import prometheus

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def claim_slots():
    """How many SQL claims of one process may run at once in one
    database: ``[database] max_pool_size`` less the connection left to
    the host cache's refresh and the other readers; None (no bound) when
    the pool has no size limit (0).

    Concurrent requests beyond the pool's size would each take an
    overflow connection, which the pool closes when it is given back:
    under load, a new server session (and the claim statement prepared
    again) for several claims in a hundred.
    """
    size = CONF.database.max_pool_size
    if not size:
        return None
    return max(1, size - 1)


class ClaimSlots:
    """The SQL claims of one process in one database: at most ``size``
    at once (None: no bound), each slot keeping the connection its claims
    run on (a :class:`scheduler.db.api.KeptConnection`) from one claim to
    the next. The most recently used slot is taken first, so a process
    keeps as many connections as it ran claims at once, up to ``size``.
    """

    def __init__(self, size):
        self._free = None
        self._closed = False
        if size:
            self._free = queue.LifoQueue()
            for _ in range(size):
                self._free.put(db_api.KeptConnection())

    @contextlib.contextmanager
    def slot(self):
        """Wait for a free slot; yield its KeptConnection (None without
        a bound: the claim takes a pooled connection)."""
        if self._free is None:
            yield None
            return
        kept = self._free.get()
        try:
            yield kept
        finally:
            if self._closed:
                kept.close()
            self._free.put(kept)

    def close(self):
        """Give the kept connections back to the pool (the driver
        stops): those of free slots now, that of a claim under way when
        it ends. Claims made later still run, each on a connection taken
        and given back."""
        self._closed = True
        if self._free is None:
            return
        free = []
        while True:
            try:
                free.append(self._free.get_nowait())
            except queue.Empty:
                break
        for kept in free:
            kept.close()
            self._free.put(kept)


def consumer_owner(context, spec):
    """``(project_id, user_id)`` a claim for ``spec``'s instance is
    recorded under: the spec's, the user of ``context`` when the spec has
    none (as Nova's scheduler does for specs older than Rocky)."""
    user_id = spec.obj_get('user_id') or getattr(context, 'user_id', None)
    return spec.obj_get('project_id'), user_id


def make_selection(host_state, resources, claimed, extra=None):
    """The Selection of ``host_state`` for an instance asking
    ``resources`` (and ``extra``, ``{class: amount}`` beyond the classic
    three); its ``allocation_request`` is what a claim there takes (all
    of a baremetal node with the ironic host manager)."""
    return selection_obj.Selection.for_host(
        host_state, host_state.claim_amounts(resources), claimed,
        limits=host_state.limits, extra=extra)


class Scheduler(metaclass=abc.ABCMeta):
    """Base class of scheduler drivers."""

    def __init__(self, host_manager=None):
        self.host_manager = (host_manager if host_manager is not None
                             else self._create_host_manager())
        self._stats_lock = threading.Lock()
        # Held by a claiming request from its ranking until its host is
        # reserved (see claim's ``on_reserved``): requests of one process
        # rank one at a time, each seeing the reservations of those before
        # it, even when a reservation waits for the host cache's lock.
        self.placement_lock = threading.Lock()
        self.stats = {'requests': 0, 'instances': 0, 'claims': 0,
                      'claim_retries': 0, 'group_conflicts': 0,
                      'claims_released': 0,
                      'no_valid_host': 0}
        self.last_timings = {'filter_weigh': 0.0, 'claim': 0.0}
        # {cell: ClaimSlots}: a process's SQL claims in one database wait
        # for a pooled connection rather than open one (claim_slots), and
        # keep it from one claim to the next.
        self._claim_slots = self._new_slots()
        # Where claims are written, chosen once ([scheduler] backend).
        self.claimer = claimers.for_backend(self)

    @staticmethod
    def _new_slots():
        return collections.defaultdict(lambda: ClaimSlots(claim_slots()))

    def _create_host_manager(self, **kwargs):
        """The ``[scheduler] host_manager``, built with ``kwargs``.

        :raises ConfigError: the option's value is not one of its choices
            (PluginNotFound if nobody installed the one named).
        """
        try:
            name = CONF.scheduler.host_manager
        except cfg.ConfigFileValueError as error:
            raise exception.ConfigError(
                reason='[scheduler] host_manager: %s' % error)
        return loadables.load_host_manager(name)(**kwargs)

    def count(self, name, amount=1):
        with self._stats_lock:
            self.stats[name] = self.stats.get(name, 0) + amount
        prometheus.count(name, amount)

    def start(self):
        """Load the host cache now rather than on the first request."""
        self.host_manager.start()

    def stop(self):
        """Stop background work (the host cache refresh); give back the
        connections the claim slots keep."""
        self.host_manager.stop()
        # A driver started again (a service restarted in the process)
        # claims on new slots.
        slots, self._claim_slots = self._claim_slots, self._new_slots()
        for cell_slots in list(slots.values()):
            cell_slots.close()

    def reload_plugins(self):
        """Re-read mutable plugin options; True if they were applied."""
        return True

    def run_periodic_tasks(self, context):
        """Called by the manager every ``periodic_task_interval``."""

    def hosts_up(self, context):
        """Sorted names of the hosts whose compute service is up (SQL)."""
        with db_api.reader() as session:
            rows = db_services.list_services(
                session, binary=host_cache.COMPUTE_BINARY)
        return sorted(row.host for row in rows if db_services.is_up(row))

    @abc.abstractmethod
    def select_destinations(self, context, spec, instance_uuids=None,
                            return_alternates=False, validated=False):
        """``[[claimed Selection, alternates...], ...]``, one per instance.

        :param spec: a RequestSpec, checked with ``spec.validate()``
            unless ``validated`` (the caller just did).
        :param instance_uuids: the consumers to claim for; None or empty
            selects hosts for ``spec.num_instances`` without claiming.
        :param return_alternates: add up to ``[scheduler] max_attempts -
            1`` unclaimed alternates after each claimed host.
        :raises: NoValidHost, InvalidRequest
        """

    # -- claims ---------------------------------------------------------------

    def claim(self, host_state, consumer_uuid, resources,
              instance_info=None, group_uuid=None, on_reserved=None,
              hardware=None, extra=None, owner=None):
        """Reserve in the host cache, then claim where usage is decided
        (:attr:`claimer`: in SQL, or in Placement in Nova mode): True, or
        a false value after the reservation was rolled back.

        The reservation comes first (the assume step of Kubernetes'
        scheduler cache): a request of this process that ranks hosts
        while this claim's transaction runs sees the resources taken and
        the instance (``instance_info``, a
        :class:`scheduler.placement_types.InstanceInfo`) on the host,
        rather than the room the claim is about to take. The SQL claim
        decides; when it does not win, the node is re-read from SQL and
        the instance forgotten.

        With ``group_uuid`` (see :func:`claims.hard_group_uuid`) the
        server group's policy is checked in the claim's transaction.
        ``on_reserved`` is called once the reservation is in the cache,
        before the SQL claim. ``hardware`` (a
        :class:`scheduler.hardware.Request`): the NUMA cells, pinned CPUs,
        pages and PCI devices the claim takes too; ``extra``
        (``{resource class: amount}``): the classes beyond VCPU,
        MEMORY_MB and DISK_GB it takes, all or nothing with the rest.

        Returns True, or a false value: False on a lost race (the node
        filled up behind the cache's back), a GroupConflict when a member
        of the group claimed meanwhile where the policy forbids this one.
        Either way ``stats['claim_retries']`` grows and the caller tries
        its next host.

        The SQL claim takes what the node's state says a claim of
        ``resources`` takes (:meth:`HostState.claim_amounts`: a baremetal
        node is taken whole).

        ``owner``: ``(project_id, user_id)`` of the instance (see
        :func:`consumer_owner`), which a claim in Placement records.
        """
        resources = host_state.claim_amounts(resources)
        reserved = self.host_manager.consume(
            host_state.id, resources, consumer_uuid, instance_info,
            in_flight=True, hardware_request=hardware, extra=extra)
        if on_reserved is not None:
            on_reserved()
        report = {}
        try:
            won = self.claimer.claim(
                host_state, consumer_uuid, resources, report,
                group_uuid=group_uuid, hardware=hardware, extra=extra,
                owner=owner)
        except Exception:
            self.host_manager.settle(host_state.id, give_back=reserved)
            self._unreserve(host_state, consumer_uuid)
            raise
        self.host_manager.settle(
            host_state.id, give_back=None if won else reserved,
            generation=report.get('generation') if won is True else None)
        if won:
            self.count('claims')
            return True
        self._unreserve(host_state, consumer_uuid)
        self.count('claim_retries')
        if isinstance(won, claims.GroupConflict):
            self.count('group_conflicts')
            LOG.info('Claim for instance %(uuid)s on %(host)s refused: '
                     '%(why)s; trying the next host',
                     {'uuid': consumer_uuid, 'host': host_state,
                      'why': won})
            return won
        LOG.info('Claim of %(res)s for instance %(uuid)s on %(host)s failed: '
                 'the node no longer has room; trying the next host',
                 {'res': dict(resources._asdict()), 'uuid': consumer_uuid,
                  'host': host_state})
        return False

    def _unreserve(self, host_state, consumer_uuid):
        """Undo claim()'s reservation: forget the instance on the host and
        re-read the node from SQL. A database that is away leaves the
        row as it is until the next refresh, which re-reads it (consume
        marked it changed)."""
        self.host_manager.forget_instances([(consumer_uuid, host_state.id)])
        try:
            self.host_manager.refresh_nodes([host_state.id])
        except Exception as error:
            LOG.warning('Could not re-read node %s after a claim that did '
                        'not win (%s); the next refresh will',
                        host_state.uuid, error)

    def release(self, claimed):
        """Undo the claims ``[(consumer_uuid, cache id)]`` of a request,
        each in its node's cell."""
        if not claimed:
            return
        LOG.info('Releasing %d claim(s) of a request that could not be '
                 'placed entirely', len(claimed))
        self.claimer.release(claimed)
        self.count('claims_released', len(claimed))
        self.host_manager.forget_instances(claimed)
        self.host_manager.refresh_nodes({node for _uuid, node in claimed})
