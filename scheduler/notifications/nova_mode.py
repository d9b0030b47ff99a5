"""Nova mode's ``scheduler.select_destinations`` notifications: what Nova
34's nova-scheduler sends, for the same request, on the same topics.

In Nova mode (``[scheduler] backend = nova``) Gantt replaces
nova-scheduler in an unchanged Nova deployment, so whatever reads Nova's
notifications (Ceilometer, a billing or audit consumer, Nova's own
functional samples) must find them unchanged too. Around each
``select_destinations`` the Nova-mode RPC endpoint calls
:func:`select_destinations` with the request as it came on the wire: the
RequestSpec's ``nova_object`` primitive and the context dict. Following
``[notifications] notification_format`` (Nova's option, Nova's default
``unversioned``):

* ``unversioned``: the legacy ``{"request_spec": {...}}``, publisher
  ``scheduler.<host>``, to ``[oslo_messaging_notifications] topics``;
* ``versioned``: RequestSpecPayload 1.1 (namespace ``nova``), publisher
  ``nova-scheduler:<host>``, to ``[notifications]
  versioned_notifications_topics``;
* ``both``: the legacy one, then the versioned one, for each phase.

Priority INFO, event type ``scheduler.select_destinations.<phase>``; the
payloads are built by :mod:`~scheduler.notifications.nova_payloads` and
:mod:`~scheduler.notifications.nova_legacy`. The context they carry is
the redacted copy oslo.messaging makes of Nova's (no token, no catalog, a
new timestamp). Nothing is sent unless ``[oslo_messaging_notifications]
driver`` is set, and sending goes through the process's background
sender (:mod:`scheduler.notifications.sender`), so a broker that is away
never holds up a request. A spec that cannot be read is logged, never
raised. Nova notifies after its request filters changed the spec: where
Gantt's equivalents require aggregates, :func:`require_aggregates` makes
the same change to the primitive::

    spec_primitive = nova_mode.require_aggregates(spec_primitive, uuids)
    nova_mode.select_destinations(ctxt_dict, spec_primitive, 'start')
    ... schedule ...
    nova_mode.select_destinations(ctxt_dict, spec_primitive, 'end')

When, as in Nova 34: ``start`` once the request filters passed and
Placement offered candidates (a request refused before that, NoValidHost
included, sends nothing; a rebuild skips both checks), ``end`` once hosts
were selected and claimed (a request that then fails sends no ``end``).
"""

import threading

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_serialization import jsonutils

from scheduler import notifications
from scheduler.notifications import nova_legacy
from scheduler.notifications import nova_payloads

LOG = logging.getLogger(__name__)

PHASES = ('start', 'end')
# Nova's publishers: the versioned notifications name the binary, the
# legacy ones the service.
VERSIONED_PUBLISHER = 'nova-scheduler:%s'
LEGACY_PUBLISHER = 'scheduler.%s'
# The Destination a Nova 34 request filter makes when the spec has none.
DESTINATION_VERSION = '1.4'

_lock = threading.Lock()
_notifiers = {'transport': None, 'versioned': None, 'legacy': None}


class JsonSerializer(messaging.Serializer):
    """What Nova's notifiers serialize with: payloads through
    ``jsonutils.to_primitive``, the context through its ``to_dict``."""

    def serialize_entity(self, ctxt, entity):
        return jsonutils.to_primitive(entity, convert_instances=True)

    def deserialize_entity(self, ctxt, entity):
        return entity

    def serialize_context(self, ctxt):
        return ctxt.to_dict()

    def deserialize_context(self, ctxt):
        return ctxt


class NovaContext:
    """A request context as it came from Nova (its dict form), as
    oslo.messaging's notifier wants one: it sends ``redacted_copy()``."""

    def __init__(self, values):
        self.values = values

    def redacted_copy(self):
        return _Values(nova_legacy.notification_context(self.values))

    def to_dict(self):
        return self.values


class _Values:
    def __init__(self, values):
        self.values = values

    def to_dict(self):
        return self.values


