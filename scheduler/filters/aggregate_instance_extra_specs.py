"""AggregateInstanceExtraSpecsFilter: flavor extra specs against the
metadata of the host's aggregates.

The extra specs that count are those without a scope (``ssd``) and those
of the ``aggregate_instance_extra_specs:`` scope (the key after the scope
is the metadata key); other scopes are left to other filters. For each
one, the host's aggregates must set the key, and one of the values they
set (values are split at commas) must meet the requirement, with the
operators of :mod:`scheduler.filters.extra_specs_ops`. A flavor without
extra specs passes every host. Example::

    gantt-manage aggregate set-metadata fast-storage ssd=true
    openstack flavor set m1.ssd \\
        --property aggregate_instance_extra_specs:ssd=true
"""

from oslo_log import log as logging

from scheduler import filters
from scheduler.filters import aggregate_metadata
from scheduler.filters import extra_specs_ops

LOG = logging.getLogger(__name__)

SCOPE = 'aggregate_instance_extra_specs'


def requirements(flavor):
    """``[(metadata key, requirement)]`` of the extra specs that count."""
    found = []
    for key, requirement in (flavor.obj_get('extra_specs') or {}).items():
        scope = key.split(':', 1)
        if len(scope) == 1:
            found.append((key, requirement))
        elif scope[0] == SCOPE:
            found.append((scope[1], requirement))
    return found


def unmet(aggregates, wanted):
    """The first ``(key, requirement)`` of ``wanted`` that the metadata of
    ``aggregates`` does not meet, or None."""
    metadata = aggregate_metadata.by_key(aggregates)
    for key, requirement in wanted:
        values = metadata.get(key)
        if not values or not any(extra_specs_ops.match(value, requirement)
                                 for value in values):
            return key, requirement
    return None


class AggregateInstanceExtraSpecsFilter(filters.BaseHostFilter):
    """Passes hosts whose aggregates meet the flavor's extra specs."""

    pure = True

    # Aggregates and flavors do not change within a request.
    run_filter_once_per_request = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        wanted = requirements(spec.flavor)
        if not wanted:
            return True
        missing = unmet(host_state.aggregates, wanted)
        if missing is None:
            return True
        LOG.debug('%(host)s fails: its aggregates do not meet extra spec '
                  '%(key)s=%(requirement)r', {'host': host_state,
                                              'key': missing[0],
                                              'requirement': missing[1]})
        return False

    def filter_all(self, host_table, mask, spec):
        wanted = requirements(spec.flavor)
        if not wanted:
            return mask
        return mask & aggregate_metadata.per_row(
            host_table, lambda aggregates: unmet(aggregates, wanted) is None)
