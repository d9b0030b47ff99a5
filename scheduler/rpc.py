"""RPC plumbing shared by every Gantt service: transport, servers, clients.

One transport per process, built from ``[DEFAULT] transport_url`` by
:func:`init`. Servers and clients come from the factories below, which add
the serializer that carries versioned objects and the request context, and
:class:`ExposedRPCAccessPolicy`: only the methods of an endpoint marked
with :func:`expose` (the methods of its versioned RPC API) can be called
remotely, never its lifecycle hooks (``init_host``, ``periodic_tasks``...)
nor a ``_private`` method. Asking for any other gets oslo.messaging's
``NoSuchMethod`` (or ``UnsupportedVersion``) back::

    class Manager:
        target = messaging.Target(version='1.0')

        @rpc.expose
        @messaging.expected_exceptions(exception.InvalidRequest)
        def service_update(self, ctxt, host, binary, topic):
            ...

``expose`` also binds the incoming arguments to the method's signature
first: a missing or unknown argument is refused with InvalidRequest
naming it (logged at ERROR, which is all a cast's sender ever gets)
instead of the method failing with a TypeError.

Servers and clients::

    from scheduler import rpc
    rpc.init(CONF)
    server = rpc.get_server(messaging.Target(topic='scheduler', server=host),
                            [manager])
    client = rpc.get_client(messaging.Target(topic='scheduler',
                                             version='1.1'),
                            version_cap=CONF.upgrade_levels.scheduler)

``fake://`` (the in-process transport of oslo.messaging) serves the
all-in-one demo and unit tests; ``rabbit://`` the real deployment. A
message on a queue that cannot be decoded is counted and logged in one
line per queue and minute (:mod:`scheduler.undecodable_messages`).
"""

import functools
import inspect
import logging as std_logging
import threading

from oslo_config import cfg
import oslo_messaging as messaging
from oslo_messaging.rpc import server as rpc_server
from oslo_log import log as logging
from oslo_service import backend as service_backend

from scheduler import config
from scheduler import context as gantt_context
from scheduler import exception
from scheduler.objects import base as objects_base
from scheduler import rpc_routes
from scheduler import transport_url
from scheduler import undecodable_messages

LOG = logging.getLogger(__name__)

TRANSPORT = None
# Transports of other brokers (cells' transport_url) by URL.
_CELL_TRANSPORTS = {}
_cell_transports_lock = threading.Lock()
NOTIFIER = None

# Exceptions of these modules reach RPC callers as themselves.
ALLOWED_EXMODS = ['scheduler.exception', 'scheduler.pci.errors']

# The topic of the start-up probe's cast; nothing consumes it.
PROBE_TOPIC = 'gantt-broker-probe'
# oslo.messaging's AMQP listeners (an RPC server's, a client's reply
# waiter) drain the broker connection with a timeout of 1 ms after each
# message, doubled at each wake-up with nothing read, up to 5 s: other
# threads may have queued acknowledgements that only the listener may
# send (kombu is not thread-safe). RPC requests and replies are
# acknowledged by the listener itself as they arrive, so under a steady
# load those wake-ups find nothing to do, and each is a trip through
# kombu's and oslo.messaging's timeout handling: a scheduler worker's
# listeners spent about a quarter less CPU per request with this floor
# (benchmarks/README.md, session 19). The timeout still doubles from it
# to 5 s when idle; a message wakes the listener at once whatever it is.
LISTENER_WAKEUP_FLOOR = 0.1
_DRIVER_LOGGER = 'oslo.messaging._drivers.impl_rabbit'


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


class ServerSerializer(RequestContextSerializer):
    """What RPC servers deserialize with: an argument that cannot be read
    (an unknown object, or a version of one this service does not serve)
    is refused in one ERROR line, and the caller of a call gets the
    InvalidRequest saying why. oslo.messaging would log it with its
    traceback, as it logs any unexpected exception of a dispatch."""

    def deserialize_entity(self, ctxt, entity):
        try:
            return super().deserialize_entity(ctxt, entity)
        except exception.InvalidRequest as error:
            LOG.error('Refused an RPC message: %s', error)
            # Expected: the caller reads it, the server logs no trace.
            raise messaging.ExpectedException()


# The attribute :func:`expose` sets on an RPC method.
EXPOSED_ATTR = 'gantt_rpc_exposed'


def expose(func):
    """Mark ``func`` as a method of a versioned RPC API (see the module
    docstring); unmarked endpoint methods are never dispatched."""
    method = _innermost(func)
    signature = inspect.signature(method)
    keywords, required = _keyword_arguments(signature)

    @functools.wraps(method)
    def exposed(self, ctxt, *args, **kwargs):
        # oslo.messaging passes the arguments by name: when they are
        # known names and the required ones are there, the call binds
        # (the common case, without building a binding).
        given = kwargs.keys()
        if args or keywords is None or not (
                given <= keywords and required <= given):
            _bind(signature, method, self, ctxt, args, kwargs)
        return func(self, ctxt, *args, **kwargs)

    setattr(exposed, EXPOSED_ATTR, True)
    return exposed


