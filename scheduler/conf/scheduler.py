"""Options of the ``[scheduler]`` group: the scheduler service itself."""

from oslo_config import cfg

scheduler_group = cfg.OptGroup(
    'scheduler',
    title='Scheduler service options',
    help="How the gantt-scheduler service runs: its driver, workers and "
         "periodic tasks.")

scheduler_opts = [
    cfg.StrOpt('backend',
               default='gantt',
               choices=[('gantt', "Gantt's own deployment: Gantt's "
                                  "conductor, computes and schema."),
                        ('nova', "The scheduler of an unchanged Nova "
                                 "deployment: Nova's RPC API and objects, "
                                 "Nova's databases read only, claims in "
                                 "Placement.")],
               help="""
Whose deployment this scheduler serves (Gantt's own option).

In ``nova`` mode gantt-scheduler takes the place of nova-scheduler: it
serves Nova's scheduler RPC API (4.x, ``nova_object`` payloads) on the
``scheduler`` topic of ``[DEFAULT] control_exchange`` (``nova``), reads
compute nodes, services, instances and aggregates from Nova's
``[api_database]`` and the cell databases its cell mappings name, reads
resource providers from Placement (``[placement]``) and claims there. It
never writes into Nova's or Placement's tables. See the ``nova_backend``
documentation page.
"""),
    cfg.StrOpt('driver',
               default='filter_scheduler',
               help="""
The scheduler driver to use.

Drivers are loaded by name from the ``gantt.scheduler.driver`` entry point
namespace. An unknown name stops the service at start-up with the list of
drivers that are installed.

Possible values:

* ``filter_scheduler``: filters, then weighers, then a claim (the default).
* ``caching_scheduler``: the same, with host states that only a periodic task
  refreshes.
* ``chance_scheduler``: a random host whose compute service is up.
* The name of any other installed driver entry point.
"""),
    cfg.IntOpt('workers',
               min=0,
               help="""
Number of scheduler worker processes.

Possible values:

* unset or 0: one worker per CPU this process may use (0 as in Nova), but
  one worker on a host of one or two CPUs.
* A positive integer.

Each worker keeps a host cache of its own and ranks the requests it takes:
a worker adds what a CPU of its own can do. On a host of two CPUs that
also runs the broker or the database, a second worker mostly placed
fewer requests per second than one did; that is why such a host runs one
unless this option says otherwise.
"""),
    cfg.IntOpt('max_attempts',
               default=3,
               min=1,
               help="""
Maximum number of hosts tried for one instance.

``select_destinations`` returns the chosen host followed by up to
``max_attempts - 1`` alternates, which the conductor uses when a build fails.

Possible values:

* A positive integer.
"""),
    cfg.IntOpt('discover_hosts_in_cells_interval',
               default=-1,
               min=-1,
               help="""
Periodic task interval for mapping new compute nodes, in seconds.

A compute node is not scheduled onto until it is mapped. Either run
``gantt-manage discover_hosts`` after adding computes, or let the scheduler
do it periodically. Only one scheduler at a time performs the mapping.

Possible values:

* -1 or 0: disabled (the default).
* A positive integer: seconds between discoveries.
"""),
    cfg.IntOpt('periodic_task_interval',
               default=60,
               help="""
Periodic task interval of the scheduler driver, in seconds.

The caching scheduler refreshes its host cache at this interval.

Possible values:

* A positive integer.
* 0: run at the default rate of the periodic task runner.
* A negative integer: disable the periodic tasks of the driver.
"""),
    cfg.FloatOpt('host_state_refresh_interval',
                 default=0.5,
                 min=0.05,
                 help="""
Seconds between incremental refreshes of the filter scheduler's host cache.

The refresh reads only the compute nodes and services written since the
previous one (an indexed ``updated_at``, and the ``created_at`` of the nodes'
new allocations), so its cost grows with the changes,
not with the hosts; every 300 seconds it also compares every node's generation,
which notices deleted rows. A change is seen by scheduling within this
interval plus the refresh's own time. A stale cache can cost a failed claim and
a retry, never an overfilled host, because claims are checked in SQL.

Related options:

* ``[scheduler] driver``: the caching scheduler ignores this option.
"""),
    cfg.IntOpt('max_placement_results',
               default=1000,
               min=1,
               help="""
The most candidate hosts a request's allocation candidates keep.

As Nova asks Placement for at most this many allocation candidates, the
filters and weighers see at most this many hosts, the first ones in the
order of the compute nodes' ids. A low value makes large clouds quick to
schedule in but may leave out the hosts the weighers would prefer, and can
give NoValidHost when the filters remove every one of those kept.

Possible values:

* A positive integer.
"""),
    cfg.BoolOpt('limit_tenants_to_placement_aggregate',
                default=False,
                help="""
Send the requests of a project to its aggregates.

A project named by an aggregate's metadata (a key that starts with
``filter_tenant_id``, whose value is the project's id) is scheduled only to
the hosts of those aggregates. Other projects are not restricted, unless
``placement_aggregate_required_for_tenants`` is set.

Related options:

* ``[scheduler] placement_aggregate_required_for_tenants``
* ``[filter_scheduler] enabled_filters``: the
  AggregateMultiTenancyIsolation filter keeps other projects out of those
  aggregates.
"""),
    cfg.BoolOpt('placement_aggregate_required_for_tenants',
                default=False,
                help="""
Refuse the requests of a project that no aggregate names.

Only with ``limit_tenants_to_placement_aggregate``: a project that no
aggregate's ``filter_tenant_id`` metadata names gets NoValidHost.

Related options:

* ``[scheduler] limit_tenants_to_placement_aggregate``
"""),
    cfg.BoolOpt('query_placement_for_image_type_support',
                default=False,
                help="""
Only consider hosts that support the image's disk format.

A request for a server booted from an image requires the trait
``COMPUTE_IMAGE_TYPE_<disk format>`` (``COMPUTE_IMAGE_TYPE_QCOW2``...) on
the host. A server booted from a volume is not restricted.
"""),
    cfg.BoolOpt('enable_isolated_aggregate_filtering',
                default=False,
                help="""
Keep aggregates that require traits for the requests that ask for them.

An aggregate whose metadata holds ``trait:<TRAIT>=required`` only takes
requests whose flavor or image requires that trait.
"""),
    cfg.BoolOpt('image_metadata_prefilter',
                default=False,
                help="""
Turn well-known image properties into required host traits.

``hw_disk_bus``, ``hw_cdrom_bus``, ``hw_video_model``, ``hw_vif_model``,
``hw_architecture``, ``hw_emulation_architecture`` and ``hw_viommu_model``
require the matching trait (``hw_disk_bus=scsi`` requires
``COMPUTE_STORAGE_BUS_SCSI``).
"""),
]


def register_opts(conf):
    conf.register_group(scheduler_group)
    conf.register_opts(scheduler_opts, group=scheduler_group)


def list_opts():
    return {scheduler_group: scheduler_opts}
