"""Client side of the conductor RPC APIs, and their version history.

Two APIs share the ``conductor`` topic:

ConductorAPI (no namespace), what compute agents call instead of SQL:

* 1.0 - Initial version: ``service_update``, ``compute_node_update``,
  ``instance_update``.
* 1.1 - ``sync_instances(host, instances)``: the instances a compute runs
  (``{uuid: node}``); the conductor marks active the ones still building
  there and answers ``{'activated': [...], 'forget': [...]}``.
* 1.2 - ``service_update(host, binary, topic, version)``: the heartbeat
  says which service version the compute runs (``scheduler.version``);
  capped below 1.2 it is sent without.
* 1.3 - ``compute_node_update``'s inventories may hold the host's
  hardware: ``cpu_info``, ``disk_available_least``, ``numa_topology``,
  ``pci_device_pools`` (see :mod:`scheduler.host_cache.host_inputs`), and the
  ``initial_*_allocation_ratio`` a new node starts with. To a conductor
  capped below 1.3 the report goes as 1.0, without them (a new node then
  gets the conductor's ``initial_*`` ratios, through the claims'
  defaults).
* 1.4 - ``sync_instances(host, instances, spawning)``: ``instances``
  names only what runs (spawned, and reported so by the compute), and
  ``spawning`` the builds still under way, which the conductor never
  marks active (it only knows they arrived). A 1.1 sync cannot tell the
  two apart: the conductor then marks nothing active. To a conductor
  capped below 1.4 the compute sends its running instances alone.
  (``service_update`` may be sent with a shorter ``timeout``, client
  side only: a compute waiting for the conductor to come up asks every
  few seconds.)
* 1.5 - ``compute_node_update``'s nodes may hold ``inventories``
  (``{resource class: {total, reserved, min_unit, max_unit, step_size,
  allocation_ratio}}`` of the classes beyond VCPU, MEMORY_MB and DISK_GB,
  e.g. PCPU or a baremetal node's CUSTOM_* class) and ``traits`` (a list
  of names), which replace the node's. A node reported without them (a
  compute before 1.5) keeps the ones it has. To a conductor capped below
  1.5 the nodes go without them, as 1.3 (or 1.0).
* 1.6 - ``instance_update(instance_uuid, updates, host, node)``: a spawn
  report names where the compute spawned the instance, and counts only
  if the instance is building there. A build message that reached a
  compute after the instance moved on (it waited out a broker outage, or
  the broker delivered it twice) thus never makes the instance active
  where it is not placed; the compute forgets it. To a conductor capped
  below 1.6 the report goes as 1.0, without them.

ComputeTaskAPI (namespace ``compute_task``), what API clients
(``gantt-manage``) and compute agents call:

* 1.0 - Initial version: ``build_instances(instance_uuids, request_spec,
  host_lists, failure)``.
* 1.1 - Operations on existing servers, all calls that answer the
  instance as it is afterwards (a dict, with the ``migration`` they made):
  ``migrate_server(instance_uuid, flavor, live, host, force)`` (cold
  migrate, resize with a Flavor, live migrate), ``confirm_resize``,
  ``revert_resize``, ``rebuild_instance(instance_uuid, image, evacuate,
  host, force)``, ``shelve_instance``, ``unshelve_instance``.
* 1.2 - Added:

  * ``delete_instance(instance_uuid)``, a call: Nova's delete; answers
    the instance afterwards (``vm_state`` deleted, or still
    ``task_state`` deleting when its compute did not answer and the
    conductor finishes it later).
  * ``schedule_and_build_instances(instance_uuids, request_spec)``, a
    call that answers once the instances are recorded (the build is
    accepted) and schedules them in the background; asking again with
    the same request is safe.

Example::

    api = rpcapi.ComputeTaskAPI()
    api.schedule_and_build_instances(ctxt, [uuid], spec)  # recorded
    api.build_instances(ctxt, [uuid], spec)   # 1.0: a cast, nothing said
"""

from oslo_log import log as logging
import oslo_messaging as messaging

from scheduler import conf
from scheduler import exception
from scheduler import host_cache
from scheduler import rpc

CONF = conf.CONF
LOG = logging.getLogger(__name__)

