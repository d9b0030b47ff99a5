"""Options of the ``[metrics]`` group: the MetricsWeigher and MetricsFilter,
and the daemons' Prometheus endpoint (``prometheus_port``, off by default;
see :mod:`scheduler.prometheus`).

Computes may report metrics (``compute_nodes.metrics``: a JSON list of
``{"name": ..., "value": ...}``); the MetricsWeigher ranks hosts by a
weighted sum of some of them::

    [metrics]
    weight_setting = cpu.percent=-1.0, memory.free=0.001
    required = false
"""

from oslo_config import cfg

metrics_group = cfg.OptGroup(
    'metrics',
    title='Metrics weigher options',
    help="How the MetricsWeigher and MetricsFilter use host metrics.")

metrics_opts = [
    cfg.FloatOpt('weight_multiplier',
                 default=1.0,
                 mutable=True,
                 help="""
Multiplier of the metrics weigher.

Possible values:

* A positive number prefers hosts with a larger weighted sum of metrics.
* A negative number prefers hosts with a smaller one.
* 0 ignores metrics (and a missing metric is then not an error).

Related options:

* ``weight_setting``
* Aggregate metadata ``metrics_weight_multiplier`` overrides it for the
  hosts of the aggregate.
"""),
    cfg.ListOpt('weight_setting',
                default=[],
                mutable=True,
                help="""
Metrics the weigher sums, each with its ratio.

Each item is ``name=ratio``; a host weighs the sum of ``value * ratio`` over
the items. Items that do not parse are logged and ignored. The
MetricsFilter passes only hosts that report every metric named here.

Possible values:

* A list such as ``cpu.percent=-1.0, memory.free=0.001``, or nothing (every
  host weighs 0).

Related options:

* ``required``
* ``weight_of_unavailable``
"""),
    cfg.BoolOpt('required',
                default=True,
                mutable=True,
                help="""
Whether every metric of ``weight_setting`` must be reported by every host.

True: a host missing one fails the request with an error (enable the
MetricsFilter to drop such hosts first). False: such a host weighs
``weight_of_unavailable``.

Related options:

* ``weight_of_unavailable``
"""),
    cfg.FloatOpt('weight_of_unavailable',
                 default=-10000.0,
                 mutable=True,
                 help="""
Weight of a host that misses a metric when ``required`` is False.

The default is low enough to rank such hosts last.

Related options:

* ``required``
"""),
    cfg.PortOpt('prometheus_port',
                help="""
Port on which each daemon serves its metrics in Prometheus's text format.

Unset (the default), no endpoint is served. Set, the daemon's master process
serves ``http://<prometheus_host>:<port>/metrics``, with the values of all its
worker processes added up. Each daemon on a host needs a port of its own
(for example 9464 for gantt-scheduler, 9465 for gantt-conductor). A port
already in use stops the daemon at start with an error naming it.

Possible values:

* A TCP port, or nothing to serve no metrics.

Related options:

* ``prometheus_host``
"""),
    cfg.HostAddressOpt('prometheus_host',
                       default='127.0.0.1',
                       help="""
Address the Prometheus endpoint listens on.

The default serves the local host only; set ``0.0.0.0`` (or ``::``) to let a
Prometheus server on another host scrape it.

Related options:

* ``prometheus_port``
"""),
]


def register_opts(conf):
    conf.register_group(metrics_group)
    conf.register_opts(metrics_opts, group=metrics_group)


def list_opts():
    return {metrics_group: metrics_opts}
