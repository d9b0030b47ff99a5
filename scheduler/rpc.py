"""RPC plumbing shared by every Gantt service: transport, servers, clients.

One transport per process, built from ``[DEFAULT] transport_url`` by
:func:`init`. Servers and clients come from the factories below, which add
the serializer that carries versioned objects and the request context, and
``DefaultRPCAccessPolicy`` so that ``_private`` methods of an endpoint can
never be called remotely::

    from scheduler import rpc
    rpc.init(CONF)
    server = rpc.get_server(messaging.Target(topic='scheduler', server=host),
                            [manager])
    client = rpc.get_client(messaging.Target(topic='scheduler',
                                             version='1.1'),
                            version_cap=CONF.upgrade_levels.scheduler)

``fake://`` (the in-process transport of oslo.messaging) serves the
all-in-one demo and unit tests; ``rabbit://`` the real deployment.
"""

import kombu
import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_service import backend as service_backend

from scheduler import config
from scheduler import context as gantt_context
from scheduler import exception
from scheduler.objects import base as objects_base

LOG = logging.getLogger(__name__)

TRANSPORT = None
NOTIFIER = None

# Exceptions of these modules reach RPC callers as themselves.
ALLOWED_EXMODS = ['scheduler.exception']

# How long start-up waits for the broker before giving up with a clear error.
BROKER_CHECK_TIMEOUT = 10


class RequestContextSerializer(messaging.Serializer):
    """Serialize the Gantt request context; delegate entities to ``base``."""

    def __init__(self, base):
        self._base = base

    def serialize_entity(self, ctxt, entity):
        return self._base.serialize_entity(ctxt, entity)

    def deserialize_entity(self, ctxt, entity):
        return self._base.deserialize_entity(ctxt, entity)

    def serialize_context(self, ctxt):
        return ctxt.to_dict()

    def deserialize_context(self, ctxt):
        return gantt_context.from_dict(ctxt)


def init(conf, check_broker=False, url=None):
    """Create the process's transport from ``[DEFAULT] transport_url``
    (or ``url`` when given).

    With ``check_broker`` an AMQP broker is probed first, so that a daemon
    started against an unreachable broker exits with a clear message
    instead of retrying silently.
    """
    global TRANSPORT
    if TRANSPORT is not None:
        return TRANSPORT
    try:
        TRANSPORT = messaging.get_rpc_transport(
            conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
    except (messaging.InvalidTransportURL,
            messaging.DriverLoadFailure) as error:
        raise exception.MessagingUnavailable(
            url=config.redact_url(url or conf.transport_url), reason=error)
    if check_broker:
        probe_broker(conf, url or conf.transport_url)
    return TRANSPORT


def probe_broker(conf, transport_url):
    """Connect once to an AMQP broker; raise MessagingUnavailable if down."""
    url = messaging.TransportURL.parse(conf, transport_url)
    if url.transport not in ('rabbit', 'amqp', 'kombu'):
        return
    for host in url.hosts or [None]:
        amqp_url = 'amqp://%s:%s@%s:%s/%s' % (
            getattr(host, 'username', None) or 'guest',
            getattr(host, 'password', None) or 'guest',
            getattr(host, 'hostname', None) or 'localhost',
            getattr(host, 'port', None) or 5672,
            url.virtual_host or '')
        connection = kombu.Connection(amqp_url,
                                      connect_timeout=BROKER_CHECK_TIMEOUT)
        try:
            connection.ensure_connection(max_retries=1,
                                         timeout=BROKER_CHECK_TIMEOUT)
            return
        except Exception as error:
            last_error = error
        finally:
            connection.release()
    raise exception.MessagingUnavailable(
        url=config.redact_url(transport_url),
        reason='%s: %s' % (type(last_error).__name__, last_error))


def cleanup():
    global TRANSPORT
    if TRANSPORT is not None:
        TRANSPORT.cleanup()
        TRANSPORT = None


def _executor():
    if service_backend.get_backend_type() == \
            service_backend.BackendType.EVENTLET:
        return 'eventlet'
    return 'threading'


def get_serializer():
    return RequestContextSerializer(objects_base.GanttObjectSerializer())


def get_server(target, endpoints):
    """An RPC server for ``target``; start() it to consume."""
    assert TRANSPORT is not None, 'rpc.init() was not called'
    kwargs = {}
    if _executor() == 'eventlet':
        kwargs['executor'] = 'eventlet'
    return messaging.get_rpc_server(
        TRANSPORT, target, endpoints, serializer=get_serializer(),
        access_policy=messaging.DefaultRPCAccessPolicy, **kwargs)


def get_client(target, version_cap=None):
    """An RPC client for ``target`` capped at ``version_cap`` if given."""
    assert TRANSPORT is not None, 'rpc.init() was not called'
    return messaging.get_rpc_client(TRANSPORT, target,
                                    version_cap=version_cap,
                                    serializer=get_serializer())
