"""The scheduler driver contract, and the claim helpers drivers share.

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
import threading

from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import models
from scheduler import exception
from scheduler.db import services as db_services
from scheduler import host_manager as host_manager_mod
from scheduler.objects import selection as selection_obj

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class _Refused(Exception):
    """Rolls a claim's transaction back (its release included)."""

    def __init__(self, outcome):
        super().__init__(str(outcome))
        self.outcome = outcome


# An instance in one of these vm_states with no task under way is settled:
# no operation is scheduling it, so a claim for it can only come from a
# stale copy of an earlier request (a scheduler that took the message just
# before it expired and answered after the conductor had asked again).
SETTLED_VM_STATES = ('active', 'error', 'resized', 'shelved',
                     'shelved_offloaded', 'deleted')
_INSTANCE = models.Instance.__table__


def _refusal(session, consumer_uuid):
    """Why a scheduler must not claim for this instance now, or None.

    A settled instance (see SETTLED_VM_STATES) is not being scheduled; a
    building one that the conductor already placed (``spawning`` on a host,
    holding the claim of that placement) was answered already: a copy of
    its request that the broker delivered twice must not move the claim
    from under the build. An instance Gantt does not know is not refused.
    """
    row = session.execute(
        sa.select(_INSTANCE.c.vm_state, _INSTANCE.c.task_state,
                  _INSTANCE.c.host)
        .where(_INSTANCE.c.uuid == consumer_uuid)).first()
    if row is None:
        return None
    if row.task_state is None and row.vm_state in SETTLED_VM_STATES:
        return '%s with no task under way' % row.vm_state
    if (row.vm_state, row.task_state) == ('building', 'spawning') and \
            row.host is not None and claims.get_allocations(session,
                                                            consumer_uuid):
        return 'placed on %s already, holding its claim' % row.host
    return None


@db_api.retry_on_db_error
def claim_in_sql(node_id, consumer_uuid, resources, group_uuid=None,
                 host=None, refuse_settled=False):
    """One claim in its own transaction: True if the node had room, else
    False, or a :class:`scheduler.db.claims.GroupConflict` (which is
    false too) when ``group_uuid``'s hard policy forbids ``host``.

    A consumer that already holds allocations gives them back first, in the
    same transaction, as Placement replaces a consumer's allocations: the
    conductor asks again when a scheduler stopped or died after claiming
    but before answering, and the earlier answer is void. A claim that
    fails writes nothing: the earlier allocations stay. (Move operations
    keep the source's allocation under a migration's own consumer UUID.)

    With ``group_uuid`` the group's row is locked and its policy checked
    in the same transaction (:func:`claims.check_group_policy`), so that
    members of one group claimed in parallel by several schedulers or
    conductors cannot break it.

    With ``refuse_settled`` (the scheduler's claims) an instance that is
    settled (:data:`SETTLED_VM_STATES`, no task), or already placed by
    the conductor (see :func:`_refusal`), gets InvalidRequest and nothing
    is written.
    """
    try:
        with db_api.writer() as session:
            if refuse_settled:
                why = _refusal(session, consumer_uuid)
                if why is not None:
                    raise exception.InvalidRequest(
                        reason='instance %s is %s; refusing to claim for it '
                               '(a stale copy of an earlier request?)'
                        % (consumer_uuid, why))
            if group_uuid is not None:
                conflict = claims.check_group_policy(
                    session, group_uuid, consumer_uuid, host)
                if conflict is not None:
                    raise _Refused(conflict)
            released = claims.release_resources(session, consumer_uuid)
            if not claims.claim_resources(session, node_id, consumer_uuid,
                                          resources):
                raise _Refused(False)
    except _Refused as refused:
        return refused.outcome
    if released:
        # An evacuation or unshelve from SHELVED leaves the old claim by
        # design; a build's earlier copy of this request by accident.
        LOG.info('The claim for %s replaced its earlier allocations on '
                 'node(s) %s', consumer_uuid,
                 ', '.join(str(node) for node, _ in released))
    return True


def hard_group_uuid(spec):
    """The UUID of the spec's server group if its policy is enforced at
    claim time (affinity, anti-affinity), else None."""
    group = spec.obj_get('instance_group') if spec is not None else None
    if group is None or group.obj_get('policy') not in claims.HARD_POLICIES:
        return None
    return group.uuid


