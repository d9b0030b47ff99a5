"""Client side of the conductor RPC APIs, and their version history.

Two APIs share the ``conductor`` topic:

ConductorAPI (no namespace), what compute agents call instead of SQL:

* 1.0 - Initial version: ``service_update``, ``compute_node_update``,
  ``instance_update``.

ComputeTaskAPI (namespace ``compute_task``), what API clients
(``gantt-manage``) and compute agents call:

* 1.0 - Initial version: ``build_instances(instance_uuids, request_spec,
  host_lists, failure)``.

Example::

    api = rpcapi.ComputeTaskAPI()
    api.build_instances(ctxt, [uuid], spec)   # a cast: returns at once
"""

import oslo_messaging as messaging

from scheduler import conf
from scheduler import rpc

CONF = conf.CONF

RPC_TOPIC = 'conductor'
CONDUCTOR_API_VERSION = '1.0'
COMPUTE_TASK_API_VERSION = '1.0'
COMPUTE_TASK_NAMESPACE = 'compute_task'


class ConductorAPI:
    """The database conduit for compute agents."""

    def __init__(self):
        target = messaging.Target(topic=RPC_TOPIC,
                                  version=CONDUCTOR_API_VERSION)
        self.client = rpc.get_client(
            target, version_cap=CONF.upgrade_levels.conductor)

    def service_update(self, ctxt, host, binary, topic):
        """Heartbeat of a service; answers ``{'disabled': bool}``."""
        return self.client.call(ctxt, 'service_update', host=host,
                                binary=binary, topic=topic)

    def compute_node_update(self, ctxt, host, nodes):
        """Report the inventory of a host's nodes.

        ``nodes`` is a list of ``{'uuid', 'nodename', 'inventory'}`` dicts,
        ``inventory`` holding fields of ``compute_nodes.INVENTORY_FIELDS``.
        """
        return self.client.call(ctxt, 'compute_node_update', host=host,
                                nodes=nodes)

    def instance_update(self, ctxt, instance_uuid, updates):
        """Record a compute's change of an instance (state, fault)."""
        return self.client.call(ctxt, 'instance_update',
                                instance_uuid=instance_uuid, updates=updates)


class ComputeTaskAPI:
    """Long-running compute operations the conductor sees through."""

    def __init__(self):
        target = messaging.Target(topic=RPC_TOPIC,
                                  namespace=COMPUTE_TASK_NAMESPACE,
                                  version=COMPUTE_TASK_API_VERSION)
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
