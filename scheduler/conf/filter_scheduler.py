"""Options of the ``[filter_scheduler]`` group: filters and weighers."""

from oslo_config import cfg

filter_scheduler_group = cfg.OptGroup(
    'filter_scheduler',
    title='Filter scheduler options',
    help="Which filters and weighers run, in what order, with what weights.")

# Nova's default list (with RamFilter, CoreFilter and DiskFilter, which
# Nova left to placement and Gantt keeps).
DEFAULT_ENABLED_FILTERS = [
    'AvailabilityZoneFilter',
    'ComputeFilter',
    'RamFilter',
    'CoreFilter',
    'DiskFilter',
    'ComputeCapabilitiesFilter',
    'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter',
    'ServerGroupAffinityFilter',
]

# Nova mode's default (``[scheduler] backend = nova``): Nova 34's own
# list, where Placement checks RAM, CPU and disk, plus the zone filter,
# which stands for Nova's zone request filter (Nova maps a zone to
# Placement aggregates instead).
NOVA_MODE_ENABLED_FILTERS = [
    'AvailabilityZoneFilter',
    'ComputeFilter',
    'ComputeCapabilitiesFilter',
    'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter',
    'ServerGroupAffinityFilter',
]


def set_nova_mode_defaults(conf):
    """Nova mode's defaults: a nova.conf that does not list its filters
    gets Nova's, not Gantt's (whose RamFilter, CoreFilter and DiskFilter
    read what Nova's computes report of their disks, which Placement
    already checks from their inventories). A list the files set wins."""
    conf.set_default('enabled_filters', NOVA_MODE_ENABLED_FILTERS,
                     group=filter_scheduler_group.name)


# CPU architecture names the scheduler knows (Nova's list).
ARCHITECTURES = (
    'alpha', 'armv6', 'armv7l', 'armv7b', 'aarch64', 'cris', 'i686', 'ia64',
    'lm32', 'm68k', 'microblaze', 'microblazeel', 'mips', 'mipsel', 'mips64',
    'mips64el', 'openrisc', 'parisc', 'parisc64', 'ppc', 'ppcle', 'ppc64',
    'ppc64le', 'ppcemb', 's390', 's390x', 'sh4', 'sh4eb', 'sparc', 'sparc64',
    'unicore32', 'x86_64', 'xtensa', 'xtensaeb')

