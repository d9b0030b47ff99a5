"""MetricsWeigher: rank hosts by a weighted sum of the metrics they report.

Computes may report metrics (``compute_nodes.metrics``: a JSON list of
``{"name": ..., "value": ...}``). ``[metrics] weight_setting`` names the
ones that count and their ratios; a host weighs ``sum(value * ratio)``::

    [metrics]
    weight_setting = cpu.percent=-1.0, memory.free=0.001
    weight_multiplier = 1.0

A host that does not report one of them (or reports a value that is not a
finite number):

* with ``[metrics] required = True`` (the default) fails the request with
  :class:`ComputeHostMetricNotFound`, a NoValidHost that names the metric;
  enable the MetricsFilter to drop such hosts before weighing;
* otherwise weighs ``[metrics] weight_of_unavailable`` (-10000.0), unless
  the metric's ratio or the host's multiplier is 0, in which case the
  metric is skipped.

The multiplier is ``[metrics] weight_multiplier``, overridden per
aggregate by the metadata key ``metrics_weight_multiplier`` (smallest
value wins). :func:`parse_setting` also serves the MetricsFilter and the
image properties weigher.
"""

import math

from oslo_log import log as logging
import numpy as np

from scheduler.conf import cached
from scheduler import exception
from scheduler import weights

LOG = logging.getLogger(__name__)


class ComputeHostMetricNotFound(exception.NoValidHost):
    msg_fmt = ("No valid host was found. Metric %(name)s is not reported by "
               "host %(host)s (node %(node)s) and [metrics] required is "
               "set; enable the MetricsFilter to skip such hosts.")


def parse_setting(items, option):
    """``[(name, weight)]`` from ``name=weight`` items; the items that do
    not parse (no ``=``, no name, a weight that is not a number) are
    logged and left out."""
    parsed, bad = [], []
    for item in items:
        name, separator, weight = item.partition('=')
        name = name.strip()
        try:
            number = float(weight)
        except ValueError:
            number = None
        if name and separator and number is not None:
            parsed.append((name, number))
        else:
            bad.append(item)
    if bad:
        LOG.warning('Ignoring the invalid elements of the option %(option)s:'
                    ' %(items)s', {'option': option, 'items': ', '.join(bad)})
    return parsed


def host_metrics(host_state):
    """``{name: value}`` of the metrics a host reports with a finite
    number as value."""
    found = {}
    for metric in host_state.metrics or ():
        if not isinstance(metric, dict) or not isinstance(
                metric.get('name'), str):
            continue
        try:
            value = float(metric.get('value'))
        except (TypeError, ValueError):
            continue
        if math.isfinite(value):
            found[metric['name']] = value
    return found


def metric_names(host_state):
    """The names of the metrics a host reports, as a frozenset."""
    return frozenset(metric['name'] for metric in host_state.metrics or ()
                     if isinstance(metric, dict)
                     and isinstance(metric.get('name'), str))


def _metric_value(name):
    def value_of(host_state):
        return host_metrics(host_state).get(name, np.nan)
    return value_of


class MetricsWeigher(weights.BaseHostWeigher):
    """Weighs hosts by the weighted sum of their metrics."""

    pure = True

    # The aggregate metadata key; the option is [metrics] weight_multiplier.
    multiplier_option = 'metrics_weight_multiplier'

    def default_multiplier(self):
        return cached.group('metrics').weight_multiplier

    @staticmethod
    def setting():
        return parse_setting(cached.group('metrics').weight_setting,
                             'metrics.weight_setting')

    def _weigh_object(self, host_state, spec):
        reported = host_metrics(host_state)
        value = 0.0
        for name, ratio in self.setting():
            if name in reported:
                value += reported[name] * ratio
                continue
            if cached.group('metrics').required:
                raise ComputeHostMetricNotFound(
                    name=name, host=host_state.host,
                    node=host_state.nodename)
            if ratio * self.weight_multiplier(host_state) != 0:
                return cached.group('metrics').weight_of_unavailable
        return value

    def constant_weight(self, host_table):
        # No metric to weigh (the default weight_setting): all weigh 0.
        return None if self.setting() else 0.0

    def weigh_all(self, host_table, rows, spec):
        setting = self.setting()
        values = np.zeros(len(rows))
        unavailable = np.zeros(len(rows), dtype=np.bool_)
        multipliers = None
        for name, ratio in setting:
            column = host_table.state_column(('metric', name),
                                             _metric_value(name))[rows]
            absent = np.isnan(column)
            if absent.any():
                if cached.group('metrics').required:
                    state = host_table.states[rows[np.argmax(absent)]]
                    raise ComputeHostMetricNotFound(
                        name=name, host=state.host, node=state.nodename)
                if multipliers is None:
                    multipliers = self.weight_multipliers(host_table, rows)
                unavailable |= absent & (ratio * multipliers != 0)
            values = values + np.where(absent, 0.0, column * ratio)
        return np.where(unavailable,
                        cached.group('metrics').weight_of_unavailable,
                        values)
