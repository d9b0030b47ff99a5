"""Build servers: record, schedule, cast; reschedule when a build fails.

Raises nothing to its RPC caller (builds are casts): every outcome ends on
the instance, ACTIVE through the compute's report, or ERROR with a fault
saying why (NoValidHost's explanation, MaxRetriesExceeded with the hosts
tried, a scheduler that did not answer, an unknown server group).

With the ``group`` hint the instances join that server group before they
are scheduled, and the spec carries the group to the scheduler as Nova's
conductor sends it: policy, rules, every member (the new ones included)
and the hosts of the members that have one. On a reschedule, the claim of
an alternate checks the group's affinity or anti-affinity policy in its
own transaction (other members may have been placed meanwhile), where
Nova's compute made a late check that narrowed the race without closing
it.

A failed build moves to the next of the alternates the scheduler sent with
the first choice. With ``[upgrade_levels] scheduler = 1.0`` there are none
(API 1.0 has no alternates): the conductor asks the scheduler again, as
Nova's did before alternates, with the hosts tried so far in the request
(``retry``; RetryFilter keeps them out), until ``[scheduler]
max_attempts``.

Accepting a build and scheduling it are two steps. :meth:`BuildTask.accept`
validates the request and records its instances (``building``, task
``scheduling``), waiting for the database within the ``[database]`` retry
budget; only then is the request accepted. The ``schedule_and_build_instances``
call (compute_task API 1.2) answers the caller at that point and schedules
in the background; the ``build_instances`` cast (1.0) schedules in the
handler. A request that cannot be recorded is refused with the reason:
to the caller of the call, in the log for a cast. Accepting is idempotent:
the same instances with the same request, asked again (a client whose
call timed out), are accepted once and scheduled once.

Example::

    task = build.BuildTask(scheduler_api, compute_api)
    if task.accept([uuid], spec):      # False: accepted earlier
        task.schedule(ctxt, [uuid], spec)
"""

from concurrent import futures
import json
import threading

from oslo_db import exception as db_exc
import oslo_messaging as messaging
from oslo_log import log as logging

from conductor.tasks import common
from scheduler import cells
from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instance_groups as db_groups
from scheduler.db import instances as db_instances
from scheduler import exception
from scheduler import hardware
from scheduler.notifications import compute_task as compute_task_notes
from scheduler.notifications import server_group as group_notes
from scheduler.objects import request_spec as request_spec_obj
from scheduler.objects import selection as selection_obj
from scheduler import prometheus

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# What _take_placement answers when the instance lost the chosen claim:
# to a duplicate of its request (it holds a claim elsewhere), or with the
# last commits of a database that crashed (it holds none: see
# ``[filter_scheduler] build_claim_flush``).
SUPERSEDED = 'superseded'
LOST = 'lost'

# Threads scheduling accepted builds (oslo.messaging's default
# executor_thread_pool_size: as many as handle RPC requests).
DEFAULT_WORKERS = 64


def error_text(error):
    """The message of ``error`` without a remote traceback.

    oslo.messaging appends the scheduler's traceback to the text of an
    exception it re-raises here; the message itself is what an operator
    reads on the instance (``fault``) and in the log.
    """
    message = getattr(error, 'message', None)
    if isinstance(message, str) and message:
        return message
    return str(error).split('\nTraceback (most recent call last):', 1)[0]


def spec_for_instances(request_spec, instance_uuids):
    """The spec to ask the scheduler with for ``instance_uuids``: the
    request's own, or, for fewer instances than it was made for (a
    super-conductor resuming those of a request that did not land), a
    copy saying how many."""
    if request_spec.num_instances == len(instance_uuids):
        return request_spec
    spec = request_spec.obj_clone()
    spec.num_instances = len(instance_uuids)
    return spec


def join_group(instance_uuids, request_spec):
    """Make the instances members of the ``group`` hint's server group
    and set ``request_spec.instance_group``; the group, or None without
    the hint.

    :raises: InstanceGroupNotFound, InvalidRequest (several groups)
    """
    return load_group(request_spec, joining=instance_uuids)


