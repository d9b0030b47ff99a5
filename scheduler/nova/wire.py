"""The oslo.messaging serializer of Nova's scheduler wire.

Nova's conductor, API and computes send ``nova_object`` primitives and
Nova's request context; they read Nova Selection primitives back. The
:class:`NovaSerializer` of the Nova-mode RPC server:

* decodes each argument's ``nova_object`` primitives into
  :class:`scheduler.nova.primitives.NovaObject` values (the endpoint
  turns those into Gantt's objects). An argument it refuses (another
  namespace, an unknown major version, malformed) is logged in one ERROR
  line and the caller of a call gets the reason as Nova's NoValidHost;
* passes the answers through: the endpoint already made them Nova's
  primitives (:mod:`scheduler.nova.selections`);
* reads Nova's context (``nova.context.RequestContext.to_dict``: oslo's
  keys plus ``read_deleted``, ``timestamp``, ``service_catalog``...)
  as Gantt's, keeping who asks and the request ids that tie the logs of
  both together::

    server = rpc.get_server(target, [manager],
                            serializer=wire.NovaSerializer())
"""

import oslo_messaging as messaging
from oslo_log import log as logging

from scheduler import context as gantt_context
from scheduler import exception
from scheduler.nova import errors
from scheduler.nova import primitives

LOG = logging.getLogger(__name__)

# The keys of Nova's context dict that Gantt's context reads; the others
# (the service catalog, a timestamp, Nova's read_deleted) stay behind.
CONTEXT_KEYS = ('user', 'user_id', 'project', 'project_id', 'domain',
                'user_domain', 'project_domain', 'is_admin', 'read_only',
                'show_deleted', 'auth_token', 'request_id',
                'global_request_id', 'resource_uuid', 'roles',
                'user_name', 'project_name', 'is_admin_project',
                'system_scope', 'user_identity')


def context_from_nova(values):
    """Gantt's RequestContext of Nova's context dict; a context with no
    identity when ``values`` is not a dict (a cast has no one to tell)."""
    if not isinstance(values, dict):
        LOG.warning('A Nova RPC message carried no context dict')
        return gantt_context.RequestContext(overwrite=False)
    kept = {key: values[key] for key in CONTEXT_KEYS if key in values}
    if kept.get('user_id') is None:
        kept['user_id'] = kept.get('user')
    if kept.get('project_id') is None:
        kept['project_id'] = kept.get('project')
    ctxt = gantt_context.RequestContext.from_dict(kept)
    # Nova's notifications carry the caller's context as Nova sent it.
    ctxt.nova_values = dict(values)
    # from_dict makes a context the thread's current one; a server
    # thread's next message sets its own.
    return ctxt


def _entity_field(entity):
    if isinstance(entity, dict):
        name = entity.get(primitives.PREFIX + 'name')
        if isinstance(name, str):
            return name
    return 'argument'


class NovaSerializer(messaging.Serializer):
    """See the module docstring."""

    def serialize_entity(self, ctxt, entity):
        return entity

    def deserialize_entity(self, ctxt, entity):
        try:
            return primitives.decode(entity, _entity_field(entity))
        except exception.InvalidRequest as error:
            LOG.error('Refused a Nova RPC message: %s', error)
            try:
                raise errors.for_nova(error)
            except errors.NoValidHost:
                # Expected: the caller reads it, no traceback is logged.
                raise messaging.ExpectedException()

    def serialize_context(self, ctxt):
        return ctxt.to_dict()

    def deserialize_context(self, ctxt):
        return context_from_nova(ctxt)
