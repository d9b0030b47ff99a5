"""ComputeManager: the fake-virt agent's RPC endpoint.

At start it reports its nodes' inventory to the conductor, then again every
``[DEFAULT] report_interval`` seconds with its instance counts; its
heartbeat also goes through the conductor. Its nodes are ``[fake_virt]
node_count`` virtual ones, or ``baremetal_nodes`` baremetal ones (see
:mod:`compute.baremetal`). With the inventory go the host
facts filters read, set per agent in ``[fake_virt]``: hypervisor type and
version, supported instances, host IP, stats (the agent's own
``num_instances``, ``num_vm_active``, ``num_proj_<project>``,
``io_workload`` and ``failed_builds``, as Nova's resource tracker counts
them, plus any configured), metrics, and the hardware of
:mod:`compute.hardware` (``cpu_info``, ``numa_topology``,
``pci_device_pools``, ``disk_available_least``; conductor API 1.3),
and (conductor API 1.5) each node's inventories of other resource
classes and its traits (:mod:`compute.resources`: ``PCPU`` of
``[compute] cpu_dedicated_set``, a baremetal node's class, ``[fake_virt]
traits``), with what the provider config files of ``[compute]
provider_config_location`` add (:mod:`compute.provider_config`).
``build_and_run_instance`` "spawns" at once (or after ``[fake_virt]
spawn_time``) and reports ACTIVE; a failed build (``[fake_virt]
build_failure_rate``) goes back to the conductor with the alternates,
which reschedules it.

The schedulers hear of the instances on this host (scheduler RPC API 1.3,
fanout casts) when ``[filter_scheduler] track_instance_changes`` is on:
``update_instance_info`` after a spawn, ``delete_instance_info`` when a
build fails here (the scheduler recorded the instance when it claimed),
and every ``[DEFAULT] scheduler_instance_sync_interval`` seconds
``sync_instance_info`` with every instance this agent runs.

The conductor's move operations (compute API 1.1) tell the agent that an
instance now runs here (``receive_instance``) or left (``remove_instance``),
and ask it before a live migration (``check_can_live_migrate_destination``,
refused with ``[fake_virt] refuse_live_migration``). The fake keeps no disk
or network state, so these only change what the agent counts and reports.

A delete (compute API 1.2, ``terminate_instance``) makes the agent forget
the instance and tell the schedulers. A build the conductor gave up on
meanwhile (``[DEFAULT] instance_build_timeout``), or one deleted while it
spawned, is not taken: the conductor refuses the ACTIVE report and the
agent forgets the instance.

Reports survive outages. A spawn report the conductor does not take (the
broker, the conductor or its database is away) is sent again with
backoff, for up to :data:`REPORT_RETRY_SECONDS`; and every ``[DEFAULT]
sync_power_state_interval`` seconds the agent sends the conductor every
instance it runs and, apart, every build it is still spawning (conductor
API 1.4 ``sync_instances``). The conductor marks active the running ones
whose report was lost (never one still spawning: only a spawn that
succeeded runs), says which ones to forget, and moves to their next
alternate the builds placed here that this agent never heard of (their
message was lost). An instance that runs thus reaches ``active`` at most
one sync interval after the outage ends. A failed spawn goes back to the
conductor, which tries the next alternate or ends it in ERROR.

An agent started before any conductor listens asks it every
:data:`CONDUCTOR_WAIT_INTERVAL` seconds (a call sent to a topic nobody
consumes yet is dropped by the broker) and reports its nodes as soon as
it first answers.

Only the compute API's methods (``@rpc.expose``) are callable over RPC;
their arguments are checked first, a malformed ``build_and_run_instance``
cast is logged at ERROR and dropped.
"""

import collections
import datetime
import random
import threading
import time
import uuid as uuid_lib

import oslo_messaging as messaging
from oslo_log import log as logging

from compute import baremetal
from compute import hardware
from compute import provider_config
from compute import resources
from compute import rpcapi as compute_rpcapi
from conductor import rpcapi as conductor_rpcapi
from scheduler import conf
from scheduler import context as gantt_context
from scheduler import exception
from scheduler.notifications import instance as instance_notes
from scheduler.objects import instance_info as instance_info_obj
from scheduler.objects import request_spec as request_spec_obj
from scheduler.objects import selection as selection_obj
from scheduler import rpc
from scheduler import rpcapi as scheduler_rpcapi
from scheduler import service
from scheduler import validation
from scheduler import version

