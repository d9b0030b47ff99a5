"""Options of the fake-virt compute agent (``[fake_virt]``, reserved space).

The compute agent is the demo's and the tests' stand-in for nova-compute: it
spawns nothing, but reports nodes with the capacity set here.
"""

from oslo_config import cfg

reserved_opts = [
    cfg.IntOpt('reserved_host_memory_mb',
               default=512,
               min=0,
               help="""
Memory in MB kept for the host itself, never given to instances.
"""),
    cfg.IntOpt('reserved_host_disk_mb',
               default=0,
               min=0,
               help="""
Disk space in MB kept for the host itself, never given to instances.
"""),
    cfg.BoolOpt('allow_resize_to_same_host',
                default=False,
                help="""
Allow a cold migration or resize to choose the host the instance is on.

Useful with a single compute host. The source host is then one of the
candidates, held by the filters and weighers like any other.
"""),
    cfg.IntOpt('shelved_offload_time',
               default=0,
               min=-1,
               help="""
Seconds a shelved instance keeps its host before it is offloaded.

An offloaded instance (vm_state ``shelved_offloaded``) holds no claim; it is
scheduled afresh when unshelved.

Possible values:

* -1: never offload; the instance keeps its claim until unshelved.
* 0: offload at once (the default).
* A positive integer: offload that many seconds after shelving (checked by
  the conductor's periodic task).
"""),
    cfg.IntOpt('instance_build_timeout',
               default=0,
               min=0,
               help="""
Seconds an instance may stay in ``building`` before the conductor gives up
on it: its claims are released and it goes to ERROR with the reason.

Nova's name, group and default (0: never). Where Nova's compute checks the
instances on its own host, Gantt's conductor checks every instance, placed
or not. Set it (to a few times the longest build, 600 say) so that the
claim of a build that was never sent (a conductor that died between the
claim and the cast) does not hold its host's capacity for ever; left at
0, such an instance stays ``building`` with its claim until it is
deleted, as in Nova.

With cells, a super-conductor also puts in cell0, in ERROR, a build
request that no super-conductor works on any more and that was accepted
longer ago than this (``[conductor] build_request_grace_period``).

Possible values:

* 0: never time builds out (the default).
* A positive integer: seconds since the instance was created (for a
  build request, since it was accepted).

Related options:

* ``[conductor] build_request_grace_period``
* ``sync_power_state_interval``: keep it well below this timeout.
"""),
    cfg.IntOpt('sync_power_state_interval',
               default=60,
               min=-1,
               help="""
Seconds between a compute's syncs of its instances with the conductor.

Each sync sends the instances the compute runs, with their nodes; the
conductor marks ``active`` those it still has ``building`` on this host (a
spawn report that was lost to a database or broker outage), and answers
which ones the compute should forget (deleted, unknown, or timed out in
ERROR). A spawn report that fails is also retried at once, with backoff;
the sync is what repairs the rest, so a running instance reaches its true
state within this interval after the outage ends.

Nova's option of this name syncs power states, every 600 s by default.
Gantt's default is 60 s: it must stay well below ``[DEFAULT]
instance_build_timeout`` when that is set, or a build whose report was
lost could be timed out while it runs.

Possible values:

* -1 or 0: never sync.
* A positive integer: seconds between syncs.

Related options:

* ``instance_build_timeout``
"""),
    cfg.IntOpt('reserved_host_cpus',
               default=0,
               min=0,
               help="""
Number of physical CPUs kept for the host itself, never given to instances.
"""),
]

fake_virt_group = cfg.OptGroup(
    'fake_virt',
    title='Fake virt driver options',
    help="The nodes a gantt-compute agent pretends to run.")