filter_scheduler_opts = [
    cfg.IntOpt('host_subset_size',
               default=1,
               min=1,
               mutable=True,
               help="""
Size of the subset of best hosts among which one is picked at random.

A value of 1 always picks the best weighed host; a larger value spreads
concurrent requests over more hosts, at the cost of less optimal placement.

Possible values:

* A positive integer; a value larger than the number of hosts that passed
  the filters picks among all of them.
"""),
    cfg.IntOpt('hosts_to_score_percent',
               default=0,
               min=0,
               max=100,
               mutable=True,
               help="""
Percentage of the candidate hosts to filter and weigh per request.

Nova filters and weighs every candidate host for every request. In a
large cloud most of that work ranks hosts that will not be picked. With a
percentage, the filters run over the candidates in windows that start
where the previous request stopped, and stop as soon as this share of
the candidates passed (and at least ``host_subset_size`` plus the
alternates plus the request's instances); only those are weighed. The
placement is then the best among a rotating sample of the cloud rather
than of all of it (Kubernetes' percentageOfNodesToScore).

Possible values:

* 0 (the default): filter and weigh every candidate host, as Nova does.
* 1 to 100: stop once that percentage of the candidates passed the
  filters; 100 gives exactly the same placements as 0.

Related options:

* ``host_subset_size``
* ``[scheduler] max_attempts`` (the alternates)
"""),
    cfg.BoolOpt('rank_ahead',
                default=True,
                mutable=True,
                help="""
Rank a request's shape again, ahead of the next request of that shape.

Once a request has been answered and the worker has no other request
in flight, the thread that sent the answer filters and weighs the same
request again (the same flavor, image, project and hints, for another
instance) on the host cache as it is now, that request's claim
included. If the next request has that shape and nothing the
ranking depends on changed meanwhile (no write to the host cache, no
compute service's heartbeat crossing ``service_down_time``, no reload of
the filters, weighers or options), it uses that ranking and still draws
its pick among the best hosts when it arrives: the same answer, without
its filtering and weighing time. No ranking is made while other
requests are in flight, and one under way stops when a request arrives;
under load, each request of a repeated shape leaves the ranking it made
to the next one instead, which patches it (below).
When the cache was written only in a few hosts since the last ranking
(the claim of the request that used it), that ranking is patched: those
hosts alone are filtered and weighed again, which gives the same
ranking for the cost of a few hosts instead of all of them.

Only single-instance requests without a server group are ranked ahead,
when the request before had the same shape, not with
``hosts_to_score_percent``, not under eventlet (a request arriving could
not interrupt the ranking), and only when every enabled filter and
weigher declares that its answer depends on nothing but the host cache,
the request and the options (``pure = True``; Gantt's own do).

Possible values:

* True (the default): rank ahead.
* False: every request filters and weighs when it arrives, as Nova does.

Related options:

* ``enabled_filters``, ``weight_classes``
"""),
    cfg.BoolOpt('claim_group_commit',
                default=False,
                mutable=True,
                help="""
Send the claims a worker has ready at the same time in one transaction.

Under load, a worker's requests reach their claims while the claim
before them still waits for the database. With this option, the claims
that arrive meanwhile wait for it and are then sent together: one round
trip, one transaction and one commit for all of them, each with its own
outcome (a claim that does not fit changes nothing and the others are
made; a batch that fails is made again claim by claim). A claim that
finds none under way is sent at once. Gantt's own claims on PostgreSQL
through psycopg2 only; on other databases each claim is its own
transaction.

Off by default: with the database on the scheduler's machine, where a
commit is cheap, claims that wait for the batch before theirs placed
about a tenth fewer instances per second than claims sent on their own
(``benchmarks/README.md``). It may pay where each commit is dear (a
database across the network, slow disks).

Possible values:

* True: group concurrent claims.
* False (the default): every claim is its own transaction.
"""),
    cfg.StrOpt('build_claim_flush',
               default='with_placement',
               choices=[
                   ('with_placement',
                    'the claim of a building instance is on disk once '
                    'the conductor takes its placement'),
                   ('immediate',
                    'every claim is on disk before the scheduler '
                    'answers'),
               ],
               mutable=True,
               help="""
When the claim of an instance being built reaches the disk.

A claim's commit is visible to every other scheduler and conductor as
soon as it is made, whatever this option says: it only decides whether
the scheduler waits for PostgreSQL to write the commit to its
write-ahead log on disk before it answers (about a third of the claim's
time on a local disk, 0.24 of 0.70 ms at the median, and most of its
slowest claims: ``benchmarks/README.md``).

With ``with_placement``, the claim of an instance in the ``building``
state commits without that wait (PostgreSQL's asynchronous commit, for
that transaction only). The conductor, before it sends the instance to
its host, takes the placement: it locks the instance, checks that it
holds the claim and records the host, and that commit waits for the log
to be on disk up to itself, which holds the claim's commit, written
before it. A claim can only be lost if the database server crashes in
between (PostgreSQL writes a waiting commit within
``3 * wal_writer_delay``, 0.6 s by default); the conductor then finds
the claim missing and goes on to the instance's alternates, as it does
when a duplicate of the request replaced it. Claims for moves (the
instance is not building), for instances Gantt does not know, claims
with NUMA, PCI or other resource classes, grouped claims, and every
claim on MySQL, MariaDB or SQLite commit as with ``immediate``, as any
other commit does (on PostgreSQL, as its own ``synchronous_commit``
says: ``on``, or ``remote_apply`` where the operator set it so).

Use ``immediate`` when something other than Gantt's conductor acts on the
scheduler's answers for builds before it writes to the cell's database.
"""),
    cfg.BoolOpt('shuffle_best_same_weighed_hosts',
                default=False,
                mutable=True,
                help="""
Shuffle the hosts that share the best weight before picking.

Spreads instances over identical hosts when ``host_subset_size`` is 1.
"""),
    cfg.MultiStrOpt('available_filters',
                    default=['all_filters'],
                    help="""
Filters that may be enabled.

May be given more than once.

Possible values:

* ``all_filters``: every filter installed in the ``gantt.scheduler.filters``
  entry point namespace.
* The entry point name of one filter, such as ``RamFilter``.
* A dotted path ``package.module.ClassName`` to a filter class.

Related options:

* ``enabled_filters``
"""),
    cfg.ListOpt('enabled_filters',
                default=DEFAULT_ENABLED_FILTERS,
                mutable=True,
                help="""
Filters the scheduler runs, in this order.

Every name must be one of ``available_filters``; an unknown name stops the
service at start-up (or is refused on SIGHUP, keeping the previous list).
Order matters for speed: put the filters that remove the most hosts first.

Related options:

* ``available_filters``
"""),
    cfg.ListOpt('weight_classes',
                default=['all_weighers'],
                mutable=True,
                help="""
Weighers the scheduler uses to rank the hosts that passed the filters.

Possible values:

* ``all_weighers``: every weigher in the ``gantt.scheduler.weighers``
  entry point namespace.
* Entry point names such as ``RAMWeigher``, or dotted class paths.
"""),
    cfg.FloatOpt('ram_weight_multiplier',
                 default=1.0,
                 mutable=True,
                 help="""
Multiplier of the RAM weigher.

Possible values:

* A positive number spreads instances over hosts with the most free RAM.
* A negative number stacks them onto the hosts with the least free RAM.
* 0 ignores free RAM.

Related options:

* Aggregate metadata ``ram_weight_multiplier`` overrides it for the hosts
  of the aggregate.
"""),
    cfg.FloatOpt('cpu_weight_multiplier',
                 default=1.0,
                 mutable=True,
                 help="""
Multiplier of the CPU weigher.

Possible values:

* A positive number spreads instances over hosts with the most free vCPUs.
* A negative number stacks them.
* 0 ignores free vCPUs.
"""),
    cfg.FloatOpt('disk_weight_multiplier',
                 default=1.0,
                 mutable=True,
                 help="""
Multiplier of the disk weigher.

Possible values:

* A positive number spreads instances over hosts with the most free disk.
* A negative number stacks them.
* 0 ignores free disk.
"""),
    cfg.FloatOpt('io_ops_weight_multiplier',
                 default=-1.0,
                 mutable=True,
                 help="""
Multiplier of the I/O operations weigher.

The IoOpsWeigher weighs a host by its number of instances in an I/O heavy
task state (building, resizing, snapshotting...).

Possible values:

* A negative number (the default) prefers hosts with fewer I/O operations
  under way, spreading the load.
* A positive number prefers busy hosts.
* 0 ignores I/O operations.

Related options:

* Aggregate metadata ``io_ops_weight_multiplier`` overrides it for the
  hosts of the aggregate.
"""),
    cfg.FloatOpt('build_failure_weight_multiplier',
                 default=1000000.0,
                 mutable=True,
                 help="""
Multiplier of the build failure weigher.

The BuildFailureWeigher pushes back hosts whose recent builds failed, by the
``failed_builds`` stat their compute reports; the count resets after a
successful build. The default is large so that the failure count outweighs
every other weigher: a host that keeps failing builds is tried last.

Possible values:

* A positive number: how strongly recent failures push a host back.
* 0 ignores failed builds.

Related options:

* Aggregate metadata ``build_failure_weight_multiplier`` overrides it for
  the hosts of the aggregate.
"""),
    cfg.FloatOpt('cross_cell_move_weight_multiplier',
                 default=1000000.0,
                 mutable=True,
                 help="""
Multiplier of the cross-cell move weigher.

The CrossCellWeigher prefers, for a move that may leave its cell
(``requested_destination`` names the source cell and allows a cross-cell
move), the hosts of the source cell: a move within a cell is cheaper than
one across cells. The default is large so that a host of the source cell
is chosen whenever one fits; the other weighers order the hosts within
each cell. Requests that name no cell are not weighed.

Possible values:

* A positive number: how strongly hosts of the source cell are preferred.
* 0 does not prefer them.
* A negative number prefers hosts of other cells.

Related options:

* Aggregate metadata ``cross_cell_move_weight_multiplier`` overrides it for
  the hosts of the aggregate.
"""),
    cfg.FloatOpt('num_instances_weight_multiplier',
                 default=0.0,
                 mutable=True,
                 help="""
Multiplier of the number of instances weigher.

Possible values:

* A positive number prefers hosts with more instances (stacking).
* A negative number prefers hosts with fewer instances (spreading).
* 0 (the default) ignores the number of instances.

Related options:

* Aggregate metadata ``num_instances_weight_multiplier`` overrides it.
"""),
    cfg.FloatOpt('hypervisor_version_weight_multiplier',
                 default=1.0,
                 mutable=True,
                 help="""
Multiplier of the hypervisor version weigher.

The HypervisorVersionWeigher weighs hosts by the ``hypervisor_version``
their compute reports. Each virt driver encodes versions its own way, so
the weights only compare hosts of one hypervisor type; group other types
in aggregates and override the multiplier there.

Possible values:

* A positive number (the default) prefers newer hypervisors.
* A negative number prefers older ones.
* 0 ignores the hypervisor version.

Related options:

* Aggregate metadata ``hypervisor_version_weight_multiplier`` overrides it.
"""),
    cfg.FloatOpt('image_props_weight_multiplier',
                 default=0.0,
                 mutable=True,
                 help="""
Multiplier of the image properties weigher.

The ImagePropertiesWeigher weighs a host by how many of its instances were
booted from images whose properties match those of the requested image.

Possible values:

* A positive number packs instances with the same image properties.
* A negative number spreads them.
* 0 (the default) disables the weigher.

Related options:

* ``image_props_weight_setting``
* Aggregate metadata ``image_props_weight_multiplier`` overrides it.
"""),
    cfg.ListOpt('image_props_weight_setting',
                default=[],
                mutable=True,
                help="""
Image properties the image properties weigher counts, with their weights.

Each item is ``name=weight``; a match on ``name`` adds ``weight`` instead of
1. Names are Nova's image property names (``os_distro``, not the legacy
``vmware_ostype``, which counts as ``os_distro``). When the list is empty,
every property of the requested image counts 1; when it is not, the
properties it does not name count 0. Items that do not parse are logged and
ignored.

Possible values:

* A list such as ``os_distro=10,hw_machine_type=1``.

Related options:

* ``image_props_weight_multiplier``
"""),
    cfg.FloatOpt('pci_weight_multiplier',
                 default=1.0,
                 min=0.0,
                 mutable=True,
                 help="""
Multiplier of the PCI device weigher.

The PCIWeigher keeps hosts with PCI devices free for the requests that need
them: hosts with fewer free PCI devices weigh more, so requests without
devices avoid PCI hosts and requests with devices stack on the hosts with
the fewest left. On a cloud without PCI devices every host weighs the same.

Possible values:

* A positive number, or 0.

Related options:

* Aggregate metadata ``pci_weight_multiplier`` overrides it.
"""),
    cfg.IntOpt('max_io_ops_per_host',
               default=8,
               min=0,
               mutable=True,
               help="""
Most I/O intensive instances a host may have when the IoOpsFilter runs.

An instance counts while it is building, resizing, migrating, rebuilding,
snapshotting, backing up, shelving or unshelving. A host with this many or
more fails the IoOpsFilter.

Possible values:

* 0 or a positive integer.

Related options:

* Aggregate metadata ``max_io_ops_per_host`` overrides it for the
  AggregateIoOpsFilter.
"""),
    cfg.IntOpt('max_instances_per_host',
               default=50,
               min=1,
               mutable=True,
               help="""
Most instances a host may have when the NumInstancesFilter runs.

A host that already runs this many instances or more fails the filter.

Possible values:

* A positive integer.

Related options:

* Aggregate metadata ``max_instances_per_host`` overrides it for the
  AggregateNumInstancesFilter.
"""),
    cfg.ListOpt('isolated_images',
                default=[],
                mutable=True,
                help="""
UUIDs of the images that must boot on the isolated hosts.

Used by the IsolatedHostsFilter.

Related options:

* ``isolated_hosts``
* ``restrict_isolated_hosts_to_isolated_images``
"""),
    cfg.ListOpt('isolated_hosts',
                default=[],
                mutable=True,
                help="""
Host names set apart for the isolated images.

Used by the IsolatedHostsFilter. Names are compared exactly, case included.

Related options:

* ``isolated_images``
* ``restrict_isolated_hosts_to_isolated_images``
"""),
    cfg.BoolOpt('restrict_isolated_hosts_to_isolated_images',
                default=True,
                mutable=True,
                help="""
Keep the isolated hosts for the isolated images only.

With True, an isolated host takes only isolated images; with False it also
takes others. Either way, isolated images go only to isolated hosts.

Related options:

* ``isolated_images``
* ``isolated_hosts``
"""),
    cfg.StrOpt('aggregate_image_properties_isolation_namespace',
               mutable=True,
               help="""
Namespace of the aggregate metadata keys AggregateImagePropertiesIsolation
compares with image properties.

Unset, every metadata key of a host's aggregates that names an image
property Nova knows (``hw_architecture``, ``os_type``...) is compared with
that property of the image. Set, only such keys that start with the
namespace and the separator are; Nova warns that this is of little use now,
and suggests ``[scheduler] enable_isolated_aggregate_filtering`` instead.

Possible values:

* A string such as ``isolation``, or nothing.

Related options:

* ``aggregate_image_properties_isolation_separator``
"""),
    cfg.StrOpt('aggregate_image_properties_isolation_separator',
               default='.',
               mutable=True,
               help="""
Separator between the namespace and the key name of the aggregate metadata
keys AggregateImagePropertiesIsolation compares.

Related options:

* ``aggregate_image_properties_isolation_namespace``
"""),
    cfg.StrOpt('image_properties_default_architecture',
               choices=ARCHITECTURES,
               mutable=True,
               help="""
Architecture assumed for images that do not set ``hw_architecture``.

Used by the ImagePropertiesFilter: unset, an image without an architecture
boots on hosts of any architecture.

Possible values:

* A CPU architecture name such as ``x86_64`` or ``aarch64``, or nothing.
"""),
    cfg.BoolOpt('pci_in_placement',
                default=False,
                help="""
Schedule PCI devices as Placement's nested providers too.

Nova's option. When on, each host's PCI device pools are child providers
of its node (one per PF or standalone device, one per pool of VFs; class
the pool's ``resource_class`` tag or ``CUSTOM_PCI_<VENDOR>_<PRODUCT>``,
traits its ``traits`` tag and ``COMPUTE_MANAGED_PCI_DEVICE``), and each
device a flavor's ``pci_passthrough:alias`` asks for is a request group
of its own (the alias's ``resource_class`` and ``traits``), as Nova asks
Placement. The PciPassthroughFilter still runs, and the claim still takes
the devices from the pools.

Related options:

* ``[pci] alias``
* ``[filter_scheduler] numa_in_placement``
"""),
    cfg.BoolOpt('numa_in_placement',
                default=False,
                help="""
Show each host NUMA cell's dedicated CPUs (PCPU) as a child provider.

Gantt's option; Nova 34 keeps PCPU on the compute node's provider. When
on, a node that reports PCPU shows it per NUMA cell instead (each cell's
CPUs to pin, less those pinned), so that granular groups can ask for
distinct cells (``resources1:PCPU=2``, ``resources2:PCPU=2``,
``group_policy=isolate``), and a pinned guest of several NUMA nodes asks
its dedicated CPUs per node. PCI devices (with ``pci_in_placement``) go
under the cell they are on. VCPU and MEMORY_MB stay on the node.

Related options:

* ``[filter_scheduler] pci_in_placement``
"""),
]


def register_opts(conf):
    conf.register_group(filter_scheduler_group)
    conf.register_opts(filter_scheduler_opts, group=filter_scheduler_group)


def list_opts():
    return {filter_scheduler_group: filter_scheduler_opts}