@db_api.retry_on_db_error
def release_in_sql(consumer_node_pairs):
    """Release ``[(consumer_uuid, node_id)]`` in one transaction."""
    with db_api.writer() as session:
        for consumer_uuid, node_id in consumer_node_pairs:
            claims.release_resources(session, consumer_uuid, node_id)


def make_selection(host_state, resources, claimed):
    return selection_obj.Selection.for_host(host_state, resources, claimed,
                                            limits=host_state.limits)


class Scheduler(metaclass=abc.ABCMeta):
    """Base class of scheduler drivers."""

    def __init__(self, host_manager=None):
        self.host_manager = (host_manager if host_manager is not None
                             else self._create_host_manager())
        self._stats_lock = threading.Lock()
        self.stats = {'requests': 0, 'instances': 0, 'claims': 0,
                      'claim_retries': 0, 'group_conflicts': 0,
                      'claims_released': 0,
                      'no_valid_host': 0}
        self.last_timings = {'filter_weigh': 0.0, 'claim': 0.0}

    def _create_host_manager(self):
        return host_manager_mod.HostManager()

    def count(self, name, amount=1):
        with self._stats_lock:
            self.stats[name] = self.stats.get(name, 0) + amount

    def start(self):
        """Load the host cache now rather than on the first request."""
        self.host_manager.start()

    def stop(self):
        """Stop background work (the host cache refresh)."""
        self.host_manager.stop()

    def reload_plugins(self):
        """Re-read mutable plugin options; True if they were applied."""
        return True

    def run_periodic_tasks(self, context):
        """Called by the manager every ``periodic_task_interval``."""

    def hosts_up(self, context):
        """Sorted names of the hosts whose compute service is up (SQL)."""
        with db_api.reader() as session:
            rows = db_services.list_services(
                session, binary=host_manager_mod.COMPUTE_BINARY)
        return sorted(row.host for row in rows if db_services.is_up(row))

    @abc.abstractmethod
    def select_destinations(self, context, spec, instance_uuids=None,
                            return_alternates=False):
        """``[[claimed Selection, alternates...], ...]``, one per instance.

        :param spec: a RequestSpec.
        :param instance_uuids: the consumers to claim for; None or empty
            selects hosts for ``spec.num_instances`` without claiming.
        :param return_alternates: add up to ``[scheduler] max_attempts -
            1`` unclaimed alternates after each claimed host.
        :raises: NoValidHost, InvalidRequest
        """

    # -- claims ---------------------------------------------------------------

    def claim(self, host_state, consumer_uuid, resources,
              instance_info=None, group_uuid=None):
        """Claim in SQL; on success update the host cache at once: the
        resources are taken and the instance (``instance_info``, a
        :class:`scheduler.host_instances.InstanceInfo`) is on the host.

        With ``group_uuid`` (see :func:`hard_group_uuid`) the server
        group's policy is checked in the claim's transaction.

        Returns True, or a false value: False on a lost race (the node
        filled up behind the cache's back; its cached row is re-read), a
        GroupConflict when a member of the group claimed meanwhile where
        the policy forbids this one. Either way ``stats['claim_retries']``
        grows and the caller tries its next host.
        """
        try:
            won = claim_in_sql(host_state.id, consumer_uuid, resources,
                               group_uuid, host_state.host,
                               refuse_settled=True)
        except db_exc.DBDuplicateEntry:
            LOG.warning('Instance %(uuid)s already holds an allocation on '
                        'node %(node)s; not claiming there again',
                        {'uuid': consumer_uuid, 'node': host_state.uuid})
            won = False
        if won:
            self.count('claims')
            self.host_manager.consume(host_state.id, resources,
                                      consumer_uuid, instance_info)
            return True
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
        self.host_manager.refresh_nodes([host_state.id])
        return False

    def release(self, claimed):
        """Undo the claims ``[(consumer_uuid, node_id)]`` of a request."""
        if not claimed:
            return
        LOG.info('Releasing %d claim(s) of a request that could not be '
                 'placed entirely', len(claimed))
        release_in_sql(claimed)
        self.count('claims_released', len(claimed))
        self.host_manager.forget_instances(claimed)
        self.host_manager.refresh_nodes({node for _uuid, node in claimed})
