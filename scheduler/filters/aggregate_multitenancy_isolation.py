"""AggregateMultiTenancyIsolation: keep an aggregate's hosts for some
projects.

A host whose aggregates set ``filter_tenant_id`` (or any key starting with
it: ``filter_tenant_id2``, ``filter_tenant_id_acme``..., so that a long
list can be split over several keys) takes only the projects listed there;
values may list several projects separated by commas. Hosts whose
aggregates set no such key take every project. The projects listed may
still boot elsewhere: this filter keeps others out, it does not keep them
in. Example::

    gantt-manage aggregate set-metadata acme-rack \\
        filter_tenant_id=8d9cc3e1,2b7f0e64 filter_tenant_id2=51a0c0d9
"""

from oslo_log import log as logging

from scheduler import filters
from scheduler.filters import aggregate_metadata

LOG = logging.getLogger(__name__)

KEY_PREFIX = 'filter_tenant_id'


def allowed_projects(aggregates):
    """The projects the aggregates keep their hosts for (empty: all)."""
    allowed = set()
    for key, values in aggregate_metadata.by_key(aggregates).items():
        if key.startswith(KEY_PREFIX):
            allowed |= values
    return allowed


def admits(aggregates, project_id):
    allowed = allowed_projects(aggregates)
    return not allowed or project_id in allowed


class AggregateMultiTenancyIsolation(filters.BaseHostFilter):
    """Passes hosts whose aggregates admit the request's project."""

    pure = True

    # Aggregates and the project do not change within a request.
    run_filter_once_per_request = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        project_id = spec.obj_get('project_id')
        if admits(host_state.aggregates, project_id):
            return True
        LOG.debug('%(host)s fails tenant isolation: project %(project)s is '
                  'not one of its aggregates\' filter_tenant_id',
                  {'host': host_state, 'project': project_id})
        return False

    def filter_all(self, host_table, mask, spec):
        project_id = spec.obj_get('project_id')
        return mask & aggregate_metadata.per_row(
            host_table, lambda aggregates: admits(aggregates, project_id))
