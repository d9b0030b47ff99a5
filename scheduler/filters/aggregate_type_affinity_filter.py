"""AggregateTypeAffinityFilter: keep an aggregate's hosts for some flavors.

A host whose aggregates set ``instance_type`` takes only the flavors named
there (by flavor name; one value may name several, separated by commas,
and a host in several such aggregates takes the flavors of any of them).
Hosts whose aggregates set no ``instance_type`` take every flavor::

    gantt-manage aggregate set-metadata big-rack instance_type=m1.xlarge,m1.2xl
"""

from oslo_log import log as logging

from scheduler import filters
from scheduler.filters import aggregate_metadata

LOG = logging.getLogger(__name__)

KEY = 'instance_type'


def admits(aggregates, flavor_name):
    values = aggregate_metadata.values_of(aggregates, KEY)
    if not values:
        return True
    return any(flavor_name in [name.strip() for name in value.split(',')]
               for value in values)


class AggregateTypeAffinityFilter(filters.BaseHostFilter):
    """Passes hosts whose aggregates admit the request's flavor."""

    pure = True

    # Aggregates and the flavor do not change within a request.
    run_filter_once_per_request = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        name = spec.flavor.obj_get('name')
        if admits(host_state.aggregates, name):
            return True
        LOG.debug('%(host)s fails: its aggregates do not take flavor '
                  '%(flavor)s', {'host': host_state, 'flavor': name})
        return False

    def filter_all(self, host_table, mask, spec):
        name = spec.flavor.obj_get('name')
        return mask & aggregate_metadata.per_row(
            host_table, lambda aggregates: admits(aggregates, name))
