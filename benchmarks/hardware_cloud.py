"""Hosts with NUMA cells and PCI devices, and requests that ask for them.

The ``--filters hardware`` set of ``select_destinations.py``: the default
filters plus NUMATopologyFilter and PciPassthroughFilter, with ``[pci]
alias`` set. Each host reports a NUMA topology of two cells (8-16 shared
and 8-16 dedicated CPUs per cell, in sibling pairs on three hosts in
four, memory in 4 KiB and 2 MiB pages; a few hundred shapes) and about
one host in three a pool of 2-8 devices of one alias on one cell. Half
of the hosts start with usage that claims could have made: random NUMA
and PCI requests fitted with :mod:`scheduler.hardware` and applied one
after the other, so that no two hosts hold the same usage::

    rng = random.Random(42)
    report = hardware_cloud.host_report(rng)        # inventory fields
    usage = hardware_cloud.initial_usage(rng, report)  # {} or columns
    kind, spec = hardware_cloud.make_spec(rng, flavors)

Requests are a mix (``kind``): ``plain`` (no NUMA, no PCI), ``numa``
(``hw:cpu_policy=dedicated`` with 2-8 vCPUs, some of them
``hw:cpu_thread_policy=isolate``; ``hw:mem_page_size=2MB``;
``hw:numa_nodes=2``) and ``pci`` (``pci_passthrough:alias``, some of
them pinned too).
"""

import json

from scheduler import conf
from scheduler import hardware
from scheduler.objects import request_spec

CONF = conf.CONF
FILTERS = list(CONF.filter_scheduler.enabled_filters) + [
    'NUMATopologyFilter', 'PciPassthroughFilter']
ALIASES = {
    'qat': {'vendor_id': '8086', 'product_id': '0443'},
    'gpu': {'vendor_id': '10de', 'product_id': '1eb8'},
}
# The ratios the hosts report, and the setup's fits use.
CPU_RATIO = 4.0
RAM_RATIO = 1.0
KINDS = ('plain', 'numa', 'pci')


def alias_options():
    """``[pci] alias`` values, one JSON object per alias."""
    return [json.dumps(dict(ids, name=name, device_type='type-PCI'))
            for name, ids in sorted(ALIASES.items())]


def _cell(cell_id, first_cpu, shared, dedicated, memory_mb, huge_mb,
          smt=True):
    cpus = list(range(first_cpu, first_cpu + shared + dedicated))
    return {
        'id': cell_id,
        'cpuset': cpus[:shared],
        'pcpuset': cpus[shared:],
        'memory_mb': memory_mb,
        'siblings': [cpus[index:index + 2]
                     for index in range(0, len(cpus), 2)] if smt else [],
        'mempages': [{'size_kb': 4, 'total': (memory_mb - huge_mb) * 256},
                     {'size_kb': 2048, 'total': huge_mb // 2}],
    }


def numa_topology(rng):
    """Two cells alike: shared and dedicated CPUs, memory, huge pages;
    hyperthread siblings on three hosts in four (``isolate`` guests go
    to the others, as in Nova)."""
    shared = rng.choice((8, 10, 12, 14, 16))
    dedicated = rng.choice((8, 10, 12, 14, 16))
    memory_mb = rng.choice((32768, 65536, 131072))
    huge_mb = rng.choice((0, 4096, 8192, 16384))
    smt = rng.random() >= 0.25
    per_cell = shared + dedicated
    return {'cells': [
        _cell(cell, cell * per_cell, shared, dedicated, memory_mb, huge_mb,
              smt)
        for cell in (0, 1)]}


def pci_pools(rng):
    """One pool of 2-8 devices of one alias on one cell, on about a third
    of the hosts; none on the others."""
    if rng.random() >= 1 / 3:
        return None
    ids = ALIASES[rng.choice(sorted(ALIASES))]
    return [dict(ids, numa_node=rng.choice((0, 1)),
                 count=rng.randint(2, 8), tags={'dev_type': 'type-PCI'})]


def host_report(rng):
    """Inventory fields of one host: sizes that agree with its cells."""
    topology = numa_topology(rng)
    cells = topology['cells']
    report = {
        'vcpus': sum(len(c['cpuset']) + len(c['pcpuset']) for c in cells),
        'memory_mb': sum(c['memory_mb'] for c in cells),
        'numa_topology': topology,
        'cpu_allocation_ratio': CPU_RATIO,
        'ram_allocation_ratio': RAM_RATIO,
    }
    pools = pci_pools(rng)
    if pools:
        report['pci_device_pools'] = pools
    return report


def initial_usage(rng, report):
    """``{'numa_usage': ..., 'pci_usage': ...}`` after up to eight random
    requests were fitted and applied, on half of the hosts; {} on the
    others."""
    if rng.random() < 0.5:
        return {}
    host = hardware.Host(report['numa_topology'], None,
                         report.get('pci_device_pools') or [], {},
                         CPU_RATIO, RAM_RATIO)
    for _ in range(rng.randint(1, 8)):
        kind, spec = make_spec(rng, ((1, 2048, 20),))
        wanted = hardware.Request.from_spec(spec)
        record = None if wanted is None else wanted.fit(host)
        if record is not None:
            host = host._replace(**hardware.apply(host, record))
    return {name: value for name, value in (
        ('numa_usage', host.numa_usage), ('pci_usage', host.pci_usage))
        if value}


def _numa_extra_specs(rng):
    """vCPUs, memory and extra specs of one NUMA request."""
    shape = rng.random()
    if shape < 0.45:
        vcpus = rng.randint(2, 8)
        specs = {'hw:cpu_policy': 'dedicated'}
        if rng.random() < 0.3:
            specs['hw:cpu_thread_policy'] = 'isolate'
        return vcpus, rng.choice((2048, 4096, 8192)), specs
    if shape < 0.75:
        return (rng.choice((2, 4)), rng.choice((2048, 4096, 8192)),
                {'hw:mem_page_size': '2MB'})
    specs = {'hw:numa_nodes': '2'}
    if rng.random() < 0.5:
        specs['hw:cpu_policy'] = 'dedicated'
    return rng.choice((4, 8)), rng.choice((4096, 8192, 16384)), specs


def make_spec(rng, flavors):
    """``(kind, RequestSpec)`` of one request of the mix; plain requests
    take one of ``flavors`` (``(vcpus, memory_mb, root_gb)``)."""
    draw = rng.random()
    if draw < 0.4:
        kind = 'plain'
        vcpus, memory_mb, root_gb = rng.choice(flavors)
        extra_specs = {}
    elif draw < 0.8:
        kind = 'numa'
        vcpus, memory_mb, extra_specs = _numa_extra_specs(rng)
        root_gb = 20
    else:
        kind = 'pci'
        vcpus, memory_mb, root_gb = 2, 4096, 20
        extra_specs = {'pci_passthrough:alias':
                       '%s:%d' % (rng.choice(sorted(ALIASES)),
                                  rng.choice((1, 1, 2)))}
        if rng.random() < 0.5:
            extra_specs['hw:cpu_policy'] = 'dedicated'
    flavor = request_spec.Flavor(vcpus=vcpus, memory_mb=memory_mb,
                                 root_gb=root_gb, extra_specs=extra_specs)
    return kind, request_spec.RequestSpec(flavor=flavor, num_instances=1)