fake_virt_opts = [
    cfg.IntOpt('node_count',
               default=1,
               min=1,
               help="""
Number of compute nodes this agent reports.

With one node its name is ``host``; with more, ``<host>-<n>``.
"""),
    cfg.IntOpt('vcpus', default=16, min=1,
               help="Physical CPUs of each node."),
    cfg.IntOpt('memory_mb', default=65536, min=1,
               help="Memory of each node, in MB."),
    cfg.IntOpt('local_gb', default=1000, min=1,
               help="Local disk of each node, in GB."),
    cfg.StrOpt('hypervisor_type', default='fake',
               help="Hypervisor type reported for each node."),
    cfg.IntOpt('hypervisor_version', default=1000,
               help="Hypervisor version reported for each node."),
    cfg.StrOpt('host_ip', default='127.0.0.1',
               help="IP address reported for the nodes of this host."),
    cfg.ListOpt('supported_instances',
                default=[],
                help="""
Instance types each node supports, as ``arch:hypervisor_type:vm_mode``.

What ImagePropertiesFilter compares with an image's ``hw_architecture``,
``img_hv_type`` and ``hw_vm_mode``.

Possible values:

* Empty (the default): ``x86_64:<hypervisor_type>:hvm``.
* A list such as ``x86_64:kvm:hvm,aarch64:kvm:hvm``.
"""),
    cfg.DictOpt('stats',
                default={},
                help="""
Extra stats each node reports, as ``key:value`` pairs.

The agent reports ``num_instances``, ``num_vm_active``,
``num_proj_<project>``, ``io_workload`` and ``failed_builds`` itself; the
keys given here are added (ComputeCapabilitiesFilter and JsonFilter read
them). A ``failed_builds`` given here is where the agent's count starts.
"""),
    cfg.DictOpt('metrics',
                default={},
                help="""
Metrics each node reports, as ``name:value`` pairs with numeric values.

What MetricsFilter and MetricsWeigher read, e.g. ``cpu.percent:12.5``.
"""),
    cfg.IntOpt('io_workload',
               default=0,
               min=0,
               help="""
I/O-heavy operations each node reports beyond its builds in progress.

The agent reports the builds it is running plus this number; IoOpsFilter
and IoOpsWeigher read it.
"""),
    cfg.StrOpt('cpu_info',
               help="""
The host CPU each node reports, as a JSON object in libvirt's shape.

ComputeCapabilitiesFilter reads it (``capabilities:cpu_info:features``,
``capabilities:cpu_info:topology:cores``...), and the ``hw:maxphysaddr_*``
flavor extra specs and ``hw_maxphysaddr_*`` image properties compare
with its ``maxphysaddr``. The agent refuses to start when the JSON cannot
be read or a known key has the wrong type.

Possible values:

* Unset (the default): the nodes report no CPU description.
* A JSON object such as ``{"arch": "x86_64", "model": "Skylake-Client",
  "vendor": "Intel", "features": ["sse4.2", "avx2"], "topology":
  {"sockets": 1, "cores": 4, "threads": 2}, "maxphysaddr": {"mode":
  "emulate", "bits": 46}}``.

Related options:

* ``numa_topology``
"""),
    cfg.StrOpt('numa_topology',
               help="""
The NUMA cells of each node, as a JSON object ``{"cells": [...]}``.

Each cell has an ``id``, the CPUs of floating vCPUs (``cpuset``, Nova's
``cpu_shared_set``) and of pinned ones (``pcpuset``, Nova's
``cpu_dedicated_set``), ``memory_mb``, and optionally its ``socket``
(default: the cell id), hyperthread ``siblings`` (lists of CPUs) and
``mempages`` (``{"size_kb", "total", "reserved"}``). A CPU belongs to one
set of one cell. The agent refuses to start when the JSON cannot be read
or the topology does not have this shape.

Possible values:

* Unset (the default): the nodes report no NUMA topology.
* A JSON object such as ``{"cells": [{"id": 0, "cpuset": [0, 1],
  "pcpuset": [2, 3], "memory_mb": 8192, "siblings": [[0, 1], [2, 3]],
  "mempages": [{"size_kb": 4, "total": 2097152},
  {"size_kb": 2048, "total": 0}]}]}``.

Related options:

* ``pci_device_pools``: their ``numa_node`` names these cells.
"""),
    cfg.StrOpt('pci_device_pools',
               help="""
The PCI devices of each node, as a JSON list of pools.

Each pool has a ``vendor_id`` and a ``product_id`` (4 hexadecimal
digits), the ``count`` of its devices, and optionally the ``numa_node``
they are attached to (null: none) and ``tags`` (strings, such as
``dev_type`` and ``physical_network``). PciPassthroughFilter and
PCIWeigher read them. The agent refuses to start when the JSON cannot be
read or a pool does not have this shape.

Possible values:

* Unset (the default): the nodes have no PCI devices.
* A JSON list such as ``[{"vendor_id": "8086", "product_id": "154d",
  "numa_node": 0, "count": 4, "tags": {"dev_type": "type-PF"}}]``.

Related options:

* ``numa_topology``
"""),
    cfg.IntOpt('disk_available_least',
               help="""
GiB of disk each node has left once its images are fully grown.

What Nova's libvirt driver reports; the scheduler's free disk of the
node (DiskFilter, DiskWeigher) is then the smaller of this and
``local_gb`` minus reserved and used disk. This is the value of a node
without instances: each instance the node runs takes its disk (root,
ephemeral and swap) from what it reports.

Possible values:

* Unset (the default): not reported; free disk comes from ``local_gb``.
* An integer, possibly negative (images overcommitted).

Related options:

* ``local_gb``
"""),
    cfg.FloatOpt('spawn_time',
                 default=0.0,
                 min=0.0,
                 help="""
Seconds a spawn takes; 0 spawns at once.
"""),
    cfg.FloatOpt('build_failure_rate',
                 default=0.0,
                 min=0.0,
                 max=1.0,
                 help="""
Fraction of builds that fail on purpose, for testing reschedules.

Possible values:

* 0.0: every build succeeds (the default).
* 1.0: every build fails.
"""),
    cfg.BoolOpt('refuse_live_migration',
                default=False,
                help="""
Fail the destination pre-check of every live migration to this agent, for
testing the conductor's live-migration retries.
"""),
]


def register_opts(conf):
    conf.register_opts(reserved_opts)
    conf.register_group(fake_virt_group)
    conf.register_opts(fake_virt_opts, group=fake_virt_group)


def list_opts():
    return {'DEFAULT': reserved_opts, fake_virt_group: fake_virt_opts}
