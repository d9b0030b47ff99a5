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
]


def register_opts(conf):
    conf.register_opts(default_opts)


def list_opts():
    return {'DEFAULT': default_opts}
