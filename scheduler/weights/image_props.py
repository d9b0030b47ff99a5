"""ImagePropertiesWeigher: weigh hosts by the images their instances run.

For each instance on a host, every property of the requested image that
the instance's image has with the same value adds its weight. Both
images are read as Nova's image-meta model reads them (legacy names,
canonical values, unknown names dropped; see
:mod:`scheduler.image_properties`) and their values compared as text, so
``architecture=AMD64`` on one matches ``hw_architecture=x86_64`` on the
other and ``hw_qemu_guest_agent=yes`` matches ``true``. A property adds
1 per instance when ``[filter_scheduler] image_props_weight_setting`` is
empty, else the weight the setting gives it (properties it does not name
count 0)::

    [filter_scheduler]
    image_props_weight_multiplier = 1.0
    image_props_weight_setting = os_distro=10, os_secure_boot=1

A positive ``image_props_weight_multiplier`` packs instances of alike
images, a negative one spreads them; the default, 0.0, turns the weigher
off, and as in Nova it then weighs every host 0 even where an aggregate's
``image_props_weight_multiplier`` metadata would override the option. A
request without an image weighs every host 0.
"""

import numpy as np

from scheduler import conf
from scheduler import image_properties
from scheduler import weights
from scheduler.weights import metrics

CONF = conf.CONF


def wanted(spec):
    """``[(property, value as text, weight)]`` that count."""
    options = CONF.filter_scheduler
    if options.image_props_weight_multiplier == 0.0:
        return []
    image = spec.obj_get('image')
    properties = image.obj_get('properties') if image else None
    setting = dict(metrics.parse_setting(
        options.image_props_weight_setting,
        'filter_scheduler.image_props_weight_setting'))
    found = []
    for name, value in sorted(image_properties.text_pairs(properties)):
        weight = setting.get(name, 0.0) if setting else 1.0
        if weight != 0:
            found.append((name, value, weight))
    return found


def matching_instances(host_state, name, value):
    """How many instances on the host booted an image whose property
    ``name`` reads as ``value`` (text of the normalised value)."""
    count = 0
    for info in host_state.instances.values():
        if (name, value) in image_properties.text_pairs(
                info.image_properties):
            count += 1
    return count


def _counter(name, value):
    def count(host_state):
        return matching_instances(host_state, name, value)
    return count


class ImagePropertiesWeigher(weights.BaseHostWeigher):
    """Weighs hosts by their instances' images alike the requested one."""

    pure = True

    multiplier_option = 'image_props_weight_multiplier'

    def _weigh_object(self, host_state, spec):
        weight = 0.0
        for name, value, factor in wanted(spec):
            weight += factor * matching_instances(host_state, name, value)
        return weight

    def weigh_all(self, host_table, rows, spec):
        totals = np.zeros(len(rows))
        for name, value, factor in wanted(spec):
            counts = host_table.state_column(
                ('image_property', name, value), _counter(name, value),
                np.float64)
            totals = totals + factor * counts[rows]
        return totals
