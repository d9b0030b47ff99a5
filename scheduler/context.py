"""The request context that travels with every RPC message.

A thin subclass of oslo.context's RequestContext, so that log lines carry the
request id across services::

    ctxt = context.get_admin_context()
    scheduler_api.select_destinations(ctxt, spec, [uuid])
"""

from oslo_context import context as o_context


class RequestContext(o_context.RequestContext):
    """Who asks, and the request id that ties the log lines together."""

    def elevated(self):
        ctxt = self.__class__.from_dict(self.to_dict())
        ctxt.is_admin = True
        return ctxt


def get_admin_context():
    return RequestContext(is_admin=True, overwrite=False)


def from_dict(values):
    return RequestContext.from_dict(values)
