"""Nova's fanout payloads as what Gantt's HostManager applies.

Nova's API casts ``update_aggregates`` (a list of Aggregate objects, or
an AggregateList) and ``delete_aggregate`` (one Aggregate); its computes
cast ``update_instance_info`` with an InstanceList (or one Instance).
The HostManager takes :class:`scheduler.placement_types.Aggregate` and
``{uuid: placement_types.InstanceInfo}``, as Gantt's own fanouts give it::

    host_manager.update_aggregates(
        host_updates.aggregates(decoded, 'aggregates'))
    host_manager.update_instance_info(
        host, host_updates.instances(decoded, 'instance_info'))

An instance's image properties are those its ``system_metadata`` keeps
(``image_<property>``), as Nova's filters read them from it.
"""

from scheduler.nova import primitives
from scheduler import placement_types
from scheduler import validation

IMAGE_PREFIX = 'image_'
# Instances (or hosts) one fanout may name: a host full of small servers.
MAX_ITEMS = 100000


def _items(value, field, item_name, list_name):
    """The items of a list of ``item_name`` objects, of a ``list_name``
    object, or of one ``item_name`` object alone."""
    if isinstance(value, primitives.NovaObject) and value.name == list_name:
        value = value.objects()
    elif isinstance(value, primitives.NovaObject):
        value = [value]
    items = validation.sequence(field, value, MAX_ITEMS)
    for index, item in enumerate(items):
        primitives.expect(item, '%s[%d]' % (field, index), item_name)
    return items


def aggregate(obj, field):
    """A decoded Nova Aggregate as the host cache's Aggregate."""
    primitives.expect(obj, field, 'Aggregate')
    validation.integer('%s.id' % field, obj.data.get('id'), low=1,
                       high=validation.MAX_INT32)
    validation.uuid('%s.uuid' % field, obj.data.get('uuid'))
    validation.text('%s.name' % field, obj.data.get('name'),
                    validation.MAX_NAME_LEN)
    hosts = validation.strings('%s.hosts' % field, obj.get('hosts', []),
                               max_items=MAX_ITEMS)
    metadata = validation.string_dict('%s.metadata' % field,
                                      obj.get('metadata', {}))
    return placement_types.Aggregate(
        id=obj.data['id'], uuid=obj.data['uuid'], name=obj.data['name'],
        hosts=frozenset(hosts), metadata=dict(metadata))


def aggregates(value, field):
    return [aggregate(item, '%s[%d]' % (field, index))
            for index, item in enumerate(
                _items(value, field, 'Aggregate', 'AggregateList'))]


def instance(obj, field):
    """``(uuid, InstanceInfo)`` of a decoded Nova Instance."""
    uuid = validation.uuid('%s.uuid' % field, obj.data.get('uuid'))
    flavor = obj.get('flavor')
    flavor_id = None
    if isinstance(flavor, primitives.NovaObject):
        flavor_id = flavor.get('flavorid') or flavor.get('name')
        validation.text('%s.flavor.flavorid' % field, flavor_id,
                        validation.MAX_NAME_LEN, nullable=True)
    system_metadata = obj.get('system_metadata', {})
    if not isinstance(system_metadata, dict):
        validation.refuse('%s.system_metadata' % field, 'must be a dict')
    properties = {key[len(IMAGE_PREFIX):]: value
                  for key, value in system_metadata.items()
                  if key.startswith(IMAGE_PREFIX)
                  and (value is None or isinstance(value, str))}
    return uuid, placement_types.InstanceInfo(flavor_id, properties)


def instances(value, field):
    """``{uuid: InstanceInfo}`` of an InstanceList (or Instance)."""
    return dict(instance(item, '%s[%d]' % (field, index))
                for index, item in enumerate(
                    _items(value, field, 'Instance', 'InstanceList')))
