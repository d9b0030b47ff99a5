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

Malformed payloads are refused with InvalidRequest before the driver sees
them, so nothing is claimed for them; NoValidHost and InvalidRequest are
expected exceptions and reach the caller as themselves.

The fanout casts of API 1.2 (``update_aggregates``, ``delete_aggregate``)
and 1.3 (``update_instance_info``, ``delete_instance_info``,
``sync_instance_info``) go to the driver's HostManager, which applies them
to its cached host table at once. Casts have nobody to answer: a malformed
one is logged and dropped.
"""

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_utils import uuidutils

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler import exception
from scheduler import loadables
from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import instance_info as instance_info_obj
from scheduler.objects import request_spec as request_spec_obj
from scheduler import rpcapi
from scheduler import service

CONF = conf.CONF
LOG = logging.getLogger(__name__)

_UNSET = object()

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
    """Map every unmapped compute node; return the rows newly mapped.

    Safe when several schedulers (or gantt-manage) run it at once: the
    unmapped rows are locked while they are mapped, so each node is mapped
    by exactly one of them.
    """
    with db_api.writer() as session:
        mapped = db_compute_nodes.map_unmapped_nodes(session)
    for node in mapped:
        LOG.info('Mapped compute node %s (host %s, uuid %s)',
                 node.hypervisor_hostname, node.host, node.uuid)
    return mapped


class SchedulerManager(service.Manager):
    """Chooses hosts for instances."""

    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    def __init__(self):
        # Loaded here, in the parent process, so that an unknown driver,
        # filter or weigher stops start-up before any worker forks.
        self.driver = loadables.load_driver(CONF.scheduler.driver)()
        # An idle scheduler logs no stats line until its first request.
        self._logged_stats = dict(getattr(self.driver, 'stats', None) or {})

    def init_host(self):
        # Under the threading backend SIGHUP restarts the workers after the
        # master re-read the config files, from a driver the master built
        # earlier: read the mutable options afresh here.
        self.reset()
        start = getattr(self.driver, 'start', None)
        if start is not None:
            start()

    def cleanup_host(self):
        stop = getattr(self.driver, 'stop', None)
        if stop is not None:
            stop()
        self._log_stats(always=True)

    def reset(self):
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
        LOG.info('Scheduler stats: %s', format_stats(stats))
        return True

    def _discover_hosts_in_cells(self, context):
        mapped = discover_hosts()
        if mapped:
            LOG.info('Host discovery mapped %d new compute node(s)',
                     len(mapped))

    @messaging.expected_exceptions(exception.NoValidHost,
                                   exception.InvalidRequest)
    def select_destinations(self, ctxt, request_spec=None,
                            filter_properties=None, spec_obj=_UNSET,
                            instance_uuids=None, return_objects=False,
                            return_alternates=False):
        """Return destinations for the instances of a request.

        1.0 callers pass ``request_spec``/``filter_properties`` dicts and
        get ``{host, nodename, limits}`` dicts; 1.1 callers pass
        ``spec_obj`` and, with ``return_objects``, get Selection lists.
        """
        if spec_obj is _UNSET:
            spec_obj = request_spec_obj.RequestSpec.from_primitives(
                request_spec, filter_properties)
            if instance_uuids is None and isinstance(request_spec, dict):
                instance_uuids = request_spec.get('instance_uuids')
        spec_obj = self._validated_spec(spec_obj)
        instance_uuids = self._validated_uuids(instance_uuids, spec_obj)
        selections = self.driver.select_destinations(
            ctxt, spec_obj, instance_uuids, return_alternates)
        if return_objects:
            return selections
        return [alternates[0].to_legacy_dict() for alternates in selections]

    def update_aggregates(self, ctxt, aggregates):
        """Fanout: aggregates were created or changed (their new state)."""
        if not isinstance(aggregates, (list, tuple)) or not all(
                isinstance(a, aggregate_obj.Aggregate) for a in aggregates):
            LOG.error('Dropped update_aggregates: aggregates must be a list '
                      'of Aggregate objects')
            return
        self.driver.host_manager.update_aggregates(
            [agg.to_db() for agg in aggregates])

    def delete_aggregate(self, ctxt, aggregate):
        """Fanout: an aggregate was deleted."""
        if not isinstance(aggregate, aggregate_obj.Aggregate):
            LOG.error('Dropped delete_aggregate: aggregate must be an '
                      'Aggregate object')
            return
        self.driver.host_manager.delete_aggregate(aggregate.to_db())

    def update_instance_info(self, ctxt, host_name, instance_info):
        """Fanout from a compute: instances new (or changed) on it."""
        if isinstance(instance_info, instance_info_obj.InstanceInfo):
            instance_info = [instance_info]
        if not _is_host(host_name) or not isinstance(
                instance_info, (list, tuple)) or not all(
                isinstance(i, instance_info_obj.InstanceInfo)
                for i in instance_info):
            LOG.error('Dropped update_instance_info: host_name must be a '
                      'string and instance_info InstanceInfo objects')
            return
        self.driver.host_manager.update_instance_info(
            host_name, {info.uuid: info.to_host_info()
                        for info in instance_info})

    def delete_instance_info(self, ctxt, host_name, instance_uuid):
        """Fanout from a compute: an instance left it."""
        if not _is_host(host_name) or not _is_uuid(instance_uuid):
            LOG.error('Dropped delete_instance_info: host_name must be a '
                      'string and instance_uuid a UUID')
            return
        self.driver.host_manager.delete_instance_info(host_name,
                                                      instance_uuid)

    def sync_instance_info(self, ctxt, host_name, instance_uuids):
        """Fanout from a compute: every instance it runs."""
        if not _is_host(host_name) or not isinstance(
                instance_uuids, (list, tuple)) or not all(
                _is_uuid(uuid) for uuid in instance_uuids):
            LOG.error('Dropped sync_instance_info: host_name must be a '
                      'string and instance_uuids a list of UUIDs')
            return
        self.driver.host_manager.sync_instance_info(host_name,
                                                    instance_uuids)

    @staticmethod
    def _validated_spec(spec_obj):
        if not isinstance(spec_obj, request_spec_obj.RequestSpec):
            raise exception.InvalidRequest(
                reason='spec_obj must be a RequestSpec object, not %s'
                % type(spec_obj).__name__)
        spec_obj.validate()
        return spec_obj

    @staticmethod
    def _validated_uuids(instance_uuids, spec_obj):
        if instance_uuids is None:
            return None
        if (not isinstance(instance_uuids, (list, tuple)) or
                not all(isinstance(u, str) and uuidutils.is_uuid_like(u)
                        for u in instance_uuids)):
            raise exception.InvalidRequest(
                reason='instance_uuids must be a list of UUID strings')
        if instance_uuids and len(instance_uuids) != spec_obj.num_instances:
            raise exception.InvalidRequest(
                reason='%d instance_uuids given for num_instances=%d'
                % (len(instance_uuids), spec_obj.num_instances))
        return list(instance_uuids)


def _is_host(value):
    return isinstance(value, str) and bool(value)


def _is_uuid(value):
    return isinstance(value, str) and uuidutils.is_uuid_like(value)
