"""NovaSchedulerManager: Nova's scheduler RPC API 4.x, served by Gantt.

In Nova mode (``[scheduler] backend = nova``) gantt-scheduler takes the
place of nova-scheduler: this endpoint listens on topic ``scheduler`` of
the ``nova`` exchange (``[DEFAULT] control_exchange`` must say ``nova``,
or start-up stops with an error saying so) and on its fanout, with
Nova's method names, arguments and versions:

* ``select_destinations`` 4.0 to 4.5: ``spec_obj`` (a Nova RequestSpec,
  4.3), or before 4.3 Nova's legacy ``request_spec`` and
  ``filter_properties`` dicts (:mod:`scheduler.nova.legacy_spec`);
  ``instance_uuids`` (4.4), ``return_objects`` and ``return_alternates``
  (4.5). It answers Nova Selection 1.1 lists with ``return_objects``,
  else (a caller before 4.5, or 4.5 without objects) the legacy
  ``{host, nodename, limits}`` dicts; alternates only when both are
  asked, as Nova's scheduler;
* the fanout casts ``update_aggregates`` and ``delete_aggregate`` (4.1),
  ``update_instance_info``, ``delete_instance_info`` and
  ``sync_instance_info`` (4.2), applied to the driver's HostManager as
  Gantt's own endpoint applies them. A malformed cast is logged and
  dropped: nobody waits for its answer.

It sends Nova's own ``scheduler.select_destinations.start`` and ``.end``
notifications (:mod:`scheduler.notifications.nova_mode`): start once the
request is valid, end when it is answered.

The request goes to the same loaded driver as in Gantt mode
(``self.driver.select_destinations``); every refusal reaches Nova's
conductor as ``nova.exception.NoValidHost`` (:mod:`scheduler.nova.errors`).
Nothing here writes into Nova's databases: host discovery, which maps
compute nodes in Gantt mode, does not run::

    manager = NovaSchedulerManager(cell_of=host_source.cell_of)
    server = rpc.get_server(messaging.Target(topic='scheduler',
                                             server=CONF.host),
                            [manager], serializer=manager.rpc_serializer)
"""

import functools

import oslo_messaging as messaging
from oslo_db import exception as db_exc
from oslo_log import log as logging

from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler import exception
from scheduler import manager as gantt_manager
from scheduler.notifications import nova_mode as nova_notes
from scheduler.nova import errors
from scheduler.nova import host_updates
from scheduler.nova import legacy_spec
from scheduler.nova import mirror
from scheduler.nova import placement_claims
from scheduler.nova import placement_client
from scheduler.nova import primitives
from scheduler.nova import request_spec as nova_spec
from scheduler.nova import selections
from scheduler.nova import wire
from scheduler import prometheus
from scheduler import rpc
from scheduler import service
from scheduler import validation

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# Nova's scheduler RPC API: the newest version served, and its exchange.
RPC_API_VERSION = '4.5'
CONTROL_EXCHANGE = 'nova'
FANOUT_METHODS = frozenset({'update_aggregates', 'delete_aggregate',
                            'update_instance_info', 'delete_instance_info',
                            'sync_instance_info'})
_UNSET = object()


def check_control_exchange():
    """ConfigError unless ``[DEFAULT] control_exchange`` is Nova's."""
    config.register_opts()
    if CONF.control_exchange != CONTROL_EXCHANGE:
        raise exception.ConfigError(
            reason='[scheduler] backend = nova serves Nova\'s conductors on '
            'the exchange they send to: set [DEFAULT] control_exchange = '
            '%s (it is %r)' % (CONTROL_EXCHANGE, CONF.control_exchange))