RPC_TOPIC = 'conductor'
CONDUCTOR_API_VERSION = '1.6'
COMPUTE_TASK_API_VERSION = '1.2'
# How many times schedule_and_build_instances is sent again after a
# timeout (accepting is idempotent).
BUILD_CALL_RETRIES = 2
COMPUTE_TASK_NAMESPACE = 'compute_task'
# Inventory fields a conductor takes since ConductorAPI 1.3.
HARDWARE_FIELDS = frozenset(host_cache.REPORTED_FIELDS)
NEW_IN_1_3 = HARDWARE_FIELDS | frozenset(
    'initial_%s_allocation_ratio' % resource
    for resource in ('cpu', 'ram', 'disk'))
# Keys of a reported node a conductor takes since ConductorAPI 1.5.
NODE_KEYS_NEW_IN_1_5 = ('inventories', 'traits')


class ConductorAPI:
    """The database conduit for compute agents."""

    def __init__(self):
        # 1.0 methods are sent as 1.0 (newer ones prepare their version),
        # so that a cap at 1.0 still lets them through.
        target = messaging.Target(topic=RPC_TOPIC, version='1.0')
        self.client = rpc.get_client(
            target, version_cap=CONF.upgrade_levels.conductor)

    def service_update(self, ctxt, host, binary, topic, version=None,
                       timeout=None):
        """Heartbeat of a service running service ``version``; answers
        ``{'disabled': bool}``. ``timeout``: seconds to wait for the
        answer instead of ``[DEFAULT] rpc_response_timeout``."""
        options = {} if timeout is None else {'timeout': timeout}
        if version is not None and self.client.can_send_version('1.2'):
            return self.client.prepare(version='1.2', **options).call(
                ctxt, 'service_update', host=host, binary=binary,
                topic=topic, version=version)
        return self.client.prepare(**options).call(
            ctxt, 'service_update', host=host, binary=binary, topic=topic)

    def compute_node_update(self, ctxt, host, nodes):
        """Report the inventory of a host's nodes.

        ``nodes`` is a list of ``{'uuid', 'nodename', 'inventory'}`` dicts,
        ``inventory`` holding fields of ``compute_nodes.INVENTORY_FIELDS``,
        and (1.5) optionally ``inventories`` and ``traits``. What an older
        conductor would refuse is left out: ``inventories`` and
        ``traits`` below 1.5, the hardware and initial ratio fields (1.3)
        below 1.3.
        """
        if self.client.can_send_version('1.5'):
            return self.client.prepare(version='1.5').call(
                ctxt, 'compute_node_update', host=host, nodes=nodes)
        nodes = [{key: value for key, value in node.items()
                  if key not in NODE_KEYS_NEW_IN_1_5} for node in nodes]
        if self.client.can_send_version('1.3'):
            return self.client.prepare(version='1.3').call(
                ctxt, 'compute_node_update', host=host, nodes=nodes)
        nodes = [dict(node, inventory={
            name: value for name, value in node['inventory'].items()
            if name not in NEW_IN_1_3}) for node in nodes]
        return self.client.call(ctxt, 'compute_node_update', host=host,
                                nodes=nodes)

    def instance_update(self, ctxt, instance_uuid, updates, host=None,
                        node=None):
        """Record a compute's change of an instance (state, fault), made
        on ``host``/``node`` (1.6; left out below it)."""
        if host is not None and self.client.can_send_version('1.6'):
            return self.client.prepare(version='1.6').call(
                ctxt, 'instance_update', instance_uuid=instance_uuid,
                updates=updates, host=host, node=node)
        return self.client.call(ctxt, 'instance_update',
                                instance_uuid=instance_uuid, updates=updates)

    def sync_instances(self, ctxt, host, instances, spawning=()):
        """The instances ``host`` runs, ``{uuid: node}``, and the uuids
        it is still spawning (1.4); answers ``{'activated': [...],
        'forget': [...], 'lost': [...]}``, or None when the conductor is
        capped below 1.1 (nothing is sent). Below 1.4 the running
        instances go alone."""
        if self.client.can_send_version('1.4'):
            return self.client.prepare(version='1.4').call(
                ctxt, 'sync_instances', host=host, instances=instances,
                spawning=sorted(spawning))
        if not self.client.can_send_version('1.1'):
            return None
        return self.client.prepare(version='1.1').call(
            ctxt, 'sync_instances', host=host, instances=instances)


