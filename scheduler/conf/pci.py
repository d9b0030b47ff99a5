"""``[pci]`` options: PCI passthrough aliases and the devices computes offer.

A flavor asks for PCI devices by alias (extra spec
``pci_passthrough:alias = "<alias>:<count>[,...]"``); ``[pci] alias``
says which devices each alias means. The schedulers read it to turn a
flavor into device requests (:mod:`scheduler.pci.alias`); the compute
agents read ``[pci] device_spec`` to decide which of their devices they
report. Nova has both options under the same names::

    [pci]
    alias = {"name": "qat", "vendor_id": "8086", "product_id": "0443",
             "device_type": "type-PCI", "numa_policy": "required"}
    device_spec = {"vendor_id": "8086", "product_id": "0443"}
"""

from oslo_config import cfg

pci_group = cfg.OptGroup(
    name='pci',
    title='PCI passthrough options',
    help="""
Which PCI devices flavors may ask for (``alias``), and which devices of a
compute node are offered to instances (``device_spec``).
""")

pci_opts = [
    cfg.MultiStrOpt('alias',
                    default=[],
                    deprecated_name='pci_alias',
                    deprecated_group='DEFAULT',
                    help="""
A name for a kind of PCI device that flavors may request.

Each value is one JSON object. A flavor asks for devices of an alias with
the extra spec ``pci_passthrough:alias = "<name>:<count>"`` (several
aliases separated by commas); the scheduler only picks hosts that have
that many free devices matching the alias. Repeat the option to define
several aliases. Several values may share one name, when their
``device_type`` and ``numa_policy`` agree: a device matching any of them
then satisfies the alias. Set it on the schedulers (and, for move
operations, on the compute agents) with the same values. A malformed
value is an error that names the alias and the key.

Possible values:

* A JSON object with the keys:

  ``name`` (required)
    The alias, as flavors name it (1 to 256 characters).
  ``vendor_id``, ``product_id`` (required)
    The PCI vendor and product IDs, four hexadecimal digits each.
  ``device_type``
    ``type-PCI`` (a plain device), ``type-PF`` (an SR-IOV physical
    function, passed through whole) or ``type-VF`` (a virtual function).
    Without it, PCI and VF devices match but PFs do not.
  ``numa_policy``
    How close the devices must be to the instance's NUMA nodes:
    ``required`` (on them), ``legacy`` (on them, or on no NUMA node;
    the default), ``preferred`` (anywhere, closest first) or ``socket``
    (on a NUMA node of the same socket). The flavor extra spec
    ``hw:pci_numa_affinity_policy`` or the image property
    ``hw_pci_numa_affinity_policy`` override it.
  ``live_migratable``
    ``yes`` or ``no``: only devices the compute tagged as live
    migratable, or only those it did not.
  ``capability_type`` (``pci``), ``resource_class``, ``traits``
    Accepted as Nova accepts them; Gantt has no Placement, and ignores
    them when matching devices.

  For example::

    alias = {"name": "qat", "vendor_id": "8086", "product_id": "0443",
             "device_type": "type-PCI", "numa_policy": "required"}

Related options:

* ``[pci] device_spec``: the devices compute agents report.
"""),
    cfg.MultiStrOpt('device_spec',
                    default=[],
                    deprecated_opts=[
                        cfg.DeprecatedOpt('passthrough_whitelist',
                                          group='pci'),
                        cfg.DeprecatedOpt('pci_passthrough_whitelist',
                                          group='DEFAULT'),
                    ],
                    help="""
The PCI devices of this compute node that instances may use.

Read by the compute agent only. Each value is a JSON object (or a JSON
list of objects) that selects devices; the agent reports the devices it
selects to the scheduler, grouped into pools of identical devices with
their tags. Fields left out match any device.

Possible values:

* A JSON object with some of the keys:

  ``vendor_id``, ``product_id``
    Four hexadecimal digits each.
  ``address``
    The PCI address, ``[[[[<domain>]:]<bus>]:][<slot>][.[<function>]]``
    with glob wildcards, or an object of regular expressions keyed
    ``domain``, ``bus``, ``slot`` and ``function``.
  ``devname``
    The network interface name of the device (not with ``address``).
  any other key
    A tag reported with the devices, such as ``physical_network``,
    ``trusted``, ``remote_managed`` or ``live_migratable``.

  For example::

    device_spec = {"vendor_id": "8086", "product_id": "154d",
                   "physical_network": "physnet1"}

* A JSON list of such objects.

Related options:

* ``[pci] alias``: how flavors ask for the devices.
"""),
]


def register_opts(conf):
    conf.register_group(pci_group)
    conf.register_opts(pci_opts, group=pci_group)


def list_opts():
    return {pci_group: pci_opts}