def _keyword_arguments(signature):
    """``(names, required)``: the arguments after ``self`` and ``ctxt``
    that may be given by name, and those without a default; ``(None,
    None)`` when the method takes ``**kwargs`` or an argument that only
    a position can give."""
    names, required = set(), set()
    for parameter in list(signature.parameters.values())[2:]:
        if parameter.kind in (parameter.VAR_KEYWORD,
                              parameter.POSITIONAL_ONLY):
            return None, None
        if parameter.kind == parameter.VAR_POSITIONAL:
            continue
        names.add(parameter.name)
        if parameter.default is parameter.empty:
            required.add(parameter.name)
    return frozenset(names), frozenset(required)


def _bind(signature, method, self, ctxt, args, kwargs):
    """Refuse a call whose arguments ``method`` does not take."""
    try:
        signature.bind(self, ctxt, *args, **kwargs)
    except TypeError as error:
        LOG.error('Refused RPC method %s: %s', method.__name__, error)
        try:
            raise exception.InvalidRequest(
                reason='%s: %s' % (method.__name__, error))
        except exception.InvalidRequest:
            # Expected: the caller reads it, the server logs no trace.
            raise messaging.ExpectedException()


def _innermost(func):
    """The method under its decorators. ``functools.wraps`` leaves it in
    ``__wrapped__``; oslo.messaging's ``expected_exceptions`` only in its
    closure, as ``func``."""
    while True:
        inner = getattr(func, '__wrapped__', None)
        if inner is None and func.__closure__:
            inner = inspect.getclosurevars(func).nonlocals.get('func')
        if not callable(inner):
            return func
        func = inner


class ExposedRPCAccessPolicy(messaging.RPCAccessPolicyBase):
    """Dispatch only the endpoint methods :func:`expose` marked, and never
    one whose name starts with ``_``."""

    def is_allowed(self, endpoint, method):
        if not isinstance(method, str) or method.startswith('_'):
            return False
        return getattr(getattr(endpoint, method, None), EXPOSED_ATTR,
                       False) is True


def init(conf, check_broker=False, url=None):
    """Create the process's transport from ``[DEFAULT] transport_url``
    (or ``url`` when given).

    With ``check_broker`` an AMQP broker is probed (:func:`probe_broker`),
    so that a daemon started against an unreachable broker exits with a
    clear message instead of retrying silently.
    """
    global TRANSPORT
    if TRANSPORT is not None:
        return TRANSPORT
    TRANSPORT = _transport(conf, url, transport_url.OPTION if url is None
                           else 'transport URL')
    fewer_listener_wakeups()
    undecodable_messages.install()
    if check_broker:
        try:
            probe_broker(conf, url or conf.transport_url)
        except exception.MessagingUnavailable:
            cleanup()
            raise
    return TRANSPORT


