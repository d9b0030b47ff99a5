"""Client side of the scheduler RPC API, and the API's version history.

The server (:class:`scheduler.manager.SchedulerManager`) imports
``RPC_API_VERSION`` from here; the number lives nowhere else.

API version history:

* 1.0 - Initial version. ``select_destinations(request_spec,
  filter_properties)`` takes Nova's legacy dicts and answers a list of
  ``{host, nodename, limits}`` dicts, one per instance.
* 1.1 - ``select_destinations(spec_obj, instance_uuids, return_objects,
  return_alternates)`` takes a RequestSpec object and, with
  ``return_objects``, answers one list of Selection objects per instance:
  the claimed host first, then up to ``max_attempts - 1`` alternates.

When ``[upgrade_levels] scheduler`` caps the client below a version, the
client steps down to the newest form under the cap (``can_send_version``)
and converts the answer, so callers always get lists of Selections::

    api = rpcapi.SchedulerAPI()
    selections = api.select_destinations(ctxt, spec, [uuid],
                                         return_alternates=True)
    first_choice = selections[0][0]
"""

import oslo_messaging as messaging

from scheduler import conf
from scheduler.objects import selection as selection_obj
from scheduler import rpc

CONF = conf.CONF

RPC_TOPIC = 'scheduler'
RPC_API_VERSION = '1.1'


class SchedulerAPI:
    """What a conductor calls on the schedulers."""

    def __init__(self):
        target = messaging.Target(topic=RPC_TOPIC, version='1.0')
        self.client = rpc.get_client(
            target, version_cap=CONF.upgrade_levels.scheduler)

    def select_destinations(self, ctxt, spec_obj, instance_uuids,
                            return_objects=True, return_alternates=False):
        """Ask a scheduler where to put the instances of ``spec_obj``.

        Raises NoValidHost (re-raised from the scheduler) when any instance
        cannot be placed; nothing is then claimed. With ``return_objects``
        (the default) answers ``[[Selection, ...], ...]``; otherwise the
        1.0 dicts.
        """
        if self.client.can_send_version('1.1'):
            cctxt = self.client.prepare(version='1.1')
            return cctxt.call(ctxt, 'select_destinations',
                              spec_obj=spec_obj,
                              instance_uuids=list(instance_uuids or []),
                              return_objects=return_objects,
                              return_alternates=return_alternates)
        cctxt = self.client.prepare(version='1.0')
        dests = cctxt.call(
            ctxt, 'select_destinations',
            request_spec=spec_obj.to_legacy_request_spec_dict(
                instance_uuids),
            filter_properties=spec_obj.to_legacy_filter_properties_dict())
        if not return_objects:
            return dests
        # 1.0 knows no alternates: one Selection per instance.
        return [[selection_obj.Selection(
            compute_node_uuid=None, service_host=dest['host'],
            nodename=dest['nodename'], limits=dest.get('limits') or {},
            allocation_request=None, claimed=True)] for dest in dests]