def load_group(request_spec, joining=()):
    """Set ``request_spec.instance_group`` from the ``group`` hint, as
    Nova's conductor sends it: policy, rules, every member (``joining``
    added as members first) and the hosts of the members that have one.
    Without ``joining`` nothing is written. The group, or None without
    the hint.

    :raises: InstanceGroupNotFound, InvalidRequest (several groups)
    """
    hint = request_spec.get_scheduler_hint('group')
    if not hint:
        return None
    if isinstance(hint, list):
        raise exception.InvalidRequest(
            reason='the group hint names one server group, not %d'
            % len(hint))
    # The group in the API database ([database] in one cell), the
    # members' hosts in their cells.
    with (db_api.api_writer() if joining else db_api.api_reader()) \
            as session:
        group = db_groups.get(session, hint)
        if joining:
            db_groups.add_members(session, group.id, joining)
            group = db_groups.get(session, group.uuid)
    hosts = db_groups.find_member_hosts(group.members)
    request_spec.instance_group = request_spec_obj.InstanceGroup(
        uuid=group.uuid, name=group.name, policy=group.policy,
        rules={key: str(value) for key, value in group.rules.items()},
        members=list(group.members), hosts=sorted(set(hosts.values())))
    return group


class BuildTask:
    def __init__(self, scheduler_api, compute_api, workers=None):
        self.scheduler_api = scheduler_api
        self.compute_api = compute_api
        # Schedules accepted requests in the background (API 1.2); as
        # many threads as the RPC server's own pool by default.
        self._workers = workers
        self._executor = None
        self._executor_lock = threading.Lock()

    def stop(self):
        """Let the builds accepted so far finish scheduling."""
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def build(self, ctxt, instance_uuids, request_spec):
        """First build of ``instance_uuids`` (all of one request), as the
        ``build_instances`` cast asks: accept, then schedule here."""
        try:
            accepted = self.accept(instance_uuids, request_spec)
        except (exception.InvalidRequest,
                exception.DatabaseUnavailable) as error:
            LOG.error('Refused build of %s: %s', instance_uuids, error)
            return
        if accepted:
            self.schedule(ctxt, instance_uuids, request_spec)

    def accept(self, instance_uuids, request_spec):
        """Validate the request and record its instances; True if they
        were recorded now, False if this same request was accepted
        before (nothing to do).

        :raises: InvalidRequest (a bad request, or instances that exist
            for another request), DatabaseUnavailable (the database was
            away for longer than the retry budget)
        """
        request_spec.validate()
        try:
            return _record(instance_uuids, request_spec)
        except db_exc.DBError as error:
            raise exception.DatabaseUnavailable(
                url=config.redact_database_url(CONF.database.connection),
                reason=db_api.describe_error(error))

    def schedule_later(self, ctxt, instance_uuids, request_spec):
        """Schedule accepted instances in the background."""
        self._in_background(self._schedule_logged, ctxt, instance_uuids,
                            request_spec)

    def in_background(self, func, *args):
        """Run ``func(*args)`` in the pool of build threads; what it
        raises is logged."""
        self._in_background(_logged, func, *args)

    def _in_background(self, func, *args):
        """Run ``func(*args)`` in the pool of build threads."""
        with self._executor_lock:
            if self._executor is None:
                self._executor = futures.ThreadPoolExecutor(
                    max_workers=self._workers or DEFAULT_WORKERS,
                    thread_name_prefix='build')
            self._executor.submit(func, *args)

    def _schedule_logged(self, ctxt, instance_uuids, request_spec):
        try:
            self.schedule(ctxt, instance_uuids, request_spec)
        except Exception:
            # The reaper ends what is left building, with a fault.
            LOG.exception('Scheduling %s failed', instance_uuids)

    def schedule(self, ctxt, instance_uuids, request_spec):
        """Join the server group, ask the scheduler, cast the builds;
        every outcome ends on the instances."""
        try:
            group = db_api.retry_on_api_db_error(join_group)(
                instance_uuids, request_spec)
        except (db_groups.InstanceGroupNotFound,
                exception.InvalidRequest) as error:
            LOG.warning('Build of %s refused: %s', instance_uuids, error)
            self._fail_all(instance_uuids, request_spec,
                           error_text(error))
            prometheus.build_ended('refused', len(instance_uuids))
            return
        except Exception as error:
            # Not left BUILDING until the reaper's timeout: say why now.
            LOG.exception('Joining the server group of %s failed',
                          instance_uuids)
            self._fail_all(instance_uuids, request_spec,
                           'Joining the server group failed: %s'
                           % error_text(error))
            prometheus.build_ended('failed', len(instance_uuids))
            return
        if group is not None:
            group_notes.group_action(ctxt, 'add_member', group,
                                     'gantt-conductor')
        try:
            selections = self.scheduler_api.select_destinations(
                ctxt, spec_for_instances(request_spec, instance_uuids),
                instance_uuids, return_objects=True, return_alternates=True)
        except exception.NoValidHost as error:
            LOG.warning('No valid host for %s: %s', instance_uuids,
                        error_text(error))
            self._fail_all(instance_uuids, request_spec, error)
            prometheus.build_ended('no_valid_host', len(instance_uuids))
            return
        except messaging.MessagingTimeout:
            LOG.error('The scheduler did not answer for %s', instance_uuids)
            self._fail_all(instance_uuids, request_spec,
                           'The scheduler did not answer in time.')
            prometheus.build_ended('failed', len(instance_uuids))
            return
        except Exception as error:
            LOG.exception('Scheduling %s failed', instance_uuids)
            self._fail_all(instance_uuids, request_spec,
                           'Scheduling failed: %s' % error_text(error))
            prometheus.build_ended('failed', len(instance_uuids))
            return
        prometheus.build_ended('scheduled', len(instance_uuids))
        for uuid, alternates in zip(instance_uuids, selections):
            self._send_to(ctxt, uuid, request_spec, alternates[0],
                          alternates[1:])

    def reschedule(self, ctxt, instance_uuid, request_spec, host_list,
                   failure):
        """A compute failed to build: release its claim, try an alternate.

        The hosts tried so far travel in ``request_spec.retry``, so the
        final error names every one of them. A scheduler client capped
        at API 1.0 (``[upgrade_levels] scheduler``) gets no alternates;
        then the scheduler is asked again, as Nova did before alternates
        (:meth:`_reschedule_legacy`).
        """
        failed_host = failure.get('host')
        failed_node = failure.get('node')
        reason = failure.get('reason') or 'unknown error'
        LOG.warning('Build of %s failed on %s/%s: %s', instance_uuid,
                    failed_host, failed_node, reason)
        prometheus.rescheduled()
        self._release_failed_claim(instance_uuid, failed_host, failed_node)
        retry = self._record_attempt(request_spec, failed_host, failed_node)
        remaining = list(host_list or [])
        if not remaining and \
                not self.scheduler_api.client.can_send_version('1.1'):
            self._reschedule_legacy(ctxt, instance_uuid, request_spec,
                                    retry, reason)
            return
        self._place_on_alternates(ctxt, instance_uuid, request_spec,
                                  remaining, retry, reason)

    def reschedule_lost(self, ctxt, lost):
        """A build whose message never reached its compute (see
        :func:`conductor.tasks.instance_sync.take_lost_builds`, which
        took it and released its claim there): on to the next of its
        alternates, as after a failed spawn; MaxRetriesExceeded when none
        is left."""
        try:
            request_spec = request_spec_obj.RequestSpec.obj_from_primitive(
                lost.request_spec)
            alternates = [selection_obj.Selection.obj_from_primitive(item)
                          for item in lost.alternates]
        except Exception as error:
            LOG.error('Cannot reschedule lost build %s: its records do not '
                      'load (%s)', lost.uuid, error)
            self._fail_all([lost.uuid], None, lost.reason)
            return
        if lost.tried:
            request_spec.retry = request_spec_obj.SchedulerRetries(
                num_attempts=len(lost.tried),
                hosts=[list(pair) for pair in lost.tried])
        else:
            request_spec.retry = None
        self.reschedule(ctxt, lost.uuid, request_spec, alternates,
                        {'host': lost.host, 'node': lost.node,
                         'reason': lost.reason})

    def _place_on_alternates(self, ctxt, instance_uuid, request_spec,
                             remaining, retry, reason):
        """Claim the first alternate that still fits and send the build
        there; MaxRetriesExceeded when none does."""
        remaining = list(remaining)
        while remaining:
            candidate = remaining.pop(0)
            if self._claim_alternate(instance_uuid, candidate,
                                     request_spec):
                self._send_to(ctxt, instance_uuid, request_spec, candidate,
                              remaining)
                return
        self._fail_max_retries(instance_uuid, request_spec, retry, reason)

    def _fail_max_retries(self, instance_uuid, request_spec, retry, reason):
        message = str(exception.MaxRetriesExceeded(
            reason='Exhausted all hosts available for retrying build '
                   'failures for instance %s. Hosts tried: %s. Last '
                   'error: %s' % (instance_uuid,
                                  ', '.join(host for host, _node
                                            in retry.hosts), reason)))
        self._fail_all([instance_uuid], request_spec, message)

    def _reschedule_legacy(self, ctxt, instance_uuid, request_spec, retry,
                           reason):
        """Ask the scheduler again for one instance (no alternates).

        ``retry`` (the attempts so far) goes with the request, in the
        legacy ``filter_properties['retry']`` over API 1.0, so that
        RetryFilter keeps the hosts already tried out. After
        ``[scheduler] max_attempts`` attempts the instance goes to ERROR
        with MaxRetriesExceeded.
        """
        if retry.num_attempts >= CONF.scheduler.max_attempts:
            self._fail_max_retries(instance_uuid, request_spec, retry, reason)
            return
        spec = request_spec.obj_clone()
        spec.num_instances = 1
        spec.instance_uuid = instance_uuid
        LOG.info('Asking the scheduler again for %s (attempt %d of %d; '
                 'tried %s)', instance_uuid, retry.num_attempts + 1,
                 CONF.scheduler.max_attempts,
                 ', '.join('%s/%s' % tuple(pair) for pair in retry.hosts))
        try:
            selection = self.scheduler_api.select_destinations(
                ctxt, spec, [instance_uuid], return_objects=True)[0][0]
        except exception.NoValidHost as error:
            LOG.warning('No valid host to reschedule %s: %s', instance_uuid,
                        error_text(error))
            self._fail_all([instance_uuid], request_spec, error)
            return
        except messaging.MessagingTimeout:
            LOG.error('The scheduler did not answer for %s', instance_uuid)
            self._fail_all([instance_uuid], request_spec,
                           'The scheduler did not answer in time.')
            return
        except Exception as error:
            LOG.exception('Rescheduling %s failed', instance_uuid)
            self._fail_all([instance_uuid], request_spec,
                           'Scheduling failed: %s' % error_text(error))
            return
        self._send_to(ctxt, instance_uuid, request_spec, selection, [])

    @staticmethod
    @db_api.retry_on_db_error
    def _take_placement(instance_uuid, selection, alternates=(),
                        request_spec=None):
        """Point the instance at its host if it is still building; else
        (the reaper timed it out while it was scheduled) release the claim
        just made. Whether the build goes on, or :data:`SUPERSEDED` when
        the instance no longer holds the claim of ``selection`` (a copy of
        its request that the broker delivered twice replaced it), or
        :data:`LOST` when it holds none and still builds (the database
        crashed before the claim's commit reached its disk; one that
        holds none because the reaper timed it out and released it
        stopped building: False). This commit waits for the
        database's log up to itself, the claim's commit included: once it
        returns, the claim is on disk whatever ``[filter_scheduler]
        build_claim_flush`` says.

        The ``alternates`` left and the hosts tried so far (the spec's
        ``retry``) are kept on the instance while it builds, so that a
        build whose message never reaches the compute moves on to the
        next alternate (:meth:`reschedule_lost`)."""
        with db_api.writer() as session:
            # A claim for this instance (a copy of its request) either
            # committed before this reads the allocations, or waits and
            # then finds the instance placed (claims._refusal).
            claims.lock_instance(session, instance_uuid)
            node = db_compute_nodes.get_node_by_name(
                session, selection.service_host, selection.nodename)
            held = {node_id for node_id, _amounts
                    in claims.get_allocations(session, instance_uuid)}
            how = 'released its claim on'
            if node is not None and node.id not in held:
                if held:
                    return SUPERSEDED
                if _still_building(session, instance_uuid):
                    return LOST
                # The reaper timed it out (or it is being deleted) and
                # released its claim: nothing was lost, nothing to
                # release.
                how = 'its claim was released with it, on'
            elif db_instances.update(
                    session, instance_uuid,
                    expected_vm_state=db_instances.BUILDING,
                    refused_task_state=db_instances.DELETING,
                    host=selection.service_host, node=selection.nodename,
                    task_state='spawning',
                    build_alternates=_alternates_record(alternates,
                                                        request_spec)):
                return True
            else:
                claims.release_resources(session, instance_uuid)
        LOG.warning('Instance %s stopped building while it was scheduled; '
                    '%s %s', instance_uuid, how, selection.service_host)
        return False

    @staticmethod
    def _record_attempt(request_spec, host, node):
        retry = request_spec.obj_get('retry') or \
            request_spec_obj.SchedulerRetries()
        retry.hosts = list(retry.hosts) + [[host or '', node or '']]
        retry.num_attempts = len(retry.hosts)
        request_spec.retry = retry
        return retry

    # -- helpers ------------------------------------------------------------

    def _send_to(self, ctxt, instance_uuid, request_spec, selection,
                 alternates):
        placed = self._take_placement(instance_uuid, selection, alternates,
                                      request_spec)
        if placed is SUPERSEDED or placed is LOST:
            reason = ('its claim on %s was replaced by a duplicate of its '
                      'request' if placed is SUPERSEDED else
                      'it holds no claim on %s (lost with the last '
                      'commits of a database that stopped)'
                      ) % selection.service_host
            LOG.warning('Instance %s is not sent to %s/%s: %s; trying its '
                        'alternates', instance_uuid, selection.service_host,
                        selection.nodename, reason)
            retry = self._record_attempt(request_spec,
                                         selection.service_host,
                                         selection.nodename)
            self._place_on_alternates(ctxt, instance_uuid, request_spec,
                                      alternates, retry, reason)
            return
        if not placed:
            return
        LOG.info('Instance %s goes to %s/%s', instance_uuid,
                 selection.service_host, selection.nodename)
        self._compute_for(selection).build_and_run_instance(
            ctxt, selection.service_host, instance_uuid, selection.nodename,
            request_spec, list(alternates))

    def _compute_for(self, selection):
        """The compute API that reaches ``selection``'s host."""
        return self.compute_api

    @staticmethod
    @db_api.retry_on_db_error
    def _release_failed_claim(instance_uuid, host, nodename):
        with cells.target(cells.host_cell(host)), \
                db_api.writer() as session:
            node = db_compute_nodes.get_node_by_name(session, host, nodename)
            if node is not None:
                claims.release_resources(session, instance_uuid, node.id)

    @staticmethod
    def _claim_alternate(instance_uuid, selection, request_spec=None):
        """Claim an alternate for the instance; whether it worked. The
        claim checks the server group's hard policy, if any."""
        wanted = selection.requested_resources()
        if not selection.compute_node_uuid or not wanted:
            return False
        with cells.target(common.selection_cell(selection)):
            return BuildTask._claim_node(instance_uuid, selection, wanted,
                                         request_spec)

    @staticmethod
    def _claim_node(instance_uuid, selection, wanted, request_spec):
        with db_api.reader() as session:
            node = db_compute_nodes.get_node_by_uuid(
                session, selection.compute_node_uuid)
        if node is None:
            LOG.info('Alternate %s/%s is gone', selection.service_host,
                     selection.nodename)
            return False
        wanted = dict(wanted)
        extra = wanted.pop(selection_obj.EXTRA_KEY, None)
        won = claims.claim_in_sql(
            node.id, instance_uuid, claims.Resources(**wanted),
            claims.hard_group_uuid(request_spec), node.host,
            hardware=(None if request_spec is None
                      else hardware.Request.from_spec(request_spec)),
            extra=extra)
        if isinstance(won, claims.GroupConflict):
            LOG.info('Alternate %s would break the policy of its server '
                     'group for %s (%s); skipping it',
                     selection.service_host, instance_uuid, won)
        elif not won:
            LOG.info('Alternate %s has no room left for %s',
                     selection.service_host, instance_uuid)
        return bool(won)

    @staticmethod
    def _fail_all(instance_uuids, request_spec, reason):
        """End the builds in ERROR with ``reason``, an exception or its
        text (see :func:`_end_in_error`), with a
        ``compute_task.build_instances.error`` notification for each
        instance this ended."""
        text = reason if isinstance(reason, str) else error_text(reason)
        for uuid in _end_in_error(instance_uuids, text):
            spec = request_spec
            if spec is not None and spec.obj_get('instance_uuid') != uuid:
                spec = request_spec.obj_clone()
                spec.instance_uuid = uuid
            compute_task_notes.task_error(None, 'build_instances', uuid, spec,
                                          reason, db_instances.ERROR)


