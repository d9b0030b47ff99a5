"""Options of the ``[DEFAULT]`` group that Gantt owns.

``transport_url`` and ``rpc_response_timeout`` are oslo.messaging's own and
are registered by it when the transport is created (see ``scheduler.rpc``).
"""

import socket

from oslo_config import cfg

default_opts = [
    cfg.StrOpt('host',
               default=socket.gethostname(),
               sample_default='<current_hostname>',
               help="""
Hostname, FQDN or IP address of this host.

Used as the name of this service in the services table, as the RPC server
name of compute agents (topic ``compute.<host>``), and in log lines.

Possible values:

* A string of at most 255 characters that is unique among the services of
  one binary.
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


def register_opts(conf):
    conf.register_opts(default_opts)


def list_opts():
    return {'DEFAULT': default_opts}