CONF = conf.CONF
LOG = logging.getLogger(__name__)

BINARY = 'gantt-compute'

# Seconds between instance syncs when the option says 0 ("the default
# interval of periodic tasks", as in Nova).
DEFAULT_SYNC_INTERVAL = 60

# How long a spawn report is retried before the periodic sync is left
# to repair it, and the longest pause between two tries.
REPORT_RETRY_SECONDS = 60
REPORT_RETRY_MAX_INTERVAL = 10
# Until the conductor first answers: how long a heartbeat waits for it,
# and how often it is asked.
CONDUCTOR_WAIT_TIMEOUT = 2.0
CONDUCTOR_WAIT_INTERVAL = 1.0
# What _report_spawned answers when nobody took the report.
UNREPORTED = object()

# Namespace of the node UUIDs, so that a restarted agent reports the same
# nodes without keeping any state on disk.
NODE_UUID_NAMESPACE = uuid_lib.UUID('6a0e6b1e-2b39-4f4e-9d55-4c1f0f3b6d31')


def node_names(host, count):
    if count == 1:
        return [host]
    return ['%s-%d' % (host, index) for index in range(1, count + 1)]


def node_uuid(host, nodename):
    return str(uuid_lib.uuid5(NODE_UUID_NAMESPACE, '%s/%s' % (host, nodename)))


