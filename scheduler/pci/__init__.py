"""PCI passthrough: aliases, the requests of a flavor, and host pools.

Pure Python, no SQL and no RPC; the filter
(:mod:`scheduler.filters.pci_passthrough_filter`) and the claims use it.

* :mod:`scheduler.pci.alias` parses ``[pci] alias`` into named device
  specs;
* :mod:`scheduler.pci.request` turns a flavor's ``pci_passthrough:alias``
  extra spec into :class:`scheduler.pci.request.PciRequest` tuples;
* :mod:`scheduler.pci.pools` decides whether a host's device pools can
  serve requests, and which devices a claim takes or gives back;
* :mod:`scheduler.pci.errors` holds their exceptions.

Example::

    requests = request.requests_from_spec(spec)
    if pools.supports(host.pci_device_pools, host.pci_usage, requests):
        delta = pools.allocate(host.pci_device_pools, host.pci_usage,
                               requests)
"""
