"""Options for baremetal (Ironic) nodes, in the groups Nova had them in.

Nova scheduled Ironic's baremetal nodes with a host manager of its own,
chosen by ``[scheduler] host_manager``, and optionally with a filter list
of their own (``[filter_scheduler] use_baremetal_filters`` and
``baremetal_enabled_filters``). Gantt keeps those options, their defaults
and their deprecation status (Nova deprecated the filter options for
removal in Queens, and the ``ironic_host_manager`` value with them).
The fake-virt agent's ``[fake_virt] baremetal_nodes`` lets a
gantt-compute report such nodes. Example::

    [scheduler]
    host_manager = ironic_host_manager
    [filter_scheduler]
    use_baremetal_filters = true
"""

from oslo_config import cfg

HOST_MANAGERS = (
    ('host_manager', 'Every node is shared by the instances that fit on it '
                     '(the default).'),
    ('ironic_host_manager', 'Nodes of hypervisor type ``ironic`` are taken '
                            'whole by one instance.'),
)

# What Nova's baremetal_enabled_filters held while it had the exact
# filters (up to Queens).
DEFAULT_BAREMETAL_FILTERS = [
    'RetryFilter',
    'AvailabilityZoneFilter',
    'ComputeFilter',
    'ComputeCapabilitiesFilter',
    'ImagePropertiesFilter',
    'ExactRamFilter',
    'ExactDiskFilter',
    'ExactCoreFilter',
]

_DEPRECATED_REASON = """
Nova used these filters to work around its baremetal scheduling limits
before Placement's custom resource classes; Gantt keeps them for clouds
that still schedule baremetal nodes on their vCPUs, RAM and disk.
"""

scheduler_opts = [
    cfg.StrOpt('host_manager',
               default='host_manager',
               choices=HOST_MANAGERS,
               deprecated_name='scheduler_host_manager',
               deprecated_group='DEFAULT',
               help="""
The host manager the scheduler driver uses.

The host manager keeps the scheduler's cached picture of the compute
nodes. It is loaded by name from the ``gantt.scheduler.host_manager``
entry point namespace. ``ironic_host_manager`` is Nova's
IronicHostManager: a node whose hypervisor type is ``ironic`` is a whole
machine, so an instance on it takes all its vCPUs, RAM and disk (in the
cache and in its SQL claim) and it takes no second instance. Other nodes
are handled as by ``host_manager``. As in Nova, the ``ironic_host_manager``
value is deprecated (since Nova's 17.0.0 Queens release).

Possible values:

* ``host_manager`` (the default).
* ``ironic_host_manager``.

Related options:

* ``[filter_scheduler] use_baremetal_filters``
* ``[filter_scheduler] baremetal_enabled_filters``
"""),
]

filter_scheduler_opts = [
    cfg.ListOpt('baremetal_enabled_filters',
                default=DEFAULT_BAREMETAL_FILTERS,
                deprecated_name='baremetal_scheduler_default_filters',
                deprecated_group='DEFAULT',
                deprecated_for_removal=True,
                deprecated_reason=_DEPRECATED_REASON,
                help="""
Filters the scheduler runs when it uses the baremetal filters.

Applied in order, like ``enabled_filters``, which they replace when
``use_baremetal_filters`` is set and the host manager is
``ironic_host_manager``. Every name must be one of ``available_filters``;
an unknown name then stops the service at start-up. Deprecated for
removal, as in Nova.

Possible values:

* A list of filter names; the default is Nova's list, which ends with
  ExactRamFilter, ExactDiskFilter and ExactCoreFilter (a baremetal node
  takes only an instance whose flavor asks for exactly what it has).

Related options:

* ``use_baremetal_filters``: without it this option has no effect.
* ``[scheduler] host_manager``
"""),
    cfg.BoolOpt('use_baremetal_filters',
                default=False,
                deprecated_name='scheduler_use_baremetal_filters',
                deprecated_group='DEFAULT',
                deprecated_for_removal=True,
                deprecated_reason=_DEPRECATED_REASON,
                help="""
Filter with ``baremetal_enabled_filters`` instead of ``enabled_filters``.

As in Nova, the switch applies to every request the scheduler handles
(a scheduler of a baremetal cloud) and only with ``[scheduler]
host_manager = ironic_host_manager``; with the default host manager it has
no effect. Deprecated for removal, as in Nova.

Related options:

* ``baremetal_enabled_filters``
* ``[scheduler] host_manager``
"""),
]

fake_virt_opts = [
    cfg.IntOpt('baremetal_nodes',
               default=0,
               min=0,
               help="""
Number of baremetal nodes this fake-virt agent reports.

With a positive number the agent stands for a nova-compute of Ironic: it
reports that many nodes, named ``<host>-bm-<n>``, of hypervisor type
``ironic``, each with ``vcpus``, ``memory_mb`` and ``local_gb`` of the
``[fake_virt]`` group, allocation ratios of 1.0 and nothing reserved (as
Nova's Ironic driver reports them), instead of its ``node_count``
virtual nodes.

Possible values:

* 0: no baremetal node; ``node_count`` virtual nodes (the default).
* A positive integer.

Related options:

* ``node_count``: ignored when this option is positive.
* ``[scheduler] host_manager``: ``ironic_host_manager`` gives each
  baremetal node to one instance only.
* ``baremetal_resource_class``
"""),
    cfg.StrOpt('baremetal_resource_class',
               help="""
The Ironic resource class of this agent's baremetal nodes.

With a resource class each baremetal node reports what Nova's Ironic
driver reports since Stein: one unit of the custom resource class made of
it (``baremetal-gold`` becomes ``CUSTOM_BAREMETAL_GOLD``: capitals, every
run of other characters an underscore), reserved while an instance is on
the node, and no vCPUs, RAM or disk; a flavor then asks for
``resources:CUSTOM_BAREMETAL_GOLD=1``. Without one the nodes report their
``[fake_virt]`` vCPUs, RAM and disk, as Nova did before.

Possible values:

* Unset (the default): no resource class.
* A name such as ``baremetal-gold``.

Related options:

* ``baremetal_nodes``: without it this option has no effect.
"""),
]


def register_opts(conf):
    conf.register_opts(scheduler_opts, group='scheduler')
    conf.register_opts(filter_scheduler_opts, group='filter_scheduler')
    conf.register_opts(fake_virt_opts, group='fake_virt')


def list_opts():
    return {'scheduler': scheduler_opts,
            'filter_scheduler': filter_scheduler_opts,
            'fake_virt': fake_virt_opts}
