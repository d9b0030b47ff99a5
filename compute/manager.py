"""ComputeManager: the fake-virt agent's RPC endpoint.

At start it reports its nodes' inventory to the conductor, then again every
``UPDATE_RESOURCES_INTERVAL`` seconds with its instance counts; its
heartbeat also goes through the conductor. ``build_and_run_instance``
"spawns" at once (or after ``[fake_virt] spawn_time``) and reports ACTIVE;
a failed build (``[fake_virt] build_failure_rate``) goes back to the
conductor with the alternates, which reschedules it.

The schedulers hear of the instances on this host (scheduler RPC API 1.3,
fanout casts) when ``[filter_scheduler] track_instance_changes`` is on:
``update_instance_info`` after a spawn, ``delete_instance_info`` when a
build fails here (the scheduler recorded the instance when it claimed),
and every ``[filter_scheduler] scheduler_instance_sync_interval`` seconds
``sync_instance_info`` with every instance this agent runs.
"""

import random
import threading
import time
import uuid as uuid_lib

import oslo_messaging as messaging
from oslo_log import log as logging

from compute import rpcapi as compute_rpcapi
from conductor import rpcapi as conductor_rpcapi
from scheduler import conf
from scheduler import context as gantt_context
from scheduler.objects import instance_info as instance_info_obj
from scheduler import rpcapi as scheduler_rpcapi
from scheduler import service

CONF = conf.CONF
LOG = logging.getLogger(__name__)

BINARY = 'gantt-compute'

# Seconds between instance syncs when the option says 0 ("the default
# interval of periodic tasks", as in Nova).
DEFAULT_SYNC_INTERVAL = 60

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
        """``capacity`` (``{'vcpus', 'memory_mb', 'local_gb'}``) and
        ``build_failure_rate`` override ``[fake_virt]`` for this agent, so
        one process can run unlike hosts (the demo and the tests do)."""
        self.host = host or CONF.host
        self.nodes = node_names(self.host, CONF.fake_virt.node_count)
        self.capacity = dict(capacity or {})
        self.build_failure_rate = build_failure_rate
        self._instances = {}   # instance uuid -> node
        self._lock = threading.Lock()
        self.conductor_api = None
        self.compute_task_api = None
        self.scheduler_api = None

    def init_host(self):
        self.conductor_api = conductor_rpcapi.ConductorAPI()
        self.compute_task_api = conductor_rpcapi.ComputeTaskAPI()
        self.scheduler_api = scheduler_rpcapi.SchedulerAPI()

    def heartbeat(self):
        self.conductor_api.service_update(gantt_context.get_admin_context(),
                                          self.host, BINARY,
                                          compute_rpcapi.RPC_TOPIC)

    def periodic_tasks(self):
        # Runs at once and then periodically, so that a conductor that
        # comes up after this agent still gets the inventory.
        sync_interval = (CONF.filter_scheduler.scheduler_instance_sync_interval
                         or DEFAULT_SYNC_INTERVAL)
        return [service.PeriodicTask('update_available_resource',
                                     CONF.report_interval,
                                     self.update_available_resource,
                                     run_immediately=True),
                service.PeriodicTask('sync_scheduler_instance_info',
                                     sync_interval,
                                     self.sync_scheduler_instance_info)]

    def sync_scheduler_instance_info(self, context):
        """Tell the schedulers every instance this agent runs."""
        if not CONF.filter_scheduler.track_instance_changes:
            return
        with self._lock:
            uuids = sorted(self._instances)
        self.scheduler_api.sync_instance_info(context, self.host, uuids)

    def _inventory(self, nodename):
        fake = CONF.fake_virt
        with self._lock:
            count = sum(1 for n in self._instances.values() if n == nodename)
        return {
            'vcpus': self.capacity.get('vcpus', fake.vcpus),
            'memory_mb': self.capacity.get('memory_mb', fake.memory_mb),
            'local_gb': self.capacity.get('local_gb', fake.local_gb),
            'reserved_vcpus': CONF.reserved_host_cpus,
            'reserved_memory_mb': CONF.reserved_host_memory_mb,
            'reserved_disk_gb': -(-CONF.reserved_host_disk_mb // 1024),
            'hypervisor_type': fake.hypervisor_type,
            'hypervisor_version': fake.hypervisor_version,
            'host_ip': fake.host_ip,
            'supported_instances': [['x86_64', fake.hypervisor_type, 'hvm']],
            'stats': {'num_instances': count},
            'num_instances': count,
            'io_workload': 0,
        }

    def update_available_resource(self, context):
        nodes = [{'uuid': node_uuid(self.host, name), 'nodename': name,
                  'inventory': self._inventory(name)} for name in self.nodes]
        self.conductor_api.compute_node_update(context, self.host, nodes)
        LOG.debug('Reported %d node(s) of %s', len(nodes), self.host)

    def build_and_run_instance(self, ctxt, instance_uuid, node,
                               request_spec, host_list):
        if node not in self.nodes:
            self._build_failed(ctxt, instance_uuid, node, request_spec,
                               host_list, 'node %s is not run by %s'
                               % (node, self.host))
            return
        if CONF.fake_virt.spawn_time:
            time.sleep(CONF.fake_virt.spawn_time)
        failure_rate = (CONF.fake_virt.build_failure_rate
                        if self.build_failure_rate is None
                        else self.build_failure_rate)
        if random.random() < failure_rate:
            self._build_failed(ctxt, instance_uuid, node, request_spec,
                               host_list, 'fake spawn failure on %s' % node)
            return
        with self._lock:
            self._instances[instance_uuid] = node
        self.conductor_api.instance_update(
            ctxt, instance_uuid,
            {'vm_state': 'active', 'task_state': None, 'launched_at': True})
        LOG.info('Spawned instance %s on %s', instance_uuid, node)
        if CONF.filter_scheduler.track_instance_changes:
            self.scheduler_api.update_instance_info(
                ctxt, self.host,
                [instance_info_obj.InstanceInfo.from_spec(instance_uuid,
                                                          request_spec)])

    def _build_failed(self, ctxt, instance_uuid, node, request_spec,
                      host_list, reason):
        LOG.warning('Build of %s failed: %s', instance_uuid, reason)
        if CONF.filter_scheduler.track_instance_changes:
            # The scheduler that chose this host counts the instance here.
            self.scheduler_api.delete_instance_info(ctxt, self.host,
                                                    instance_uuid)
        self.compute_task_api.build_instances(
            ctxt, [instance_uuid], request_spec, host_lists=[host_list],
            failure={'host': self.host, 'node': node, 'reason': reason})
