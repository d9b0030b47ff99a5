"""The scheduler's RPC endpoint: SchedulerManager.

It loads the driver named by ``[scheduler] driver`` through stevedore and
hands ``select_destinations`` to it. It also maps newly reported compute
nodes (host discovery) when ``[scheduler] discover_hosts_in_cells_interval``
is positive, and runs the driver's periodic tasks every
``[scheduler] periodic_task_interval`` seconds.

At the same interval, when they changed since the last time, and once
more when the service stops, it logs the driver's counters on one INFO
line, ``key=value`` pairs in a fixed order, e.g.::

    Scheduler stats: requests=12 instances=20 claims=20 claim_retries=3 \
group_conflicts=1 claims_released=0 no_valid_host=2

Each process (each worker) logs its own counters, which grow from zero
at its start: the last line of each process is its total.

Only the methods marked ``@rpc.expose`` are callable over RPC; the
hooks above (``init_host``, ``periodic_tasks``...) are not. Malformed
payloads are refused with InvalidRequest naming the field (see
``RequestSpec.validate`` and ``scheduler/validation.py`` for the bounds)
before the driver sees them, so nothing is claimed for them; NoValidHost
and InvalidRequest are expected exceptions and reach the caller as
themselves.

The fanout casts of API 1.2 (``update_aggregates``, ``delete_aggregate``)
and 1.3 (``update_instance_info``, ``delete_instance_info``,
``sync_instance_info``) go to the driver's HostManager, which applies them
to its cached host table at once. Casts have nobody to answer: a malformed
one is logged and dropped.
"""

import threading

from oslo_db import exception as db_exc
import oslo_messaging as messaging
from oslo_log import log as logging

from scheduler import cells
from scheduler.cells import discovery
from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler import exception
from scheduler import host_cache
from scheduler import loadables
from scheduler.notifications import request_spec as spec_notes
from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import instance_info as instance_info_obj
from scheduler.objects import request_spec as request_spec_obj
from scheduler import prometheus
from scheduler import reports
from scheduler import rpc
from scheduler import rpcapi
from scheduler import service
from scheduler import validation

CONF = conf.CONF
LOG = logging.getLogger(__name__)

_UNSET = object()

# Instances (or hosts) one fanout may name: a host full of small servers.
MAX_HOST_INSTANCES = 100000

# The driver counters (scheduler.drivers.base.Scheduler.stats) in the order
# the stats line gives them; counters a driver adds come after, sorted.
STATS_ORDER = ('requests', 'instances', 'claims', 'claim_retries',
               'group_conflicts', 'claims_released', 'no_valid_host')


def format_stats(stats):
    """``requests=12 instances=20 ...``: the counters in a stable order."""
    names = [name for name in STATS_ORDER if name in stats]
    names += sorted(name for name in stats if name not in STATS_ORDER)
    return ' '.join('%s=%s' % (name, stats[name]) for name in names)


def discover_hosts():
    """Map every unmapped compute node, in every cell (creating the host
    mappings) when ``[api_database]`` is set; return the node rows newly
    mapped (a cell whose database is away is logged and skipped).

    Safe when several schedulers (or gantt-manage) run it at once: the
    unmapped rows are locked while they are mapped, so each node is mapped
    by exactly one of them, and each host gets one host mapping.
    """
    result = discovery.discover_hosts()
    for cell, node in result.nodes:
        LOG.info('Mapped compute node %s (host %s, uuid %s) in cell %s',
                 node.hypervisor_hostname, node.host, node.uuid,
                 cell.label())
    return [node for cell, node in result.nodes]


