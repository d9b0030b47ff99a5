"""What a compute reports beyond vCPUs, RAM and disk: ``[compute]`` CPU
sets and provider config files (Nova's options), and the fake-virt
agent's traits.

Example::

    [compute]
    cpu_shared_set = 0-3
    cpu_dedicated_set = 4-15
    provider_config_location = /etc/gantt/provider_config/
    [fake_virt]
    traits = HW_CPU_X86_AVX2,CUSTOM_GOLD
"""

from oslo_config import cfg

compute_group = cfg.OptGroup(
    'compute',
    title='Compute node resource options',
    help="What a compute reports of its nodes' resources, as in Nova.")

compute_opts = [
    cfg.StrOpt('cpu_shared_set',
               help="""
Mask of host CPUs that can be used for ``VCPU`` resources.

When set, the node's ``VCPU`` inventory (its ``vcpus``) is the number of
CPUs in this set instead of every CPU of the host (the fake-virt agent's
``[fake_virt] vcpus``, numbered from 0). Every CPU in the set must be one
of the host's, and the set must not share a CPU with
``cpu_dedicated_set``; the agent refuses to start otherwise.

Possible values:

* Unset (the default): every host CPU provides ``VCPU``, unless
  ``cpu_dedicated_set`` is set, in which case none does.
* A comma-separated list of physical CPU numbers. Each element is a CPU
  number, a range of CPU numbers, or a caret followed by a CPU number to
  exclude from a previous range. For example::

    cpu_shared_set = "4-12,^8,15"

Related options:

* ``[compute] cpu_dedicated_set``: the counterpart for ``PCPU``.
* ``[DEFAULT] reserved_host_cpus``: may not be set with either set.
"""),
    cfg.StrOpt('cpu_dedicated_set',
               help="""
Mask of host CPUs that can be used for ``PCPU`` resources.

When set, each node reports a ``PCPU`` inventory of as many units as the
set has CPUs, with an allocation ratio of 1.0 and nothing reserved (a
pinned CPU is never shared), and no longer reports every host CPU as
``VCPU`` (only those of ``cpu_shared_set``). Every CPU in the set must
be one of the host's; the agent refuses to start otherwise.

Possible values:

* Unset (the default): no ``PCPU`` inventory.
* A comma-separated list of physical CPU numbers. Each element is a CPU
  number, a range of CPU numbers, or a caret followed by a CPU number to
  exclude from a previous range. For example::

    cpu_dedicated_set = "4-12,^8,15"

Related options:

* ``[compute] cpu_shared_set``: the counterpart for ``VCPU``.
"""),
    cfg.StrOpt('provider_config_location',
               default='/etc/gantt/provider_config/',
               help="""
Location of YAML files containing resource provider configuration data.

Each ``*.yaml`` file of this directory may add custom inventories
(``CUSTOM_*`` resource classes) and custom traits to the compute's nodes,
in the format of Nova's provider config files (schema version 1.x): a
``providers`` list whose entries are identified by node ``uuid`` or
``name`` (``uuid: $COMPUTE_NODE`` for every node of the compute not
named by another entry). The files are read when the agent starts; one
that cannot be read or does not follow the format stops it, naming the
file and the problem. A directory that does not exist or holds no such
file adds nothing.

Possible values:

* A directory path.
"""),
]

fake_virt_opts = [
    cfg.ListOpt('traits',
                default=[],
                help="""
Traits each node of this fake-virt agent reports, beyond ``COMPUTE_NODE``.

A real compute's virt driver derives its nodes' traits from the
hypervisor's capabilities (CPU flags, supported disk buses, ...); the
fake agent reports these, as standard trait names of the os-traits
library or custom ones (``CUSTOM_`` followed by capital letters, digits
and underscores). The agent refuses to start with a name that is
neither. Every node also reports ``COMPUTE_NODE``, as Nova's resource
tracker marks every compute node.

Possible values:

* A list such as ``HW_CPU_X86_AVX2,COMPUTE_VOLUME_MULTI_ATTACH,CUSTOM_GOLD``.

Related options:

* ``[compute] provider_config_location``: custom traits from files.
"""),
]


def register_opts(conf):
    conf.register_group(compute_group)
    conf.register_opts(compute_opts, group=compute_group)
    conf.register_opts(fake_virt_opts, group='fake_virt')


def list_opts():
    return {compute_group: compute_opts, 'fake_virt': fake_virt_opts}
