"""Client side of the compute RPC API, and its version history.

Messages go to topic ``compute`` on the server named after the host, so
each cast reaches exactly the agent that runs the chosen node. A
super-conductor reaches the computes of a cell over that cell's broker:
``ComputeAPI(rpc.cell_transport(CONF, cell.transport_url))``.

API version history:

* 1.0 - Initial version: ``build_and_run_instance(instance_uuid, node,
  request_spec, host_list)``.
* 1.1 - Calls the conductor's move operations make:
  ``check_can_live_migrate_destination(instance_uuid, node)``,
  ``receive_instance(instance_uuid, node, request_spec)`` (the instance
  now runs on this host: after a migration, resize, live migration,
  evacuation, rebuild, unshelve or revert) and
  ``remove_instance(instance_uuid)`` (it left: confirm on the source,
  revert on the destination, the end of a live migration, an offload).
* 1.2 - ``terminate_instance(instance_uuid)``, a call: the instance is
  being deleted; the agent forgets it (idempotent).
"""

import oslo_messaging as messaging

from scheduler import conf
from scheduler import rpc

CONF = conf.CONF

RPC_TOPIC = 'compute'
RPC_API_VERSION = '1.2'


class ComputeAPI:
    def __init__(self, transport=None):
        # 1.0 methods are sent as 1.0 (newer ones prepare their version),
        # so that a cap at 1.0 still lets them through.
        target = messaging.Target(topic=RPC_TOPIC, version='1.0')
        self.client = rpc.get_client(
            target, version_cap=CONF.upgrade_levels.compute,
            transport=transport)

    def build_and_run_instance(self, ctxt, host, instance_uuid, node,
                               request_spec, host_list):
        """Cast a build to the compute on ``host``.

        ``host_list`` holds the alternates the compute hands back to the
        conductor if the build fails.
        """
        cctxt = self.client.prepare(server=host)
        cctxt.cast(ctxt, 'build_and_run_instance',
                   instance_uuid=instance_uuid, node=node,
                   request_spec=request_spec, host_list=host_list)

    def check_can_live_migrate_destination(self, ctxt, host, instance_uuid,
                                           node):
        """Ask ``host`` whether it can take the instance live; raises
        MigrationPreCheckError if not."""
        cctxt = self.client.prepare(server=host, version='1.1')
        return cctxt.call(ctxt, 'check_can_live_migrate_destination',
                          instance_uuid=instance_uuid, node=node)

    def receive_instance(self, ctxt, host, instance_uuid, node,
                         request_spec):
        """The instance now runs on ``host``/``node``."""
        cctxt = self.client.prepare(server=host, version='1.1')
        return cctxt.call(ctxt, 'receive_instance',
                          instance_uuid=instance_uuid, node=node,
                          request_spec=request_spec)

    def remove_instance(self, ctxt, host, instance_uuid):
        """The instance left ``host``."""
        cctxt = self.client.prepare(server=host, version='1.1')
        return cctxt.call(ctxt, 'remove_instance',
                          instance_uuid=instance_uuid)

    def terminate_instance(self, ctxt, host, instance_uuid):
        """The instance is being deleted: ``host`` forgets it."""
        cctxt = self.client.prepare(server=host, version='1.2')
        return cctxt.call(ctxt, 'terminate_instance',
                          instance_uuid=instance_uuid)
