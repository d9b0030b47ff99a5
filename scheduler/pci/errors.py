"""Exceptions of PCI passthrough: bad aliases, bad requests, lost races.

Which base each one has decides how the services report it:

* :class:`PciInvalidAlias` and :class:`PciConfigInvalidSpec` are
  :class:`scheduler.exception.ConfigError`: the operator's ``[pci]
  alias`` or ``device_spec`` is wrong, and no request can fix it.
* The request errors (:class:`PciRequestAliasNotDefined`,
  :class:`PciInvalidRequest`, :class:`InvalidPCINUMAAffinity`,
  :class:`ImagePCINUMAPolicyForbidden`) are
  :class:`scheduler.exception.InvalidRequest`, an expected exception of
  every scheduler RPC method: the caller gets them back as invalid input
  and nothing changes.
* :class:`PciPoolInvalid` and :class:`PciUsageInvalid` mean a host
  reported, or a claim wrote, something the PCI code cannot read.
* :class:`PciDevicesUnavailable` is a
  :class:`scheduler.exception.ClaimFailed`: a usage delta no longer fits
  the pools, because another claim took the devices first.

Example::

    try:
        usage = pools.apply(usage, delta, host_pools)
    except errors.PciDevicesUnavailable:
        ...  # lost the race: try the next host
"""

from scheduler import exception


class PciInvalidAlias(exception.ConfigError):
    msg_fmt = "Invalid PCI alias definition %(alias)s: %(reason)s"


class PciConfigInvalidSpec(exception.ConfigError):
    msg_fmt = "Invalid [pci] device_spec %(spec)s: %(reason)s"


class PciRequestAliasNotDefined(exception.InvalidRequest):
    msg_fmt = ("PCI alias %(alias)r of flavor extra spec "
               "pci_passthrough:alias is not defined in [pci] alias")


class PciInvalidRequest(exception.InvalidRequest):
    msg_fmt = ("Invalid flavor extra spec pci_passthrough:alias "
               "%(value)r: %(reason)s")


class InvalidPCINUMAAffinity(exception.InvalidRequest):
    msg_fmt = ("Invalid PCI NUMA affinity policy %(policy)r in %(where)s; "
               "valid policies: %(valid)s")


class ImagePCINUMAPolicyForbidden(exception.InvalidRequest):
    msg_fmt = ("Image property hw_pci_numa_affinity_policy=%(image)r may "
               "not override flavor extra spec "
               "hw:pci_numa_affinity_policy=%(flavor)r")


class PciPoolInvalid(exception.GanttException):
    msg_fmt = "Invalid PCI device pool %(pool)r: %(reason)s"


class PciUsageInvalid(exception.GanttException):
    msg_fmt = "Invalid PCI usage for pool %(key)s: %(reason)s"


class PciDevicesUnavailable(exception.ClaimFailed):
    msg_fmt = ("PCI devices of pool %(key)s no longer fit: %(wanted)d more "
               "wanted, %(free)d of %(count)d free")