class NovaSchedulerManager(gantt_manager.SchedulerManager):
    """Nova's scheduler endpoint over Gantt's driver (see the module
    docstring). ``cell_of(host)``: the cell UUID of a host (None: the
    Selection's own); ``availability_zone_of(host)``: its zone (None:
    ``[DEFAULT] default_availability_zone``); ``ratios_of(host,
    nodename)``: its CPU and RAM allocation ratios, for the NUMA limits
    of a request with a NUMA topology (see
    :class:`scheduler.nova.selections.Encoder`)."""

    target = messaging.Target(version=RPC_API_VERSION)
    fanout_methods = FANOUT_METHODS

    def __init__(self, cell_of=None, availability_zone_of=None,
                 ratios_of=None):
        check_control_exchange()
        super().__init__()
        # By default the lookups read the host mirror (the cell a host
        # was read from) and the host cache (its zone and ratios).
        self._mirror = mirror.get() if mirror.configured() else None
        if cell_of is None and self._mirror is not None:
            cell_of = self._mirror.cell_uuid_of
        self.encoder = selections.Encoder(
            cell_of, availability_zone_of or self._zone_of,
            ratios_of or self._ratios_of)
        self.rpc_serializer = wire.NovaSerializer()

    def _cell_as_hosts(self, spec):
        """A move Nova keeps in its cell (``requested_destination.cell``
        without ``allow_cross_cell_move``): the mirror's host table is
        one database whose rows carry no cell, so the cell becomes the
        hosts of other cells ignored (none when every host is in it,
        the usual single-cell cloud)."""
        dest = spec.obj_get('requested_destination')
        cell = None if dest is None else dest.obj_get('cell')
        if cell is None or self._mirror is None:
            return
        dest.cell = None
        if dest.obj_get('allow_cross_cell_move'):
            return
        table = self.driver.host_manager.snapshot()
        elsewhere = {state.host for state in table.states
                     if self._mirror.cell_uuid_of(state.host) != cell.uuid}
        if elsewhere:
            spec.ignore_hosts = sorted(
                set(spec.obj_get('ignore_hosts') or ()) | elsewhere)

    def _state_of(self, host, nodename=None):
        """The cached HostState of ``host`` (its node ``nodename``), or
        None."""
        table = self.driver.host_manager.snapshot()
        for row in table.rows_by_host.get(host, ()):
            state = table.states[row]
            if nodename is None or state.nodename == nodename:
                return state
        return None

    def _zone_of(self, host):
        state = self._state_of(host)
        return None if state is None else state.availability_zone

    def _ratios_of(self, host, nodename):
        state = self._state_of(host, nodename)
        if state is None:
            return None
        return state.cpu_allocation_ratio, state.ram_allocation_ratio

    def periodic_tasks(self):
        # No host discovery: it would write Nova's host mappings. The
        # mirror's sync is the only periodic writer, of the mirror alone.
        tasks = []
        if self._mirror is not None:
            tasks.append(mirror.periodic_task(self.driver.host_manager))
        return tasks + [
            service.PeriodicTask(
                '_run_periodic_tasks',
                CONF.scheduler.periodic_task_interval,
                self.driver.run_periodic_tasks),
            service.PeriodicTask(
                '_log_stats', CONF.scheduler.periodic_task_interval,
                lambda context: self._log_stats()),
        ]

    @rpc.expose
    @messaging.expected_exceptions(errors.NoValidHost,
                                   errors.AllocationUpdateFailed)
    def select_destinations(self, ctxt, request_spec=None,
                            filter_properties=None, spec_obj=_UNSET,
                            instance_uuids=None, return_objects=False,
                            return_alternates=False):
        """Where to put the instances of ``spec_obj`` (see the module
        docstring for the forms of the answer)."""
        with self._in_flight_lock:
            self._in_flight += 1
        try:
            with prometheus.in_flight():
                return self._answer(ctxt, request_spec, filter_properties,
                                    spec_obj, instance_uuids,
                                    return_objects, return_alternates)
        except exception.GanttException as error:
            prometheus.rpc_error('select_destinations', error)
            if isinstance(error, (errors.NoValidHost,
                                  errors.AllocationUpdateFailed)):
                raise
            LOG.info('select_destinations for %s refused: %s',
                     instance_uuids, error)
            raise errors.for_nova(error)
        finally:
            with self._in_flight_lock:
                self._in_flight -= 1

    def _answer(self, ctxt, request_spec, filter_properties, spec_obj,
                instance_uuids, return_objects, return_alternates):
        field = 'spec_obj'
        if spec_obj is _UNSET:
            # 4.0 to 4.2: Nova's legacy dicts, read as Nova reads them.
            field = 'request_spec'
            spec_obj = legacy_spec.to_nova_spec(request_spec,
                                                filter_properties)
        for flag, value in (('return_objects', return_objects),
                            ('return_alternates', return_alternates)):
            validation.choice(flag, value, (True, False))
        spec = nova_spec.from_nova(spec_obj, field)
        spec = self._validated_spec(spec)
        self._cell_as_hosts(spec)
        instance_uuids = self._validated_uuids(instance_uuids, spec)
        notify = functools.partial(
            nova_notes.select_destinations,
            getattr(ctxt, 'nova_values', None) or ctxt.to_dict(),
            primitives.to_primitive(spec_obj))
        notify('start')
        try:
            chosen = self.driver.select_destinations(
                ctxt, spec, instance_uuids,
                return_alternates and return_objects)
        except db_exc.DBError as error:
            raise exception.DatabaseUnavailable(
                url=config.redact_database_url(CONF.database.connection),
                reason=db_api.describe_error(error))
        except placement_client.PlacementUnreachable as error:
            # Nova's scheduler answers NoValidHost when Placement is away.
            raise exception.NoValidHost(reason=str(error))
        except placement_claims.ConsumerConflict as error:
            raise errors.AllocationUpdateFailed(
                consumer_uuid=error.consumer_uuid, error=error.detail)
        answer = self.encoder.answer(chosen, return_objects,
                                     selections.NumaRequest.of_spec(spec_obj))
        notify('end')
        return answer

    @rpc.expose
    def update_aggregates(self, ctxt, aggregates):
        """Fanout (4.1): aggregates created or changed (their new state)."""
        try:
            found = host_updates.aggregates(aggregates, 'aggregates')
        except exception.InvalidRequest as error:
            return gantt_manager._dropped('update_aggregates', error)
        self.driver.host_manager.update_aggregates(found)

    @rpc.expose
    def delete_aggregate(self, ctxt, aggregate):
        """Fanout (4.1): an aggregate was deleted."""
        try:
            found = host_updates.aggregate(aggregate, 'aggregate')
        except exception.InvalidRequest as error:
            return gantt_manager._dropped('delete_aggregate', error)
        self.driver.host_manager.delete_aggregate(found)

    @rpc.expose
    def update_instance_info(self, ctxt, host_name, instance_info):
        """Fanout from a compute (4.2): instances new or changed on it."""
        try:
            validation.name('host_name', host_name)
            found = host_updates.instances(instance_info, 'instance_info')
        except exception.InvalidRequest as error:
            return gantt_manager._dropped('update_instance_info', error)
        self.driver.host_manager.update_instance_info(host_name, found)

    # delete_instance_info (4.2) is Gantt's own endpoint's, inherited:
    # the same arguments and checks.

    @rpc.expose
    def sync_instance_info(self, ctxt, host_name, instance_uuids):
        """Fanout from a compute (4.2): every instance it runs."""
        try:
            validation.name('host_name', host_name)
            uuids = validation.sequence('instance_uuids', instance_uuids,
                                        host_updates.MAX_ITEMS)
            for index, uuid in enumerate(uuids):
                validation.uuid('instance_uuids[%d]' % index, uuid)
        except exception.InvalidRequest as error:
            return gantt_manager._dropped('sync_instance_info', error)
        self.driver.host_manager.sync_instance_info(host_name, uuids)