def _logged(func, *args):
    try:
        func(*args)
    except Exception:
        LOG.exception('%s failed', getattr(func, '__name__', func))


@db_api.retry_on_db_error
def _end_in_error(instance_uuids, reason):
    """End the builds in ERROR with ``reason``, releasing every claim
    each instance holds in the same transaction (a scheduler asked twice
    after a timeout may have claimed with its first answer). An instance
    that stopped building meanwhile (deleted, timed out) keeps its state;
    a claim it holds all the same is released. The uuids ended now."""
    ended = []
    with db_api.writer() as session:
        for uuid in instance_uuids:
            failed = db_instances.update(
                session, uuid, expected_vm_state=db_instances.BUILDING,
                refused_task_state=db_instances.DELETING,
                vm_state=db_instances.ERROR, task_state=None, host=None,
                node=None, fault=reason, build_alternates=None)
            if failed:
                ended.append(uuid)
            if failed or db_instances.get(session, uuid).vm_state in \
                    db_instances.HOLDS_NO_CLAIM:
                released = claims.release_resources(session, uuid)
                if released:
                    LOG.info('Released %d claim(s) of failed build %s',
                             len(released), uuid)
    return ended


def _record(instance_uuids, request_spec, created=None):
    """Record the instances of a request in one transaction; True if
    recorded now, False if they already were, for this same request.
    ``created``, a dict, gets ``{uuid: row id}`` of the rows this call
    wrote (also those of a try whose commit went through but whose
    answer was lost: the retry then finds them).

    A write retried after a lost connection may find its own earlier
    commit; a client asking again finds its first request's rows: both
    are the same request, recorded once.
    """
    flavor = request_spec.flavor
    flavor_dict = {name: getattr(flavor, name) for name in flavor.fields
                   if flavor.obj_attr_is_set(name)}
    primitive = request_spec.obj_to_primitive()

    @db_api.retry_on_db_error
    def write():
        with db_api.writer() as session:
            existing = db_instances.list_instances(session,
                                                   uuids=instance_uuids)
            if existing:
                if len(existing) == len(instance_uuids) and all(
                        _same_request(row.request_spec, primitive)
                        for row in existing):
                    return False
                raise exception.InvalidRequest(
                    reason='instance %s already exists'
                    % ', '.join(sorted(row.uuid for row in existing)))
            ids = {}
            for uuid in instance_uuids:
                ids[uuid] = db_instances.create(
                    session, uuid, flavor=flavor_dict,
                    request_spec=primitive,
                    project_id=request_spec.obj_get('project_id'),
                    user_id=request_spec.obj_get('user_id'),
                    availability_zone=request_spec.obj_get(
                        'availability_zone'))
            if created is not None:
                created.update(ids)
            return True

    return write()


