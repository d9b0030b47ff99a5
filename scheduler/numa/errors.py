"""Errors raised by the NUMA fitting library.

Two families, on purpose:

* A malformed or contradictory NUMA request (flavor extra specs or image
  properties) is the caller's fault: those errors subclass
  :class:`scheduler.exception.InvalidRequest`, so the RPC layer reports
  them as invalid input and nothing is changed. Each message names the key
  and the value at fault::

      raise errors.InvalidNUMARequest(key='hw:numa_nodes', value='two',
                                      reason='must be an integer >= 1')

* Host data that cannot be read, and a placement that no longer fits the
  usage it is applied to (a lost race between two claims), are not
  request errors; they subclass :class:`scheduler.exception.GanttException`.
"""

from scheduler import exception


class InvalidNUMARequest(exception.InvalidRequest):
    """One flavor extra spec or image property has a bad value."""

    msg_fmt = "Invalid NUMA request: %(key)s=%(value)r: %(reason)s"


class NUMARequestConflict(exception.InvalidRequest):
    """Two settings (flavor vs image, or two keys) contradict each other."""

    msg_fmt = "Conflicting NUMA request: %(reason)s"


class InvalidCPUSpec(InvalidNUMARequest):
    """A CPU list such as ``0-3,^2`` could not be parsed."""


class InvalidHostNUMATopology(exception.GanttException):
    """The NUMA topology or usage reported for a host is malformed."""

    msg_fmt = "Invalid host NUMA data: %(reason)s"


class InvalidNUMAPlacement(exception.GanttException):
    """A stored instance NUMA placement could not be read back."""

    msg_fmt = "Invalid NUMA placement: %(reason)s"


class NUMAUsageConflict(exception.GanttException):
    """A placement does not fit (or cannot be released from) a usage.

    The claim code relies on this to detect that another claim took the
    resources first.
    """

    msg_fmt = "NUMA usage conflict on host cell %(cell)s: %(reason)s"