def _get_notifiers():
    """Nova mode's notifiers on the process's notification transport, for
    the formats asked for: ``(versioned, legacy)``, None for a format that
    is off."""
    transport = notifications.transport()
    with _lock:
        if _notifiers['transport'] is not transport:
            _notifiers.update(transport=transport, versioned=None,
                              legacy=None)
            if transport is not None:
                serializer = JsonSerializer()
                if notifications.versioned_enabled():
                    _notifiers['versioned'] = messaging.Notifier(
                        transport, serializer=serializer,
                        topics=transport.conf.notifications
                        .versioned_notifications_topics)
                if notifications.legacy_enabled():
                    _notifiers['legacy'] = messaging.Notifier(
                        transport, serializer=serializer)
        return _notifiers['versioned'], _notifiers['legacy']


def require_aggregates(spec, aggregates):
    """``spec`` (a RequestSpec primitive, not changed) as Nova's request
    filters leave it when they require one of ``aggregates`` (uuids):
    nova-scheduler notifies after its filters ran, so a zone mapped to
    aggregates (``map_az_to_placement_aggregate``, always on), a tenant's
    aggregates or a routed network's show in the notification's
    ``requested_destination``. Call once per filter that required
    aggregates, in the filters' order, as Nova's
    ``Destination.require_aggregates``."""
    data = dict(nova_payloads.object_data(spec, 'RequestSpec'))
    destination = data.get('requested_destination')
    if destination is None:
        destination = {'nova_object.name': 'Destination',
                       'nova_object.namespace': nova_payloads.NAMESPACE,
                       'nova_object.version': DESTINATION_VERSION,
                       'nova_object.data': {}}
    destination_data = dict(nova_payloads.object_data(
        destination, 'Destination', 'request_spec.requested_destination'))
    destination_data['aggregates'] = list(
        destination_data.get('aggregates') or []) + [','.join(aggregates)]
    data['requested_destination'] = dict(
        destination, **{'nova_object.data': destination_data})
    return dict(spec, **{'nova_object.data': data})


def build(context, spec, phase, versioned=True, legacy=True):
    """The notifications Nova sends for ``spec`` at ``phase``, in Nova's
    order: a list of ``(kind, event_type, payload)``, ``kind`` being
    ``legacy`` or ``versioned``. Raises InvalidRequest for a spec that is
    not a Nova RequestSpec primitive, ValueError for an unknown phase."""
    if phase not in PHASES:
        raise ValueError('phase must be one of %s, not %r'
                         % (', '.join(PHASES), phase))
    event_type = 'scheduler.select_destinations.%s' % phase
    built = []
    if legacy:
        # Nova's versioned payload fills the NUMA topology's and PCI
        # requests' instance uuid in the spec itself, at start: the
        # legacy .end shows it.
        payload = nova_legacy.request_spec(
            spec, context, uuid_filled=versioned and phase == 'end')
        built.append(('legacy', event_type, payload))
    if versioned:
        built.append(('versioned', event_type,
                      nova_payloads.request_spec_payload(spec)))
    return built


def select_destinations(context, spec, phase, host=None):
    """Send Nova's ``scheduler.select_destinations.<phase>`` for a
    request: ``context`` the request context's dict (as on the wire),
    ``spec`` the RequestSpec's ``nova_object`` primitive, ``host`` the
    publisher's host (``[DEFAULT] host`` when None). Never raises."""
    if not notifications.enabled():
        return
    try:
        versioned, legacy = _get_notifiers()
        if versioned is None and legacy is None:
            return
        if not isinstance(context, dict):
            context = context.to_dict()
        host = host or notifications.host()
        ctxt = NovaContext(context)
        publishers = {
            'versioned': (versioned, VERSIONED_PUBLISHER % host),
            'legacy': (legacy, LEGACY_PUBLISHER % host)}
        for kind, event_type, payload in build(
                context, spec, phase, versioned=versioned is not None,
                legacy=legacy is not None):
            notifier, publisher = publishers[kind]
            notifications.queue(notifier.prepare(publisher_id=publisher),
                                'info', ctxt, event_type, payload)
    except Exception:
        LOG.exception('Could not build Nova notification '
                      'scheduler.select_destinations.%s', phase)