def _still_building(session, instance_uuid):
    """Whether the instance is building and not being deleted (what
    taking a placement expects of it)."""
    try:
        row = db_instances.get(session, instance_uuid)
    except exception.InstanceNotFound:
        return False
    return (row.vm_state == db_instances.BUILDING
            and row.task_state != db_instances.DELETING)


def _alternates_record(alternates, request_spec):
    """What ``instances.build_alternates`` keeps: the alternates'
    primitives and the hosts tried before this one."""
    retry = None if request_spec is None else request_spec.obj_get('retry')
    tried = [] if retry is None else [list(pair) for pair in retry.hosts]
    return {'alternates': [json.loads(json.dumps(item.obj_to_primitive()))
                           for item in alternates],
            'tried': tried}


def _same_request(stored, primitive):
    """Whether two RequestSpec primitives describe the same request:
    the same objects with the same field values. What a serializer adds
    of its own (the namespace, the list of changed fields, whose order
    is a set's and differs between processes) does not count."""
    return (request_fields(stored) ==
            request_fields(json.loads(json.dumps(primitive))))


def request_fields(value):
    """``value`` (a versioned object's primitive, or anything holding
    some) as plain data: each object as its name and its fields' values,
    whatever the namespace it was serialized under."""
    if isinstance(value, dict):
        data = _object_part(value, 'data')
        if data is not None and _object_part(value, 'name') is not None:
            return {'object': _object_part(value, 'name'),
                    'fields': request_fields(data)}
        return {key: request_fields(item) for key, item in value.items()}
    if isinstance(value, list):
        return [request_fields(item) for item in value]
    return value


def _object_part(primitive, part):
    """The ``<namespace>.<part>`` entry of an object primitive, or
    None if ``primitive`` is not one."""
    for key, item in primitive.items():
        if isinstance(key, str) and key.endswith('.' + part) and \
                key.count('.') == 1 and key != '.' + part:
            return item
    return None
