"""Exceptions that cross module and RPC boundaries.

Every exception carries a message built from keyword arguments, so that the
text an operator reads names the thing that went wrong::

    raise exception.ComputeNodeNotFound(uuid=node_uuid)

Exceptions listed in ``@messaging.expected_exceptions`` on an RPC endpoint
reach the caller as themselves (oslo.messaging re-raises them by class name
when the module is importable on the client side).
"""


class GanttException(Exception):
    """Base class: ``msg_fmt`` is formatted with the keyword arguments."""

    msg_fmt = "An unknown error occurred."

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                message = self.msg_fmt
        self.message = message
        super().__init__(message)

    def __str__(self):
        return self.message


class ConfigError(GanttException):
    msg_fmt = "Configuration error: %(reason)s"


class PluginNotFound(ConfigError):
    msg_fmt = ("Unknown %(kind)s %(name)r. Available %(kind)ss: "
               "%(available)s")


class PluginLoadFailed(ConfigError):
    msg_fmt = "The %(kind)s %(name)r could not be loaded: %(reason)s"


class DatabaseUnavailable(GanttException):
    msg_fmt = "Cannot use the database at %(url)s: %(reason)s"


class DatabaseNotSynced(GanttException):
    msg_fmt = ("The database at %(url)s has no Gantt schema or an old one "
               "(at %(current)s, code expects %(expected)s); run "
               "'gantt-manage db sync'.")


class ApiDatabaseUnavailable(DatabaseUnavailable):
    msg_fmt = "Cannot use the API database at %(url)s: %(reason)s"


class ApiDatabaseNotSynced(DatabaseNotSynced):
    msg_fmt = ("The API database at %(url)s has no Gantt schema or an old "
               "one (at %(current)s, code expects %(expected)s); run "
               "'gantt-manage api_db sync'.")


class ApiDatabaseRequired(GanttException):
    msg_fmt = ("%(what)s needs cells: set [api_database] connection in the "
               "configuration files (and run 'gantt-manage api_db sync').")


class CellMappingNotFound(GanttException):
    msg_fmt = "Cell with uuid %(uuid)s was not found."


class MessagingUnavailable(GanttException):
    msg_fmt = "Cannot reach the message broker at %(url)s: %(reason)s"


class NoValidHost(GanttException):
    msg_fmt = "No valid host was found. %(reason)s"


class CrossCellMoveNotSupported(NoValidHost):
    """A move whose destination is in another cell than the instance
    (``cell`` and ``dest_cell`` say which, e.g. ``cell cell1``)."""

    msg_fmt = ("Instance %(uuid)s cannot move to host %(host)s: the "
               "instance is in %(cell)s and the host in %(dest_cell)s; "
               "moving a server to another cell is not supported.")


class MaxRetriesExceeded(NoValidHost):
    msg_fmt = "Exceeded maximum number of retries. %(reason)s"


class InvalidRequest(GanttException):
    """A malformed or inconsistent RPC payload; nothing was changed."""

    msg_fmt = "Invalid request: %(reason)s"


class InvalidResourceRequest(InvalidRequest):
    """A flavor or image asks for resources or traits in a form Nova's API
    refuses: an unknown resource class, a malformed trait name, an amount
    that is not a non-negative integer, a bad ``group_policy``. The reason
    names the extra spec or image property and its value."""

    msg_fmt = "Invalid resource request: %(reason)s"


class ResourceRequestRefused(NoValidHost):
    """A well-formed request that Placement refuses to search for (Nova
    then ends in NoValidHost): a group with traits but no resources,
    several suffixed groups without ``group_policy``, a trait both
    required and forbidden, no resources at all."""

    msg_fmt = ("No valid host was found. Placement refuses this resource "
               "request: %(reason)s")


class NotFound(GanttException):
    msg_fmt = "Resource could not be found."


class ComputeNodeNotFound(NotFound):
    msg_fmt = "Compute node %(ident)s could not be found."


class ServiceNotFound(NotFound):
    msg_fmt = "Service %(ident)s could not be found."


class InstanceNotFound(NotFound):
    msg_fmt = "Instance %(uuid)s could not be found."


class ClaimFailed(GanttException):
    msg_fmt = ("Claim of %(resources)s for instance %(instance)s on node "
               "%(node)s failed: the node no longer has room.")


class InstanceInvalidState(InvalidRequest):
    """The instance is not in a state the operation can start from."""

    msg_fmt = ("Cannot %(action)s instance %(uuid)s while it is in "
               "vm_state %(vm_state)s, task_state %(task_state)s.")


class MigrationNotFound(NotFound):
    msg_fmt = "No %(what)s migration found for instance %(uuid)s."


class HostNotFound(NotFound):
    msg_fmt = "Compute host %(host)s could not be found."


class ComputeServiceInUse(InvalidRequest):
    """Evacuation asked for a host whose compute service is still up."""

    msg_fmt = ("Compute service of %(host)s is still up; cannot evacuate "
               "instance %(uuid)s from it.")


class MigrationPreCheckError(GanttException):
    msg_fmt = "Migration pre-check error: %(reason)s"