class ComputeManager(service.Manager):
    target = messaging.Target(version=compute_rpcapi.RPC_API_VERSION)

    def __init__(self, host=None, capacity=None, build_failure_rate=None):
        """``capacity`` (``{'vcpus', 'memory_mb', 'local_gb'}``, or any
        other ``[fake_virt]`` option such as ``hypervisor_version`` or
        ``stats``) and ``build_failure_rate`` override ``[fake_virt]`` for
        this agent, so one process can run unlike hosts (the demo and the
        tests do)."""
        self.host = host or CONF.host
        self.capacity = dict(capacity or {})
        # ``[fake_virt] baremetal_nodes``: an Ironic compute's nodes
        # instead of virtual ones (see compute.baremetal).
        self.baremetal = bool(self._fake('baremetal_nodes'))
        if self.baremetal:
            self.nodes = baremetal.node_names(
                self.host, self._fake('baremetal_nodes'))
        else:
            self.nodes = node_names(self.host, CONF.fake_virt.node_count)
        self.build_failure_rate = build_failure_rate
        # Checked now: a bad document stops the agent before it serves.
        self.hardware = hardware.configured(self._fake)
        self._instances = {}   # instance uuid -> node
        self._projects = {}    # instance uuid -> project id
        self._specs = {}       # instance uuid -> its RequestSpec
        self._spawning = {}    # instance uuid -> node, while it spawns
        self._building = collections.Counter()   # node -> builds running
        self._failed_builds = {}   # node -> builds failed since a success
        self._lock = threading.Lock()
        self._check_placement_options()
        self._conductor_answered = threading.Event()
        self._waiting_logged = False
        self.conductor_api = None
        self.compute_task_api = None
        self.scheduler_api = None

    def _check_placement_options(self):
        """Read what the nodes report beyond vCPUs, RAM and disk (see
        :mod:`compute.resources` and :mod:`compute.provider_config`);
        a bad value stops the agent now, not at its first report."""
        self.traits = resources.configured_traits(self._fake('traits'))
        if self.baremetal:
            self.cpu_totals = None
            self.resource_class = resources.baremetal_class(
                self._fake('baremetal_resource_class'))
        else:
            self.cpu_totals = resources.cpu_totals(self._fake('vcpus'))
            self.resource_class = None
        self.provider_configs = provider_config.ProviderConfigs.from_directory(
            CONF.compute.provider_config_location)
        self.provider_configs.apply(
            [dict(uuid=node_uuid(self.host, name), nodename=name,
                  **self._placement_report(name)) for name in self.nodes])

    def init_host(self):
        self.conductor_api = conductor_rpcapi.ConductorAPI()
        self.compute_task_api = conductor_rpcapi.ComputeTaskAPI()
        self.scheduler_api = scheduler_rpcapi.SchedulerAPI()

    def heartbeat(self):
        """Tell the conductor this agent is alive. Until the conductor
        has answered once, the call waits :data:`CONDUCTOR_WAIT_TIMEOUT`
        seconds, not ``rpc_response_timeout``: a message sent before any
        conductor listens is dropped by the broker, and waiting the whole
        timeout for it would hold the agent's start."""
        answered = self._conductor_answered.is_set()
        self.conductor_api.service_update(
            gantt_context.get_admin_context(), self.host, BINARY,
            compute_rpcapi.RPC_TOPIC, version.SERVICE_VERSION,
            timeout=None if answered else CONDUCTOR_WAIT_TIMEOUT)
        if not answered:
            self._conductor_answered.set()
            LOG.info('The conductor answered %s', self.host)

    def register_when_conductor_answers(self, context):
        """Until the conductor first answers, ask it every
        :data:`CONDUCTOR_WAIT_INTERVAL` seconds; on its first answer,
        report the nodes at once (the regular reports may be waiting out
        a call sent before it listened)."""
        if self._conductor_answered.is_set():
            return
        try:
            self.heartbeat()
        except messaging.MessagingTimeout:
            if not self._waiting_logged:
                self._waiting_logged = True
                LOG.warning('Waiting for the conductor (topic %s) to '
                            'answer; %s registers once it does',
                            conductor_rpcapi.RPC_TOPIC, self.host)
            return
        self.update_available_resource(context)

    def periodic_tasks(self):
        # Runs at once and then periodically, so that a conductor that
        # comes up after this agent still gets the inventory.
        sync_interval = (CONF.scheduler_instance_sync_interval
                         or DEFAULT_SYNC_INTERVAL)
        return [service.PeriodicTask('register_when_conductor_answers',
                                     CONDUCTOR_WAIT_INTERVAL,
                                     self.register_when_conductor_answers,
                                     run_immediately=True),
                service.PeriodicTask('update_available_resource',
                                     CONF.report_interval,
                                     self.update_available_resource,
                                     run_immediately=True),
                service.PeriodicTask('sync_scheduler_instance_info',
                                     sync_interval,
                                     self.sync_scheduler_instance_info),
                service.PeriodicTask('sync_instances_with_conductor',
                                     CONF.sync_power_state_interval,
                                     self.sync_instances_with_conductor)]

    def sync_instances_with_conductor(self, context):
        """Send the conductor the instances this agent runs and those it
        is still spawning (never one for the other: only a spawn that
        succeeded runs); forget the ones it says ended, announce the ones
        it marked active."""
        with self._lock:
            running = dict(self._instances)
            spawning = sorted(self._spawning)
            specs = dict(self._specs)
        outcome = self.conductor_api.sync_instances(context, self.host,
                                                    running, spawning)
        if not outcome:
            return
        for uuid in outcome.get('forget', ()):
            LOG.warning('Forgetting instance %s: the conductor says it '
                        'was deleted, timed out or is unknown', uuid)
            self._untrack(context, uuid)
        for uuid in outcome.get('activated', ()):
            LOG.info('Instance %s is active (its spawn report was lost)',
                     uuid)
            if uuid in specs:
                self._announce(context, uuid, specs[uuid])

    def sync_scheduler_instance_info(self, context):
        """Tell the schedulers every instance this agent runs."""
        if not CONF.filter_scheduler.track_instance_changes:
            return
        with self._lock:
            uuids = sorted(self._instances)
        self.scheduler_api.sync_instance_info(context, self.host, uuids)

    def _fake(self, name):
        """A ``[fake_virt]`` option, as this agent overrides it."""
        if name in self.capacity:
            return self.capacity[name]
        return getattr(CONF.fake_virt, name)

    def _supported_instances(self):
        triples = [entry.split(':') for entry
                   in self._fake('supported_instances') or ()]
        if not triples:
            return [['x86_64', self._fake('hypervisor_type'), 'hvm']]
        return [[part.strip() for part in triple] for triple in triples]

    def _metrics(self):
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        metrics = []
        for name, value in sorted(self._fake('metrics').items()):
            try:
                number = float(value)
            except (TypeError, ValueError):
                LOG.warning('Ignoring [fake_virt] metric %s: %r is not a '
                            'number', name, value)
                continue
            metrics.append({'name': name, 'value': number, 'timestamp': now,
                            'source': 'fake_virt'})
        return metrics

    def _configured_failed_builds(self):
        try:
            return int(self._fake('stats').get('failed_builds', 0))
        except (TypeError, ValueError):
            return 0

    def _stats(self, nodename):
        """Nova's compute stats of one node, and the configured ones."""
        configured = dict(self._fake('stats'))
        with self._lock:
            on_node = [uuid for uuid, node in self._instances.items()
                       if node == nodename]
            projects = collections.Counter(
                self._projects[uuid] for uuid in on_node
                if self._projects.get(uuid))
            building = self._building[nodename]
            failed = self._failed_builds.get(nodename)
        if failed is None:
            failed = self._configured_failed_builds()
        io_workload = building + self._fake('io_workload')
        stats = {key: str(value) for key, value in configured.items()}
        stats.update({'num_instances': str(len(on_node)),
                      'num_vm_active': str(len(on_node)),
                      'io_workload': str(io_workload),
                      'failed_builds': str(failed)})
        stats.update({'num_proj_%s' % project: str(count)
                      for project, count in projects.items()})
        return stats, len(on_node), io_workload

    def _disk_gb_used(self, nodename):
        """The disk the instances on ``nodename`` take, in GB."""
        with self._lock:
            specs = [self._specs.get(uuid) for uuid, node
                     in self._instances.items() if node == nodename]
        return sum(spec.resources().disk_gb for spec in specs
                   if spec is not None)

    def _inventory(self, nodename):
        stats, count, io_workload = self._stats(nodename)
        inventory = {
            'vcpus': self._fake('vcpus'),
            'memory_mb': self._fake('memory_mb'),
            'local_gb': self._fake('local_gb'),
            'reserved_vcpus': CONF.reserved_host_cpus,
            'reserved_memory_mb': CONF.reserved_host_memory_mb,
            'reserved_disk_gb': -(-CONF.reserved_host_disk_mb // 1024),
            # Nova's: the ratio set here, else the node keeps its own, else
            # (a new node) the initial one; the conductor applies it.
            'cpu_allocation_ratio': CONF.cpu_allocation_ratio,
            'ram_allocation_ratio': CONF.ram_allocation_ratio,
            'disk_allocation_ratio': CONF.disk_allocation_ratio,
            'initial_cpu_allocation_ratio': CONF.initial_cpu_allocation_ratio,
            'initial_ram_allocation_ratio': CONF.initial_ram_allocation_ratio,
            'initial_disk_allocation_ratio':
                CONF.initial_disk_allocation_ratio,
            'hypervisor_type': self._fake('hypervisor_type'),
            'hypervisor_version': self._fake('hypervisor_version'),
            'host_ip': self._fake('host_ip'),
            'supported_instances': self._supported_instances(),
            'stats': stats,
            'metrics': self._metrics(),
            'num_instances': count,
            'io_workload': io_workload,
            # None: not reported (the conductor writes NULL).
            **hardware.reported(self.hardware, self._disk_gb_used(nodename)),
        }
        if self.baremetal:
            return baremetal.inventory(inventory, self.resource_class)
        if self.cpu_totals.vcpus != inventory['vcpus']:
            # [compute] cpu_shared_set / cpu_dedicated_set.
            inventory['vcpus'] = self.cpu_totals.vcpus
        return inventory

    def _placement_report(self, nodename):
        """``{'inventories', 'traits'}`` of a node: its classes beyond
        the classic three (``PCPU``, a baremetal node's class) and its
        traits, before the provider config files add theirs."""
        if self.resource_class is not None:
            with self._lock:
                in_use = nodename in self._instances.values()
            inventories = resources.baremetal_inventory(self.resource_class,
                                                        in_use)
        elif self.cpu_totals is not None:
            inventories = resources.cpu_inventories(self.cpu_totals)
        else:
            inventories = {}
        return {'inventories': inventories, 'traits': list(self.traits)}

    def update_available_resource(self, context):
        nodes = [dict({'uuid': node_uuid(self.host, name), 'nodename': name,
                       'inventory': self._inventory(name)},
                      **self._placement_report(name)) for name in self.nodes]
        self.provider_configs.apply(nodes)
        self.conductor_api.compute_node_update(context, self.host, nodes)
        LOG.debug('Reported %d node(s) of %s', len(nodes), self.host)

    @rpc.expose
    def build_and_run_instance(self, ctxt, instance_uuid, node,
                               request_spec, host_list):
        """Cast: spawn the instance on ``node``; a malformed message is
        logged and dropped, a node this agent does not run goes back to
        the conductor as a failed build."""
        try:
            _check_build(instance_uuid, node, request_spec, host_list)
        except exception.InvalidRequest as error:
            LOG.error('Dropped build_and_run_instance: %s', error)
            return
        if node not in self.nodes:
            self._build_failed(ctxt, instance_uuid, node, request_spec,
                               host_list, 'node %s is not run by %s'
                               % (node, self.host))
            return
        instance_notes.create(ctxt, 'start', instance_uuid, request_spec,
                              self.host, node)
        if not self._spawn(instance_uuid, node):
            return
        failure_rate = (CONF.fake_virt.build_failure_rate
                        if self.build_failure_rate is None
                        else self.build_failure_rate)
        if random.random() < failure_rate:
            reason = 'fake spawn failure on %s' % node
            instance_notes.create(ctxt, 'error', instance_uuid, request_spec,
                                  self.host, node, fault=reason)
            self._build_failed(ctxt, instance_uuid, node, request_spec,
                               host_list, reason)
            return
        with self._lock:
            # Nova resets the count of failed builds on a success.
            self._failed_builds[node] = 0
        self._track(instance_uuid, node, request_spec)
        accepted = self._report_spawned(ctxt, instance_uuid, node)
        if accepted is UNREPORTED:
            LOG.warning('Could not report the spawn of %s for %d s; the '
                        'next sync with the conductor will', instance_uuid,
                        REPORT_RETRY_SECONDS)
            return
        if accepted is False:
            LOG.warning('The conductor refused the spawn of %s on %s: the '
                        'build timed out, was deleted or moved to another '
                        'host before it ended (its build message came late '
                        'or twice); forgetting it', instance_uuid, node)
            self._untrack(ctxt, instance_uuid)
            return
        LOG.info('Spawned instance %s on %s', instance_uuid, node)
        instance_notes.create(ctxt, 'end', instance_uuid, request_spec,
                              self.host, node)
        self._announce(ctxt, instance_uuid, request_spec)

    def _spawn(self, instance_uuid, node):
        """The fake spawn; False (nothing done) if this agent builds or
        runs the instance already (a build message delivered twice). The
        instance stays among those spawning until :meth:`_spawned` or
        :meth:`_build_failed` ends it."""
        with self._lock:
            if instance_uuid in self._spawning or \
                    instance_uuid in self._instances:
                LOG.warning('Ignoring a second build of %s: it is already '
                            'here', instance_uuid)
                return False
            self._spawning[instance_uuid] = node
            self._building[node] += 1
        try:
            if self._fake('spawn_time'):
                time.sleep(self._fake('spawn_time'))
        finally:
            with self._lock:
                self._building[node] -= 1
        return True

    def _spawn_ended(self, instance_uuid):
        with self._lock:
            self._spawning.pop(instance_uuid, None)

    def _report_spawned(self, ctxt, instance_uuid, node):
        """Tell the conductor the instance is active on ``node``; its
        answer (True, or False when the build is no longer placed there),
        or :data:`UNREPORTED` if it could not be told within
        :data:`REPORT_RETRY_SECONDS`."""
        deadline = time.monotonic() + REPORT_RETRY_SECONDS
        pause = 0.5
        while True:
            try:
                return self.conductor_api.instance_update(
                    ctxt, instance_uuid,
                    {'vm_state': 'active', 'task_state': None,
                     'launched_at': True}, host=self.host, node=node)
            except exception.NotFound:
                return False
            except exception.InvalidRequest:
                raise
            except Exception as error:
                if time.monotonic() + pause > deadline:
                    return UNREPORTED
                LOG.warning('Reporting the spawn of %s failed (%s); trying '
                            'again in %.1f s', instance_uuid,
                            type(error).__name__, pause)
                time.sleep(pause)
                pause = min(pause * 2, REPORT_RETRY_MAX_INTERVAL)

    def _track(self, instance_uuid, node, request_spec):
        with self._lock:
            # Runs from now on: from spawning to running in one step.
            self._spawning.pop(instance_uuid, None)
            self._instances[instance_uuid] = node
            self._projects[instance_uuid] = request_spec.obj_get(
                'project_id')
            self._specs[instance_uuid] = request_spec

    def _announce(self, ctxt, instance_uuid, request_spec):
        if CONF.filter_scheduler.track_instance_changes:
            self.scheduler_api.update_instance_info(
                ctxt, self.host,
                [instance_info_obj.InstanceInfo.from_spec(instance_uuid,
                                                          request_spec)])

    def _untrack(self, ctxt, instance_uuid):
        with self._lock:
            node = self._instances.pop(instance_uuid, None)
            self._projects.pop(instance_uuid, None)
            self._specs.pop(instance_uuid, None)
        if node is not None and \
                CONF.filter_scheduler.track_instance_changes:
            self.scheduler_api.delete_instance_info(ctxt, self.host,
                                                    instance_uuid)
        return node is not None

    # -- compute API 1.1: the conductor's move operations ------------------

    @rpc.expose
    @messaging.expected_exceptions(exception.MigrationPreCheckError,
                                   exception.InvalidRequest)
    def check_can_live_migrate_destination(self, ctxt, instance_uuid,
                                           node):
        validation.uuid('instance_uuid', instance_uuid)
        validation.name('node', node)
        if node not in self.nodes:
            raise exception.MigrationPreCheckError(
                reason='node %s is not run by %s' % (node, self.host))
        if self._fake('refuse_live_migration'):
            raise exception.MigrationPreCheckError(
                reason='%s refuses live migrations ([fake_virt] '
                       'refuse_live_migration)' % self.host)
        return True

    @rpc.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    def receive_instance(self, ctxt, instance_uuid, node, request_spec):
        validation.uuid('instance_uuid', instance_uuid)
        validation.name('node', node)
        validation.instance_of('request_spec', request_spec,
                               request_spec_obj.RequestSpec)
        request_spec.validate()
        if node not in self.nodes:
            raise exception.InvalidRequest(
                reason='node %s is not run by %s' % (node, self.host))
        self._track(instance_uuid, node, request_spec)
        LOG.info('Instance %s now runs on %s', instance_uuid, node)
        self._announce(ctxt, instance_uuid, request_spec)
        return True

    @rpc.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    def remove_instance(self, ctxt, instance_uuid):
        """Forget the instance; whether this agent ran it."""
        validation.uuid('instance_uuid', instance_uuid)
        removed = self._untrack(ctxt, instance_uuid)
        LOG.info('Instance %s left %s', instance_uuid, self.host)
        return removed

    # -- compute API 1.2 ---------------------------------------------------

    @rpc.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    def terminate_instance(self, ctxt, instance_uuid):
        """Forget an instance being deleted and tell the schedulers;
        whether this agent ran it. Asking again changes nothing."""
        validation.uuid('instance_uuid', instance_uuid)
        removed = self._untrack(ctxt, instance_uuid)
        LOG.info('Instance %s terminated on %s%s', instance_uuid, self.host,
                 '' if removed else ' (it was not running here)')
        return removed

    def _build_failed(self, ctxt, instance_uuid, node, request_spec,
                      host_list, reason):
        """Hand a failed build back to the conductor, which reschedules
        it onto its next alternate or ends it in ERROR. Until the
        conductor has it, the build still counts as spawning here, so a
        sync meanwhile does not take it for a lost message."""
        LOG.warning('Build of %s failed: %s', instance_uuid, reason)
        if node in self.nodes:
            start = self._configured_failed_builds()
            with self._lock:
                self._failed_builds[node] = self._failed_builds.get(
                    node, start) + 1
        if CONF.filter_scheduler.track_instance_changes:
            # The scheduler that chose this host counts the instance here.
            self.scheduler_api.delete_instance_info(ctxt, self.host,
                                                    instance_uuid)
        try:
            self.compute_task_api.build_instances(
                ctxt, [instance_uuid], request_spec, host_lists=[host_list],
                failure={'host': self.host, 'node': node, 'reason': reason})
        finally:
            self._spawn_ended(instance_uuid)


def _check_build(instance_uuid, node, request_spec, host_list):
    """The arguments of build_and_run_instance, checked."""
    validation.uuid('instance_uuid', instance_uuid)
    validation.name('node', node)
    validation.instance_of('request_spec', request_spec,
                           request_spec_obj.RequestSpec)
    request_spec.validate()
    for index, selection in enumerate(validation.objects(
            'host_list', host_list, selection_obj.Selection)):
        selection.validate('host_list[%d]' % index)