class SchedulerManager(service.Manager):
    """Chooses hosts for instances."""

    target = messaging.Target(version=rpcapi.RPC_API_VERSION)
    fanout_methods = rpcapi.FANOUT_METHODS

    def __init__(self):
        # Loaded here, in the parent process, so that an unknown driver,
        # filter or weigher stops start-up before any worker forks.
        self.driver = loadables.load_driver(CONF.scheduler.driver)()
        # An idle scheduler logs no stats line until its first request.
        self._logged_stats = dict(getattr(self.driver, 'stats', None) or {})
        self._in_flight = 0
        self._in_flight_lock = threading.Lock()

    def init_host(self):
        # Under the threading backend SIGHUP restarts the workers after the
        # master re-read the config files, from a driver the master built
        # earlier: read the mutable options afresh here.
        self.reset()
        start = getattr(self.driver, 'start', None)
        if start is not None:
            start()
        reports.add_state('scheduler', self.report_state)

    def report_state(self):
        """What a Guru Meditation Report shows of this worker."""
        state = {'requests in flight': self._in_flight,
                 'counters': format_stats(
                     dict(getattr(self.driver, 'stats', None) or {}))}
        host_manager = getattr(self.driver, 'host_manager', None)
        if host_manager is not None:
            state['host cache'] = host_manager.report_state()
        return state

    def cleanup_host(self):
        stop = getattr(self.driver, 'stop', None)
        if stop is not None:
            stop()
        self._log_stats(always=True)

    def idle(self):
        """The RPC server answered its last message in flight: the driver
        may do work ahead of the next request (see
        :mod:`scheduler.drivers.ahead`)."""
        idle = getattr(self.driver, 'idle', None)
        if idle is not None:
            idle()

    def reset(self):
        # SIGHUP: read the cell mappings again at once, as Nova's
        # scheduler refreshes its cells caches.
        cells.clear_cache()
        reload_plugins = getattr(self.driver, 'reload_plugins', None)
        if reload_plugins is not None:
            reload_plugins()

    def periodic_tasks(self):
        return [
            service.PeriodicTask(
                '_discover_hosts_in_cells',
                CONF.scheduler.discover_hosts_in_cells_interval,
                self._discover_hosts_in_cells, run_immediately=True),
            service.PeriodicTask(
                '_run_periodic_tasks',
                CONF.scheduler.periodic_task_interval,
                self.driver.run_periodic_tasks),
            service.PeriodicTask(
                '_log_stats', CONF.scheduler.periodic_task_interval,
                lambda context: self._log_stats()),
        ]

    def _log_stats(self, always=False):
        """Log the driver's counters if they changed since the last line
        (or ``always``); True if a line was logged."""
        stats = dict(getattr(self.driver, 'stats', None) or {})
        if not always and stats == self._logged_stats:
            return False
        self._logged_stats = stats
        LOG.info('Scheduler stats: %s%s', format_stats(stats),
                 self._hosts_per_cell())
        return True

    def _hosts_per_cell(self):
        """`` hosts[cell1]=10 hosts[cell2]=4``: the cached hosts of each
        cell (``default`` without cells); '' before the first load."""
        table = getattr(getattr(self.driver, 'host_manager', None),
                        '_table', None)
        if table is None:
            return ''
        counts = host_cache.cell_counts(table)
        return ''.join(' hosts[%s]=%d' % (name, counts[name])
                       for name in sorted(counts))

    def _discover_hosts_in_cells(self, context):
        mapped = discover_hosts()
        if mapped:
            LOG.info('Host discovery mapped %d new compute node(s)',
                     len(mapped))

    @rpc.expose
    @messaging.expected_exceptions(exception.NoValidHost,
                                   exception.InvalidRequest,
                                   exception.DatabaseUnavailable)
    def select_destinations(self, ctxt, request_spec=None,
                            filter_properties=None, spec_obj=_UNSET,
                            instance_uuids=None, return_objects=False,
                            return_alternates=False):
        """Return destinations for the instances of a request.

        1.0 callers pass ``request_spec``/``filter_properties`` dicts and
        get ``{host, nodename, limits}`` dicts; 1.1 callers pass
        ``spec_obj`` and, with ``return_objects``, get Selection lists.
        """
        with self._in_flight_lock:
            self._in_flight += 1
        try:
            with prometheus.in_flight():
                return self._select_destinations(
                    ctxt, request_spec, filter_properties, spec_obj,
                    instance_uuids, return_objects, return_alternates)
        except Exception as error:
            prometheus.rpc_error('select_destinations', error)
            raise
        finally:
            with self._in_flight_lock:
                self._in_flight -= 1

    def _select_destinations(self, ctxt, request_spec, filter_properties,
                             spec_obj, instance_uuids, return_objects,
                             return_alternates):
        if spec_obj is _UNSET:
            for field, value in (('request_spec', request_spec),
                                 ('filter_properties', filter_properties)):
                validation.depth(field, value)
            spec_obj = request_spec_obj.RequestSpec.from_primitives(
                request_spec, filter_properties)
            if instance_uuids is None and isinstance(request_spec, dict):
                instance_uuids = request_spec.get('instance_uuids')
        spec_obj = self._validated_spec(spec_obj)
        instance_uuids = self._validated_uuids(instance_uuids, spec_obj)
        for field, value in (('return_objects', return_objects),
                             ('return_alternates', return_alternates)):
            validation.choice(field, value, (True, False))
        # As Nova's: no .end when the request fails (NoValidHost...).
        spec_notes.select_destinations(ctxt, spec_obj, 'start')
        try:
            selections = self.driver.select_destinations(
                ctxt, spec_obj, instance_uuids, return_alternates,
                validated=True)
        except db_exc.DBError as error:
            # Past the [database] retry budget: say so, not a traceback.
            raise exception.DatabaseUnavailable(
                url=config.redact_database_url(CONF.database.connection),
                reason=db_api.describe_error(error))
        spec_notes.select_destinations(ctxt, spec_obj, 'end')
        if return_objects:
            return selections
        return [alternates[0].to_legacy_dict() for alternates in selections]

    @rpc.expose
    def update_aggregates(self, ctxt, aggregates):
        """Fanout: aggregates were created or changed (their new state)."""
        try:
            aggregates = [_checked_aggregate('aggregates[%d]' % index, agg)
                          for index, agg in enumerate(validation.objects(
                              'aggregates', aggregates,
                              aggregate_obj.Aggregate))]
        except exception.InvalidRequest as error:
            return _dropped('update_aggregates', error)
        self.driver.host_manager.update_aggregates(
            [agg.to_db() for agg in aggregates])

    @rpc.expose
    def delete_aggregate(self, ctxt, aggregate):
        """Fanout: an aggregate was deleted."""
        try:
            validation.instance_of('aggregate', aggregate,
                                   aggregate_obj.Aggregate)
            _checked_aggregate('aggregate', aggregate)
        except exception.InvalidRequest as error:
            return _dropped('delete_aggregate', error)
        self.driver.host_manager.delete_aggregate(aggregate.to_db())

    @rpc.expose
    def update_instance_info(self, ctxt, host_name, instance_info):
        """Fanout from a compute: instances new (or changed) on it."""
        if isinstance(instance_info, instance_info_obj.InstanceInfo):
            instance_info = [instance_info]
        try:
            validation.name('host_name', host_name)
            infos = validation.objects('instance_info', instance_info,
                                       instance_info_obj.InstanceInfo)
            for index, info in enumerate(infos):
                _checked_instance_info('instance_info[%d]' % index, info)
        except exception.InvalidRequest as error:
            return _dropped('update_instance_info', error)
        self.driver.host_manager.update_instance_info(
            host_name, {info.uuid: info.to_host_info() for info in infos})

    @rpc.expose
    def delete_instance_info(self, ctxt, host_name, instance_uuid):
        """Fanout from a compute: an instance left it."""
        try:
            validation.name('host_name', host_name)
            validation.uuid('instance_uuid', instance_uuid)
        except exception.InvalidRequest as error:
            return _dropped('delete_instance_info', error)
        self.driver.host_manager.delete_instance_info(host_name,
                                                      instance_uuid)

    @rpc.expose
    def sync_instance_info(self, ctxt, host_name, instance_uuids):
        """Fanout from a compute: every instance it runs."""
        try:
            validation.name('host_name', host_name)
            uuids = validation.sequence('instance_uuids', instance_uuids,
                                        MAX_HOST_INSTANCES)
            for index, uuid in enumerate(uuids):
                validation.uuid('instance_uuids[%d]' % index, uuid)
        except exception.InvalidRequest as error:
            return _dropped('sync_instance_info', error)
        self.driver.host_manager.sync_instance_info(host_name, uuids)

    @staticmethod
    def _validated_spec(spec_obj):
        validation.instance_of('spec_obj', spec_obj,
                               request_spec_obj.RequestSpec)
        spec_obj.validate()
        return spec_obj

    @staticmethod
    def _validated_uuids(instance_uuids, spec_obj):
        if instance_uuids is None:
            return None
        instance_uuids = validation.sequence(
            'instance_uuids', instance_uuids, validation.MAX_NUM_INSTANCES)
        for index, uuid in enumerate(instance_uuids):
            validation.uuid('instance_uuids[%d]' % index, uuid)
        if instance_uuids and len(instance_uuids) != spec_obj.num_instances:
            raise exception.InvalidRequest(
                reason='%d instance_uuids given for num_instances=%d'
                % (len(instance_uuids), spec_obj.num_instances))
        return instance_uuids


def _dropped(method, error):
    """Log a malformed cast once; it has nobody to answer."""
    LOG.error('Dropped %s: %s', method, error)
    prometheus.rpc_error(method, error)


def _checked_aggregate(field, aggregate):
    validation.fields_set(field, aggregate, ('id', 'uuid', 'name'))
    validation.integer('%s.id' % field, aggregate.id, low=1,
                       high=validation.MAX_INT32)
    validation.text('%s.name' % field, aggregate.name,
                    validation.MAX_NAME_LEN)
    validation.strings('%s.hosts' % field, aggregate.obj_get('hosts', []),
                       max_items=MAX_HOST_INSTANCES)
    validation.string_dict('%s.metadata' % field,
                           aggregate.obj_get('metadata', {}))
    return aggregate


def _checked_instance_info(field, info):
    validation.fields_set(field, info, ('uuid',))
    validation.text('%s.flavor_id' % field, info.obj_get('flavor_id'),
                    validation.MAX_NAME_LEN, nullable=True)
    validation.string_dict('%s.image_properties' % field,
                           info.obj_get('image_properties', {}),
                           nullable_values=True)
    return info
