"""IsolatedHostsFilter: keep some images on some hosts.

``[filter_scheduler] isolated_images`` (image UUIDs) may only boot on
``isolated_hosts`` (host names, compared exactly). With
``restrict_isolated_hosts_to_isolated_images`` (the default) the isolated
hosts take nothing else; without it they also take other images:

==================  ==================  ==================
restrict = True     isolated image      other image
==================  ==================  ==================
isolated host       passes              fails
other host          fails               passes
==================  ==================  ==================

With restrict = False, the isolated host also passes other images. When
``isolated_images`` is empty, the isolated hosts take nothing if restricted
and everything otherwise. A request without an image (booting from a
volume) counts as another image::

    [filter_scheduler]
    isolated_images = 0e4f5c1e-6f2c-4d8e-9a44-0c9ac0e2b7d1
    isolated_hosts = secure-1,secure-2
"""

from oslo_log import log as logging
import numpy as np

from scheduler import conf
from scheduler import filters

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def _decide(image_isolated, host_isolated, restrict):
    if restrict:
        return image_isolated == host_isolated
    return host_isolated or not image_isolated


def _image_isolated(spec):
    options = CONF.filter_scheduler
    image = spec.obj_get('image')
    image_id = image.obj_get('id') if image else None
    return bool(options.isolated_images) and (
        image_id in options.isolated_images)


class IsolatedHostsFilter(filters.BaseHostFilter):
    """Passes hosts as the isolated images and hosts options say."""

    pure = True

    # The options are read once per request.
    run_filter_once_per_request = True

    RUN_ON_REBUILD = True

    def host_passes(self, host_state, spec):
        options = CONF.filter_scheduler
        host_isolated = host_state.host in options.isolated_hosts
        passes = _decide(_image_isolated(spec), host_isolated,
                         options.restrict_isolated_hosts_to_isolated_images)
        if not passes:
            LOG.debug('%(host)s fails image isolation (isolated host: '
                      '%(isolated)s)', {'host': host_state,
                                        'isolated': host_isolated})
        return passes

    def filter_all(self, host_table, mask, spec):
        options = CONF.filter_scheduler
        image_isolated = _image_isolated(spec)
        restrict = options.restrict_isolated_hosts_to_isolated_images
        isolated = host_table.hosts_mask(options.isolated_hosts,
                                         ignore_case=False)
        passed = np.where(isolated, _decide(image_isolated, True, restrict),
                          _decide(image_isolated, False, restrict))
        return mask & passed
