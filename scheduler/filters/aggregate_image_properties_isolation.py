"""AggregateImagePropertiesIsolation: image properties against the
metadata of the host's aggregates.

For every metadata key of the host's aggregates that names an image
property Nova knows (``hw_architecture``, ``os_type``, ...; see
:mod:`scheduler.image_properties`) and that the requested image sets, the
image's value must be one of the values the aggregates set for the key
(split at commas). The image's value is read as Nova reads it, legacy
names and canonical spellings included, and compared as text: an image
with ``architecture=AMD64`` has ``hw_architecture`` ``x86_64``, one with
``hw_qemu_guest_agent=yes`` has ``True``. Keys the image does not set, or
sets to an empty or false value, are ignored, and so are keys that name
no image property (logged once, at warning: they never isolate anything).
A host in no aggregate passes. With ``[filter_scheduler]
aggregate_image_properties_isolation_namespace`` set, only the keys that
start with the namespace and ``..._separator`` count, which Nova warns is
no longer useful. Example: keep Windows images on licensed hosts::

    gantt-manage aggregate set-metadata windows os_type=windows
    # an image with os_type=windows (or Windows) now fails every host
    # whose aggregates set os_type to something else
"""

from oslo_log import log as logging

from scheduler import conf
from scheduler import filters
from scheduler.filters import aggregate_metadata
from scheduler import image_properties

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# Warnings given once per process rather than once per host and request.
_warned = set()


def _warn_once(key, message, *args):
    if key not in _warned:
        _warned.add(key)
        LOG.warning(message, *args)


def _prefix():
    options = CONF.filter_scheduler
    namespace = options.aggregate_image_properties_isolation_namespace
    if not namespace:
        return None
    _warn_once(('namespace', namespace),
               'Filtering on image properties prefixed with '
               '[filter_scheduler] aggregate_image_properties_isolation_'
               'namespace (%s) only reaches the properties Nova knows; '
               'consider [scheduler] enable_isolated_aggregate_filtering '
               'instead', namespace)
    return namespace + options.aggregate_image_properties_isolation_separator


def conflict(aggregates, properties, prefix):
    """The first metadata key whose values do not hold the image's
    (normalised) property of that name, or None."""
    for key, values in aggregate_metadata.by_key(aggregates).items():
        if prefix is not None and not key.startswith(prefix):
            continue
        if key not in image_properties.FIELDS:
            _warn_once(('key', key), 'Aggregate metadata key %s names no '
                       'image property; AggregateImagePropertiesIsolation '
                       'ignores it', key)
            continue
        value = properties.get(key)
        if value and image_properties.as_text(value) not in values:
            return key
    return None


class AggregateImagePropertiesIsolation(filters.BaseHostFilter):
    """Passes hosts whose aggregates accept the image's properties."""

    pure = True

    # Aggregates and images do not change within a request.
    run_filter_once_per_request = True

    RUN_ON_REBUILD = True

    def host_passes(self, host_state, spec):
        properties = image_properties.of_spec(spec)
        key = conflict(host_state.aggregates, properties, _prefix())
        if key is None:
            return True
        allowed = aggregate_metadata.by_key(host_state.aggregates)[key]
        LOG.debug('%(host)s fails image properties isolation: its '
                  'aggregates do not allow %(key)s=%(value)s (only '
                  '%(allowed)s)',
                  {'host': host_state, 'key': key,
                   'value': image_properties.as_text(properties[key]),
                   'allowed': ', '.join(sorted(allowed))})
        return False

    def filter_all(self, host_table, mask, spec):
        properties = image_properties.of_spec(spec)
        if not properties:
            return mask
        prefix = _prefix()
        return mask & aggregate_metadata.per_row(
            host_table,
            lambda aggregates: conflict(aggregates, properties, prefix)
            is None)
