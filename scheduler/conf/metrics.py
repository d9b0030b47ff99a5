"""Options of the ``[metrics]`` group: the MetricsWeigher and MetricsFilter.

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
]


def register_opts(conf):
    conf.register_group(metrics_group)
    conf.register_opts(metrics_opts, group=metrics_group)


def list_opts():
    return {metrics_group: metrics_opts}
