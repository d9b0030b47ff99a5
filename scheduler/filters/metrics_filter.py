"""MetricsFilter: only hosts that report every metric the weigher needs.

The metrics are those named in ``[metrics] weight_setting``; a host passes
when its reported metrics include all of them (whatever their values).
With no setting every host passes. Enable it beside the MetricsWeigher so
that a host missing a metric is dropped instead of failing the request
(``[metrics] required``) or weighing ``weight_of_unavailable``::

    [filter_scheduler]
    enabled_filters = ComputeFilter,RamFilter,MetricsFilter
    [metrics]
    weight_setting = cpu.percent=-1.0
"""

from oslo_log import log as logging
import numpy as np

from scheduler import conf
from scheduler import filters
from scheduler.weights import metrics

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def wanted():
    """The metric names ``[metrics] weight_setting`` names."""
    return frozenset(name for name, _ratio in metrics.parse_setting(
        CONF.metrics.weight_setting, 'metrics.weight_setting'))


class MetricsFilter(filters.BaseHostFilter):
    """Passes hosts that report the weighed metrics."""

    pure = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        names = wanted()
        reported = metrics.metric_names(host_state)
        if names <= reported:
            return True
        LOG.debug('%(host)s does not report the metrics %(missing)s',
                  {'host': host_state,
                   'missing': ', '.join(sorted(names - reported))})
        return False

    def filter_all(self, host_table, mask, spec):
        names = wanted()
        if not names:
            return mask
        codes, keys = host_table.grouped('metric_names',
                                         metrics.metric_names)
        answers = np.fromiter((names <= key for key in keys),
                              dtype=np.bool_, count=len(keys))
        return mask & answers[codes]