def _transport(conf, url, option):
    """An RPC transport for ``url`` (None: ``[DEFAULT] transport_url``);
    ConfigError naming ``option`` for a URL oslo.messaging would misread
    or refuses, MessagingUnavailable for a driver it cannot load."""
    given = url or conf.transport_url
    transport_url.check(given, option)
    try:
        return messaging.get_rpc_transport(
            conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
    except cfg.NoSuchOptError as error:
        raise transport_url.query_error(given, error, option)
    except (messaging.InvalidTransportURL,
            messaging.DriverLoadFailure) as error:
        raise exception.MessagingUnavailable(
            url=config.redact_transport_url(given),
            reason=config.scrub(str(error), [given]))
    except ValueError as error:
        raise transport_url.parse_error(given, error, option)


def fewer_listener_wakeups():
    """Raise oslo.messaging's AMQP listeners' first timeout after a
    message to :data:`LISTENER_WAKEUP_FLOOR` (see there); False (and a
    warning) if this oslo.messaging keeps it elsewhere."""
    from oslo_messaging._drivers import amqpdriver
    floor = getattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN', None)
    if not isinstance(floor, (int, float)):
        LOG.warning('oslo.messaging has no ACK_REQUEUE_EVERY_SECONDS_MIN: '
                    'its AMQP listeners keep their own wake-up timeout')
        return False
    if floor < LISTENER_WAKEUP_FLOOR:
        amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN = LISTENER_WAKEUP_FLOOR
    return True


def probe_broker(conf, transport_url):
    """Send one message through a transport of its own; raise
    MessagingUnavailable if the broker cannot take it.

    The probe is a cast to :data:`PROBE_TOPIC`, which no server consumes
    (the broker drops it), so it connects exactly as every later call
    does: TLS and the other ``[oslo_messaging_rabbit]`` options, and each
    host of a ``rabbit://`` URL with several. ``retry`` bounds it to one
    more attempt per host, so an unreachable broker fails in seconds
    instead of oslo.messaging's endless reconnect loop.
    """
    url = messaging.TransportURL.parse(conf, transport_url)
    if url.transport not in ('rabbit', 'amqp', 'kombu'):
        return
    # A transport of its own, closed before returning: a connection left
    # in the process's pool would be shared by the workers forked next.
    transport = messaging.get_rpc_transport(
        conf, url=transport_url, allowed_remote_exmods=ALLOWED_EXMODS)
    client = messaging.get_rpc_client(
        transport, messaging.Target(topic=PROBE_TOPIC))
    # The driver logs each failed attempt as an ERROR; the one error the
    # caller raises says it all.
    driver_log = std_logging.getLogger(_DRIVER_LOGGER)
    level = driver_log.level
    driver_log.setLevel(std_logging.CRITICAL)
    try:
        client.prepare(retry=max(1, len(url.hosts))).cast({}, 'probe')
    except Exception as error:
        # kombu's and amqp's own errors as much as oslo.messaging's.
        raise exception.MessagingUnavailable(
            url=config.redact_transport_url(transport_url),
            reason=config.scrub('%s: %s' % (type(error).__name__, error),
                                [transport_url]))
    finally:
        transport.cleanup()
        driver_log.setLevel(level)


def cell_transport(conf, url):
    """The transport of the broker at ``url`` (a cell's
    ``transport_url``), made at first use and kept for the process;
    the process's own for None."""
    if url is None:
        assert TRANSPORT is not None, 'rpc.init() was not called'
        return TRANSPORT
    with _cell_transports_lock:
        transport = _CELL_TRANSPORTS.get(url)
        if transport is None:
            try:
                transport = messaging.get_rpc_transport(
                    conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
            except (messaging.InvalidTransportURL,
                    messaging.DriverLoadFailure, ValueError) as error:
                raise exception.MessagingUnavailable(
                    url=config.redact_transport_url(url),
                    reason=config.scrub(str(error), [url]))
            _CELL_TRANSPORTS[url] = transport
        return transport


def cleanup():
    global TRANSPORT
    with _cell_transports_lock:
        for transport in _CELL_TRANSPORTS.values():
            transport.cleanup()
        _CELL_TRANSPORTS.clear()
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


class IdleAwareRPCServer(rpc_server.RPCServer):
    """An RPC server that calls ``on_idle()`` (if set) when it has
    handled and answered the last message it had in flight: work that
    may wait for a quiet moment but should not delay a reply."""

    on_idle = None

    def __init__(self, transport, target, dispatcher, *args, **kwargs):
        super().__init__(transport, target, dispatcher, *args, **kwargs)
        self._busy = 0
        self._busy_lock = threading.Lock()
        # Requests may come only through the control exchange (and
        # these methods through the fanout): see rpc_routes.
        self._route = (target, transport.conf.control_exchange,
                       rpc_routes.fanout_methods(dispatcher.endpoints))

    def _process_incoming(self, incoming):
        reason = rpc_routes.refusal(*self._route, incoming[0])
        if reason:
            rpc_routes.drop(incoming[0], reason)
            return None
        with self._busy_lock:
            self._busy += 1
        try:
            return super()._process_incoming(incoming)
        finally:
            with self._busy_lock:
                self._busy -= 1
                idle = self._busy == 0
            if idle and self.on_idle is not None:
                try:
                    self.on_idle()
                except Exception:
                    LOG.exception('Idle work after a reply failed')


def get_server(target, endpoints, on_idle=None, serializer=None):
    """An RPC server for ``target``; start() it to consume.

    ``on_idle``: called in the thread that sent a reply, when no other
    message is being handled (see :class:`IdleAwareRPCServer`).
    ``serializer``: the wire's, when not Gantt's objects (Nova mode's,
    :class:`scheduler.nova.wire.NovaSerializer`).
    """
    assert TRANSPORT is not None, 'rpc.init() was not called'
    kwargs = {}
    if _executor() == 'eventlet':
        kwargs['executor'] = 'eventlet'
    server = messaging.get_rpc_server(
        TRANSPORT, target, endpoints,
        serializer=serializer or ServerSerializer(
            objects_base.GanttObjectSerializer()),
        access_policy=ExposedRPCAccessPolicy,
        server_cls=IdleAwareRPCServer, **kwargs)
    server.on_idle = on_idle
    return server


def server_connected(server):
    """Whether ``server``'s connection to the broker is up, from the
    state its AMQP driver keeps (no message is sent): True or False, or
    None when the driver does not say (``fake://``, a server not
    started, an oslo.messaging that keeps it elsewhere)."""
    try:
        listener = server.listener._poll_style_listener
        # The driver's pooled connection, then kombu's.
        connected = listener.conn.connection.connection.connected
    except Exception:
        return None
    return connected if isinstance(connected, bool) else None


def get_client(target, version_cap=None, transport=None):
    """An RPC client for ``target`` capped at ``version_cap`` if given,
    on ``transport`` (default: the process's own)."""
    assert TRANSPORT is not None, 'rpc.init() was not called'
    return messaging.get_rpc_client(transport or TRANSPORT, target,
                                    version_cap=version_cap,
                                    serializer=get_serializer())
