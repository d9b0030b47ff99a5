"""Options of the ``[DEFAULT]`` group that Gantt owns.

``transport_url`` and ``rpc_response_timeout`` are oslo.messaging's own and
are registered by it when the transport is created (see ``scheduler.rpc``).
"""

import socket

from oslo_config import cfg

default_opts = [
    cfg.HostDomainOpt('host',
                      default=socket.gethostname(),
                      sample_default='<current_hostname>',
                      help="""
Hostname, FQDN or IP address of this host.

Used as the name of this service in the services table, as the RPC server
name of compute agents (topic ``compute.<host>``), and in log lines.

Possible values:

* A valid host name, domain name or IP address (Nova's option type:
  letters, digits, ``-``, ``_`` and dots, at most 255 characters), unique
  among the services of one binary.
"""),
    cfg.IntOpt('report_interval',
               default=10,
               min=1,
               help="""
Number of seconds between service heartbeats written to the services table.

Related options:

* ``service_down_time``: should be several times larger, so that a lost
  heartbeat or two does not mark a service as down.
"""),
    cfg.IntOpt('service_down_time',
               default=60,
               min=1,
               help="""
Maximum time in seconds since the last heartbeat for a service to count as up.

A compute service not heard from for longer is excluded by ComputeFilter and
by the chance scheduler.

Related options:

* ``report_interval``: service_down_time should be larger than it.
"""),
    cfg.StrOpt('default_availability_zone',
               default='nova',
               help="""
Availability zone of compute hosts that belong to no zone.

A host is in the zones named by the ``availability_zone`` metadata of the
aggregates it belongs to. A host in no such aggregate is in this zone, and
AvailabilityZoneFilter lets it through only for requests that ask for this
zone or for none.

Possible values:

* Any string naming a zone; keep it different from the zones set on
  aggregates.

Related options:

* ``default_schedule_zone``: the zone given to requests that ask for none.
"""),
    cfg.StrOpt('default_schedule_zone',
               help="""
Availability zone given to requests that do not ask for one.

Gantt's scheduler never reads it: the client (the conductor or the API in
front of it) sets the zone of the request before asking for a host.

Possible values:

* unset: requests without a zone may land in any zone (the default).
* The name of an existing availability zone.

Related options:

* ``default_availability_zone``
"""),
]


def _ratio(resource, what, initial):
    option = '%s_allocation_ratio' % resource
    return [
        cfg.FloatOpt(option,
                     min=0.0,
                     deprecated_opts=[cfg.DeprecatedOpt(
                         option, group='filter_scheduler')],
                     help="""
%(what)s allocation ratio of the compute nodes of this host.

Set on a compute host, its nodes report it and the scheduler and the claims
allow ``total * ratio - reserved``. Unset (the default), a node keeps the
ratio it has, and a new node takes ``initial_%(option)s``; 0.0 means unset
too, as in Nova. Nodes that never
reported one (recorded before Gantt followed Nova here) are counted with this
option, or else ``initial_%(option)s``.

Possible values:

* A positive number; nothing or 0.0 for unset.

Related options:

* ``initial_%(option)s``
* The AggregateCoreFilter, AggregateRamFilter and AggregateDiskFilter read an
  aggregate's ``%(option)s`` metadata instead.
""" % {'what': what, 'option': option}),
        cfg.FloatOpt('initial_' + option,
                     default=initial,
                     min=0.0,
                     help="""
%(what)s allocation ratio a new compute node starts with.

Used when ``%(option)s`` is unset, at the node's first report; later reports
keep the node's ratio.

Related options:

* ``%(option)s``
""" % {'what': what, 'option': option}),
    ]


allocation_ratio_opts = (_ratio('cpu', 'Virtual CPU to physical CPU', 4.0)
                         + _ratio('ram', 'Virtual RAM to physical RAM', 1.0)
                         + _ratio('disk', 'Virtual disk to physical disk',
                                  1.0))


def register_opts(conf):
    conf.register_opts(default_opts)
    conf.register_opts(allocation_ratio_opts)


def list_opts():
    return {'DEFAULT': default_opts + allocation_ratio_opts}
