"""Nova's ImageMeta and ImageMetaProps, as Gantt's ImageMeta.

Nova sends an image as ``ImageMeta`` whose ``properties`` is an
``ImageMetaProps`` object: typed fields (``hw_cpu_cores: 2``,
``hw_qemu_guest_agent: True``, ``hw_numa_cpus: [[0, 1], [2, 3]]``,
``traits_required: [...]``), the legacy names already read as the
current ones. Gantt's :class:`scheduler.objects.request_spec.ImageMeta`
carries Glance's raw strings, which :mod:`scheduler.image_properties`
reads the way Nova's model does. :func:`properties` writes Nova's typed
values back in Glance's form, so that reading them again gives the same
values::

    properties(props)   # {'hw_cpu_cores': '2', 'hw_qemu_guest_agent':
                        #  'True', 'hw_numa_cpus.0': '0,1', ...,
                        #  'trait:COMPUTE_NET_VIF_MODEL_VIRTIO': 'required'}

The block device mapping properties (``img_block_device_mapping``,
``img_mappings``) ask nothing of a host and are left out, as Gantt's
reader leaves them out.
"""

from oslo_log import log as logging
from oslo_serialization import jsonutils

from scheduler.nova import primitives
from scheduler.objects import request_spec as spec_obj

LOG = logging.getLogger(__name__)

# Properties that say nothing a host must have.
_LEFT_OUT = frozenset(('img_block_device_mapping', 'img_mappings'))


def _cpu_list(value, field):
    if not isinstance(value, list) or not all(
            isinstance(cpu, int) and not isinstance(cpu, bool)
            for cpu in value):
        primitives.refuse(field, 'must be a list of CPU numbers')
    return ','.join(str(cpu) for cpu in sorted(value))


def _as_text(value):
    if isinstance(value, bool):
        return 'True' if value else 'False'
    if isinstance(value, (int, float, str)):
        return str(value)
    # A structured property of a newer Nova: kept, as JSON.
    return jsonutils.dumps(value, sort_keys=True)


def properties(props, field):
    """Glance-style ``{name: string}`` of a decoded ImageMetaProps."""
    primitives.expect(props, field, 'ImageMetaProps')
    raw = {}
    for name, value in props.data.items():
        where = '%s.%s' % (field, name)
        if value is None or name in _LEFT_OUT:
            continue
        if name == 'traits_required':
            for trait in _list(value, where):
                if not isinstance(trait, str):
                    primitives.refuse(where, 'must list trait names')
                raw['trait:%s' % trait] = 'required'
        elif name == 'hw_numa_cpus':
            for cell, cpus in enumerate(_list(value, where)):
                raw['hw_numa_cpus.%d' % cell] = _cpu_list(
                    cpus, '%s[%d]' % (where, cell))
        elif name == 'hw_numa_mem':
            for cell, memory in enumerate(_list(value, where)):
                if not isinstance(memory, int) or isinstance(memory, bool):
                    primitives.refuse('%s[%d]' % (where, cell),
                                      'must be an amount of MB')
                raw['hw_numa_mem.%d' % cell] = str(memory)
        elif isinstance(value, primitives.NovaObject):
            LOG.debug('Image property %s (a Nova %s) is not read',
                      name, value.name)
        else:
            raw[name] = _as_text(value)
    return raw


def _list(value, field):
    if not isinstance(value, list):
        primitives.refuse(field, 'must be a list')
    return value


def image(meta, field):
    """Gantt's ImageMeta of a decoded Nova ImageMeta (None: None)."""
    if meta is None:
        return None
    primitives.expect(meta, field, 'ImageMeta')
    values = {}
    for name in ('id', 'name', 'disk_format'):
        value = meta.get(name)
        if value is not None and not isinstance(value, str):
            primitives.refuse('%s.%s' % (field, name), 'must be a string')
        values[name] = value
    props = meta.get('properties')
    values['properties'] = ({} if props is None else properties(
        props, '%s.properties' % field))
    return spec_obj.ImageMeta(**values)
