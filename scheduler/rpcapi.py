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
* 1.2 - Fanout casts ``update_aggregates(aggregates)`` (a list of
  Aggregate objects, each in its whole new state) and
  ``delete_aggregate(aggregate)``: every scheduler applies an aggregate
  change at once instead of at its next host cache refresh.
* 1.3 - Fanout casts from compute agents about the instances on their
  host: ``update_instance_info(host_name, instance_info)`` (InstanceInfo
  objects), ``delete_instance_info(host_name, instance_uuid)`` and
  ``sync_instance_info(host_name, instance_uuids)``, after which a
  scheduler whose view of the host differs reads it from SQL.

When ``[upgrade_levels] scheduler`` caps the client below a version, the
client steps down to the newest form under the cap (``can_send_version``)
and converts the answer, so callers always get lists of Selections::

    api = rpcapi.SchedulerAPI()
    selections = api.select_destinations(ctxt, spec, [uuid],
                                         return_alternates=True)
    first_choice = selections[0][0]

The fanout casts reach every scheduler process; a client capped below
their version sends nothing, and the schedulers see the change at their
next host cache refresh (``[scheduler] host_state_refresh_interval``)::

    api.update_aggregates(ctxt, [aggregate.Aggregate.from_db(agg)])
"""

import oslo_messaging as messaging
from oslo_log import log as logging

from scheduler import conf
from scheduler.objects import selection as selection_obj
from scheduler import rpc

CONF = conf.CONF
LOG = logging.getLogger(__name__)

RPC_TOPIC = 'scheduler'
# How many times select_destinations is sent again after a timeout.
SELECT_DESTINATIONS_RETRIES = 1
RPC_API_VERSION = '1.3'
# The methods a scheduler accepts through its fanout exchange
# (``scheduler_fanout``); any other sent that way is dropped unread
# (see scheduler.rpc_routes).
FANOUT_METHODS = frozenset({'update_aggregates', 'delete_aggregate',
                            'update_instance_info', 'delete_instance_info',
                            'sync_instance_info'})


class SchedulerAPI:
    """What a conductor calls on the schedulers."""

    def __init__(self):
        target = messaging.Target(topic=RPC_TOPIC, version='1.0')
        self.client = rpc.get_client(
            target, version_cap=CONF.upgrade_levels.scheduler)

    def select_destinations(self, ctxt, spec_obj, instance_uuids,
                            return_objects=True, return_alternates=False):
        """Ask a scheduler where to put the instances of ``spec_obj``.

        If no scheduler answers within ``rpc_response_timeout`` (one may
        have stopped or died with the request in hand), the request is sent
        once more: claims are keyed on the instance UUIDs and replace any
        an earlier copy made, so asking twice never claims twice. The
        rabbit driver gives a call's message a time-to-live equal to its
        timeout, so the first copy, if no scheduler took it, expires in
        the broker as the second is sent; a copy taken by a scheduler that
        died is gone with it. (One window stays open: a scheduler that
        took the first copy just before it expired and answers after the
        second copy was placed replaces that placement's claim. ``gantt-
        manage db check`` does not see this; the instance then runs on a
        host other than its claim's.)
        """
        for attempt in range(SELECT_DESTINATIONS_RETRIES + 1):
            try:
                return self._select_destinations_once(
                    ctxt, spec_obj, instance_uuids, return_objects,
                    return_alternates)
            except messaging.MessagingTimeout:
                if attempt == SELECT_DESTINATIONS_RETRIES or \
                        not instance_uuids:
                    raise
                LOG.warning('No scheduler answered select_destinations for '
                            '%s in time; asking again', instance_uuids)

    def _select_destinations_once(self, ctxt, spec_obj, instance_uuids,
                                  return_objects, return_alternates):
        """One select_destinations call.

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

    def _fanout(self, ctxt, version, method, **kwargs):
        """Cast ``method`` to every scheduler; False if the version cap
        forbids it (the schedulers then learn of it from SQL)."""
        if not self.client.can_send_version(version):
            LOG.debug('Not casting %s: [upgrade_levels] scheduler is below '
                      '%s; schedulers see the change at their next refresh',
                      method, version)
            return False
        cctxt = self.client.prepare(fanout=True, version=version)
        cctxt.cast(ctxt, method, **kwargs)
        return True

    def update_aggregates(self, ctxt, aggregates):
        """Tell every scheduler the new state of ``aggregates`` (Aggregate
        objects). Returns whether anything was sent."""
        return self._fanout(ctxt, '1.2', 'update_aggregates',
                            aggregates=list(aggregates))

    def delete_aggregate(self, ctxt, aggregate):
        """Tell every scheduler that ``aggregate`` is gone."""
        return self._fanout(ctxt, '1.2', 'delete_aggregate',
                            aggregate=aggregate)

    def update_instance_info(self, ctxt, host_name, instance_info):
        """Tell every scheduler about instances new on ``host_name`` (a
        list of InstanceInfo objects)."""
        return self._fanout(ctxt, '1.3', 'update_instance_info',
                            host_name=host_name,
                            instance_info=list(instance_info))

    def delete_instance_info(self, ctxt, host_name, instance_uuid):
        """Tell every scheduler that an instance left ``host_name``."""
        return self._fanout(ctxt, '1.3', 'delete_instance_info',
                            host_name=host_name, instance_uuid=instance_uuid)

    def sync_instance_info(self, ctxt, host_name, instance_uuids):
        """Tell every scheduler which instances ``host_name`` runs."""
        return self._fanout(ctxt, '1.3', 'sync_instance_info',
                            host_name=host_name,
                            instance_uuids=list(instance_uuids))
