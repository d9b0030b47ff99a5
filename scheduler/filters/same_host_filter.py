"""SameHostFilter: only hosts that run one of the given instances.

The ``same_host`` scheduler hint lists instance UUIDs; a host passes if
it runs at least one of them. Without the hint every host passes::

    gantt-manage server create ... --hint same_host=<uuid> \\
        --hint same_host=<uuid2>
"""

from oslo_log import log as logging

from scheduler import filters

LOG = logging.getLogger(__name__)

HINT = 'same_host'


def hint_uuids(spec, name):
    """The instance UUIDs of hint ``name`` as a list (maybe empty)."""
    value = spec.get_scheduler_hint(name)
    if not value:
        return []
    return [value] if isinstance(value, str) else list(value)


class SameHostFilter(filters.BaseHostFilter):
    """Passes hosts that run one of the ``same_host`` instances."""

    pure = True

    # The hint and the instances it names do not change within a request.
    run_filter_once_per_request = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        uuids = hint_uuids(spec, HINT)
        if not uuids or any(uuid in host_state.instances for uuid in uuids):
            return True
        LOG.debug('%(host)s runs none of the instances %(uuids)s '
                  '(same_host)', {'host': host_state,
                                  'uuids': ', '.join(uuids)})
        return False

    def filter_all(self, host_table, mask, spec):
        uuids = hint_uuids(spec, HINT)
        if not uuids:
            return mask
        return mask & (host_table.instance_counts(uuids) > 0)
