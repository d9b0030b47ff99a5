"""AggregateImagePropertiesIsolation: image properties against the
metadata of the host's aggregates.

For every metadata key of the host's aggregates that the requested image
also sets as a property, the property's value must be one of the values
the aggregates set for the key (values are split at commas). Keys the
image does not set, or sets empty, are ignored; a host in no aggregate
passes. With ``[filter_scheduler]
aggregate_image_properties_isolation_namespace`` set, only the keys that
start with the namespace and ``..._separator`` count. Example: keep
Windows images on licensed hosts::

    gantt-manage aggregate set-metadata windows os_type=windows
    # an image with os_type=windows now fails every host whose aggregates
    # set os_type to something else
"""

from oslo_log import log as logging

from scheduler import conf
from scheduler import filters
from scheduler.filters import aggregate_metadata

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def _prefix():
    options = CONF.filter_scheduler
    namespace = options.aggregate_image_properties_isolation_namespace
    if not namespace:
        return None
    return namespace + options.aggregate_image_properties_isolation_separator


def conflict(aggregates, properties, prefix):
    """The first metadata key whose values do not hold the image's
    property of that name, or None."""
    for key, values in aggregate_metadata.by_key(aggregates).items():
        if prefix is not None and not key.startswith(prefix):
            continue
        value = properties.get(key)
        if value and str(value) not in values:
            return key
    return None


def _properties(spec):
    image = spec.obj_get('image')
    return (image.obj_get('properties') or {}) if image else {}


class AggregateImagePropertiesIsolation(filters.BaseHostFilter):
    """Passes hosts whose aggregates accept the image's properties."""

    # Aggregates and images do not change within a request.
    run_filter_once_per_request = True

    RUN_ON_REBUILD = True

    def host_passes(self, host_state, spec):
        key = conflict(host_state.aggregates, _properties(spec), _prefix())
        if key is None:
            return True
        LOG.debug('%(host)s fails image properties isolation: its '
                  'aggregates do not allow %(key)s=%(value)s',
                  {'host': host_state, 'key': key,
                   'value': _properties(spec).get(key)})
        return False

    def filter_all(self, host_table, mask, spec):
        properties = _properties(spec)
        if not properties:
            return mask
        prefix = _prefix()
        return mask & aggregate_metadata.per_row(
            host_table,
            lambda aggregates: conflict(aggregates, properties, prefix)
            is None)
