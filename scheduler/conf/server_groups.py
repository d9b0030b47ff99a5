"""Options of server groups and instance tracking (``[filter_scheduler]``,
and one of ``[DEFAULT]``).

The affinity filters and weighers need to know which instances run on
each host. Compute agents tell the schedulers (``track_instance_changes``)
and check every ``scheduler_instance_sync_interval`` seconds that the
schedulers' view is right; the soft-affinity weighers have their own
multipliers. These options live in the ``[filter_scheduler]`` group, next
to the others of the filter scheduler, apart from
``scheduler_instance_sync_interval``, which is in ``[DEFAULT]`` as in Nova.
"""

from oslo_config import cfg

from scheduler.conf import filter_scheduler

# Nova's compute option, in Nova's group.
sync_opts = [
    cfg.IntOpt('scheduler_instance_sync_interval',
               default=120,
               deprecated_group='filter_scheduler',
               help="""
Seconds between two checks that the schedulers know a host's instances.

Every interval, each compute agent sends the schedulers the UUIDs of the
instances it runs (``sync_instance_info``); a scheduler whose view of that
host differs reads the host's instances from the database again. In
``[DEFAULT]``, as in Nova; Gantt's earlier ``[filter_scheduler]`` is still
read.

Possible values:

* 0: check at the default interval of periodic tasks (60 seconds).
* A negative number: never check.
* A positive number of seconds.

Related options:

* ``track_instance_changes``: when it is False, no check is sent and this
  option has no effect.
"""),
]

server_group_opts = [
    cfg.BoolOpt('track_instance_changes',
                default=True,
                deprecated_name='scheduler_tracks_instance_changes',
                deprecated_group='DEFAULT',
                help="""
Keep the schedulers' view of the instances on each host up to date.

The scheduler needs to know the instances on a host for the affinity
filters and weighers (ServerGroupAffinityFilter,
ServerGroupAntiAffinityFilter, SameHostFilter, DifferentHostFilter, the
soft-affinity weighers...). When enabled, compute agents send the
schedulers every change (``update_instance_info``,
``delete_instance_info``) and a periodic check (``sync_instance_info``).
When disabled, computes send nothing and the scheduler reads the
instances of every host from the database for each request, which is
slower with many instances.

Set the same value for the schedulers and the compute agents.

Related options:

* ``scheduler_instance_sync_interval``
"""),
    cfg.FloatOpt('soft_affinity_weight_multiplier',
                 default=1.0,
                 min=0.0,
                 mutable=True,
                 help="""
Multiplier of ServerGroupSoftAffinityWeigher.

Hosts running more members of a ``soft-affinity`` server group weigh
more; this says how much that counts against the other weighers.

Possible values:

* A non-negative number; 0 ignores the policy.

Related options:

* Aggregate metadata ``soft_affinity_weight_multiplier`` overrides it for
  the hosts of the aggregate.
"""),
    cfg.FloatOpt('soft_anti_affinity_weight_multiplier',
                 default=1.0,
                 min=0.0,
                 mutable=True,
                 help="""
Multiplier of ServerGroupSoftAntiAffinityWeigher.

Hosts running fewer members of a ``soft-anti-affinity`` server group
weigh more; this says how much that counts against the other weighers.

Possible values:

* A non-negative number; 0 ignores the policy.

Related options:

* Aggregate metadata ``soft_anti_affinity_weight_multiplier`` overrides
  it for the hosts of the aggregate.
"""),
]


def register_opts(conf):
    conf.register_opts(sync_opts)
    conf.register_group(filter_scheduler.filter_scheduler_group)
    conf.register_opts(server_group_opts,
                       group=filter_scheduler.filter_scheduler_group)


def list_opts():
    return {'DEFAULT': sync_opts,
            filter_scheduler.filter_scheduler_group: server_group_opts}