class ComputeTaskAPI:
    """Long-running compute operations the conductor sees through."""

    def __init__(self):
        target = messaging.Target(topic=RPC_TOPIC,
                                  namespace=COMPUTE_TASK_NAMESPACE,
                                  version='1.0')
        self.client = rpc.get_client(
            target, version_cap=CONF.upgrade_levels.conductor)

    def build_instances(self, ctxt, instance_uuids, request_spec,
                        host_lists=None, failure=None):
        """Build servers (a cast).

        A first build passes only ``instance_uuids`` and ``request_spec``.
        A compute whose build failed passes the instance, the alternates it
        was given (``host_lists``, one list of Selections) and ``failure``
        (``{'host', 'node', 'reason'}``), and the conductor reschedules.
        """
        self.client.cast(ctxt, 'build_instances',
                         instance_uuids=list(instance_uuids),
                         request_spec=request_spec, host_lists=host_lists,
                         failure=failure)

    def schedule_and_build_instances(self, ctxt, instance_uuids,
                                     request_spec):
        """1.2: build servers; returns once the conductor recorded them.

        Raises InvalidRequest (a bad request) or DatabaseUnavailable (the
        conductor's database is away) when the build is refused. If the
        conductor does not answer within ``rpc_response_timeout``, the
        call is sent again (the same request is accepted once); a
        MessagingTimeout after that leaves the outcome unknown.
        """
        if not self.client.can_send_version('1.2'):
            raise exception.InvalidRequest(
                reason='schedule_and_build_instances needs compute_task '
                       'API 1.2; [upgrade_levels] conductor caps it at %s'
                % CONF.upgrade_levels.conductor)
        cctxt = self.client.prepare(version='1.2')
        for attempt in range(BUILD_CALL_RETRIES + 1):
            try:
                return cctxt.call(ctxt, 'schedule_and_build_instances',
                                  instance_uuids=list(instance_uuids),
                                  request_spec=request_spec)
            except messaging.MessagingTimeout:
                if attempt == BUILD_CALL_RETRIES:
                    raise
                LOG.warning('No conductor answered the build of %s in '
                            'time; asking again', instance_uuids)

    # -- 1.1: operations on existing servers ---------------------------------

    def _call_1_1(self, ctxt, method, **kwargs):
        if not self.client.can_send_version('1.1'):
            raise exception.InvalidRequest(
                reason='%s needs compute_task API 1.1; [upgrade_levels] '
                       'conductor caps it at %s'
                % (method, CONF.upgrade_levels.conductor))
        return self.client.prepare(version='1.1').call(ctxt, method,
                                                       **kwargs)

    def migrate_server(self, ctxt, instance_uuid, flavor=None, live=False,
                       host=None, force=False):
        """Move a server; answers the instance afterwards.

        Cold migration without ``flavor``, resize with one (both end in
        ``resized`` until confirm or revert); ``live`` migration ends
        ``active`` on the new host. ``host`` requests a destination, which
        the filters check unless ``force`` (live migration only).
        """
        return self._call_1_1(ctxt, 'migrate_server',
                              instance_uuid=instance_uuid, flavor=flavor,
                              live=live, host=host, force=force)

    def confirm_resize(self, ctxt, instance_uuid):
        """Keep the new host: drop the source's claim."""
        return self._call_1_1(ctxt, 'confirm_resize',
                              instance_uuid=instance_uuid)

    def revert_resize(self, ctxt, instance_uuid):
        """Go back to the source: drop the destination's claim."""
        return self._call_1_1(ctxt, 'revert_resize',
                              instance_uuid=instance_uuid)

    def rebuild_instance(self, ctxt, instance_uuid, image=None,
                         evacuate=False, host=None, force=False):
        """Rebuild in place (with ``image``, an ImageMeta), or evacuate
        from a host whose compute service is down (to ``host`` if given,
        checked by the filters unless ``force``)."""
        return self._call_1_1(ctxt, 'rebuild_instance',
                              instance_uuid=instance_uuid, image=image,
                              evacuate=evacuate, host=host, force=force)

    def shelve_instance(self, ctxt, instance_uuid):
        return self._call_1_1(ctxt, 'shelve_instance',
                              instance_uuid=instance_uuid)

    def unshelve_instance(self, ctxt, instance_uuid):
        return self._call_1_1(ctxt, 'unshelve_instance',
                              instance_uuid=instance_uuid)

    # -- 1.2 --------------------------------------------------------------

    def delete_instance(self, ctxt, instance_uuid):
        """Delete a server and release everything it holds; answers the
        instance afterwards. Deleting a deleted server answers it again."""
        if not self.client.can_send_version('1.2'):
            raise exception.InvalidRequest(
                reason='delete_instance needs compute_task API 1.2; '
                       '[upgrade_levels] conductor caps it at %s'
                % CONF.upgrade_levels.conductor)
        return self.client.prepare(version='1.2').call(
            ctxt, 'delete_instance', instance_uuid=instance_uuid)
