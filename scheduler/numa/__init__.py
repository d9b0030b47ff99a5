"""NUMA fitting: guest NUMA requests onto host NUMA cells, in pure Python.

No SQL and no RPC here; the NUMA filter and the claim code call in. The
whole life of one request, with the JSON shapes of ``compute_nodes``
(``numa_topology``, ``numa_usage``) as ``HostState`` carries them::

    from scheduler.numa import (capacity, fitting, placement, prescreen,
                                request, usage)

    req = request.get_request(flavor.vcpus, flavor.memory_mb,
                              flavor.extra_specs, image_properties)
    if req is None:
        ...                      # no NUMA needs: every host passes
    need = prescreen.request_minimums(req)          # once per request
    limits = capacity.Limits(cpu_ratio, ram_ratio)
    have = prescreen.host_summary(host.numa_topology, host.numa_usage,
                                  limits)           # per host, cacheable
    if prescreen.meets_minimums(have, need):
        where = fitting.fit_instance(host.numa_topology, host.numa_usage,
                                     req, limits, cells_allowed=pci_ok)
    # claim, in the same conditional write as the other resources:
    new_usage = usage.apply_placement(host.numa_topology, stored_usage,
                                      where, limits)  # NUMAUsageConflict
    stored_placement = where.to_dict()
    # on delete / move:
    usage.release_placement(host.numa_topology, stored_usage,
                            placement.Placement.from_dict(stored_placement))

Modules: ``request`` (+ ``resources``, ``cpuspec``) parse the flavor and
image; ``topology`` reads host cells and usage; ``capacity`` holds the
per-cell checks; ``pinning`` the thread policies; ``fitting`` the search
over host cells; ``placement`` the result and its JSON; ``usage`` apply
and release; ``prescreen`` the vectorisable necessary conditions;
``errors`` what they raise.
"""
