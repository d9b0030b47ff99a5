"""TypeAffinityFilter: one flavor per host.

A host passes when it runs no instance, or only instances of the
requested flavor. Flavors are told apart by ``flavorid`` (their name when
they have none), as the instances the host runs are recorded
(:mod:`scheduler.host_cache.host_instances`). Pair it with spreading weighers
so that new flavors find empty hosts::

    [filter_scheduler]
    enabled_filters = ComputeFilter,RamFilter,TypeAffinityFilter
"""

from oslo_log import log as logging
import numpy as np

from scheduler import filters
from scheduler import placement_types

LOG = logging.getLogger(__name__)


def requested_flavor(spec):
    """The requested flavor's id, as instances record theirs."""
    return placement_types.info_from_flavor_and_image(
        spec.obj_get('flavor'), None).flavor_id


def flavors_on_host(host_state):
    """The flavor ids of the instances on the host, as a frozenset."""
    return frozenset(info.flavor_id
                     for info in host_state.instances.values())


class TypeAffinityFilter(filters.BaseHostFilter):
    """Passes hosts that run no instance of another flavor."""

    pure = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        wanted = requested_flavor(spec)
        others = flavors_on_host(host_state) - {wanted}
        if not others:
            return True
        LOG.debug('%(host)s runs other flavors than %(flavor)s: %(others)s',
                  {'host': host_state, 'flavor': wanted,
                   'others': ', '.join(sorted(map(str, others)))})
        return False

    def filter_all(self, host_table, mask, spec):
        wanted = requested_flavor(spec)
        codes, keys = host_table.grouped('instance_flavors', flavors_on_host)
        answers = np.fromiter((not (key - {wanted}) for key in keys),
                              dtype=np.bool_, count=len(keys))
        return mask & answers[codes]
