"""AvailabilityZoneFilter: only hosts in the requested availability zone.

A host's zones are the ``availability_zone`` metadata of the aggregates it
belongs to; a host in no such aggregate is in ``[DEFAULT]
default_availability_zone``. A request without a zone passes every host::

    with db_api.api_writer() as session:   # the API database
        agg = aggregates.create(session, 'rack1',
                                metadata={'availability_zone': 'az1'})
        aggregates.add_host(session, agg.id, 'compute-1')
    # a spec with availability_zone='az1' now only lands on compute-1
"""

from oslo_log import log as logging

from scheduler import filters

LOG = logging.getLogger(__name__)


class AvailabilityZoneFilter(filters.BaseHostFilter):
    """Passes hosts in the zone the request asks for."""

    pure = True

    # Zones do not change within a request.
    run_filter_once_per_request = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        zone = spec.obj_get('availability_zone')
        if not zone:
            return True
        if zone in host_state.availability_zones:
            return True
        LOG.debug("Availability Zone '%(az)s' requested. %(host)s has AZs: "
                  "%(host_az)s", {'az': zone, 'host': host_state,
                                  'host_az': host_state.availability_zone})
        return False

    def passing_rows(self, host_table, spec):
        zone = spec.obj_get('availability_zone')
        return host_table.zone_rows(zone) if zone else None

    def filter_all(self, host_table, mask, spec):
        zone = spec.obj_get('availability_zone')
        if not zone:
            return mask
        return mask & host_table.in_zone(zone)
