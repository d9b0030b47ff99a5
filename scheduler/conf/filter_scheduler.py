"""Options of the ``[filter_scheduler]`` group: filters, weighers, ratios."""

from oslo_config import cfg

filter_scheduler_group = cfg.OptGroup(
    'filter_scheduler',
    title='Filter scheduler options',
    help="Which filters and weighers run, in what order, with what weights.")

DEFAULT_ENABLED_FILTERS = [
    'AvailabilityZoneFilter',
    'ComputeFilter',
    'RamFilter',
    'CoreFilter',
    'DiskFilter',
]

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
    cfg.FloatOpt('cpu_allocation_ratio',
                 default=16.0,
                 min=0.0,
                 help="""
Virtual CPU to physical CPU allocation ratio.

Used when a compute node does not report a ratio of its own. CoreFilter and
the claims allow ``vcpus * cpu_allocation_ratio`` vCPUs on a node.
"""),
    cfg.FloatOpt('ram_allocation_ratio',
                 default=1.5,
                 min=0.0,
                 help="""
Virtual RAM to physical RAM allocation ratio.

Used when a compute node does not report a ratio of its own.
"""),
    cfg.FloatOpt('disk_allocation_ratio',
                 default=1.0,
                 min=0.0,
                 help="""
Virtual disk to physical disk allocation ratio.

Used when a compute node does not report a ratio of its own.
"""),
]


def register_opts(conf):
    conf.register_group(filter_scheduler_group)
    conf.register_opts(filter_scheduler_opts, group=filter_scheduler_group)


def list_opts():
    return {filter_scheduler_group: filter_scheduler_opts}
