"""PCI device requests of a flavor: ``pci_passthrough:alias`` resolved.

The flavor extra spec ``pci_passthrough:alias`` lists aliases of
``[pci] alias`` with a device count each, ``"<alias>[:<count>],..."``
(the count defaults to 1). Each item becomes one :class:`PciRequest`:
``count`` devices, each matching one of the alias's specs, with the
alias's NUMA policy unless the flavor (``hw:pci_numa_affinity_policy``)
or the image (``hw_pci_numa_affinity_policy``) sets another. As in Nova,
the flavor's policy wins; an image may only repeat it, not change it::

    aliases = alias.parse_aliases(['{"name": "gpu", "vendor_id": "10de",'
                                   ' "product_id": "1db4"}'])
    requests = request.requests_from_extra_specs(
        {'pci_passthrough:alias': 'gpu:2'}, aliases=aliases)
    # (PciRequest(alias_name='gpu', count=2,
    #             specs=({'vendor_id': '10de', 'product_id': '1db4'},),
    #             numa_policy='legacy'),)
    request.devices_needed(requests)   # 2

:func:`requests_from_spec` does the same for a RequestSpec, with the
configured aliases. Every error is an InvalidRequest naming the extra
spec or property and its value (see :mod:`scheduler.pci.errors`).
"""

import collections
import functools

from scheduler import conf
from scheduler.pci import alias as pci_alias
from scheduler.pci import errors

CONF = conf.CONF

ALIAS_EXTRA_SPEC = 'pci_passthrough:alias'
POLICY_EXTRA_SPEC = 'hw:pci_numa_affinity_policy'
POLICY_IMAGE_PROPERTY = 'hw_pci_numa_affinity_policy'
# The most devices one item may ask for (keeps counts in int64 columns).
MAX_COUNT = (1 << 31) - 1

# ``specs``: a tuple of dicts, alternatives (a device matching any will do).
PciRequest = collections.namedtuple('PciRequest',
                                    'alias_name count specs numa_policy')


def parse_alias_spec(value):
    """``[(alias name, count)]`` of a ``pci_passthrough:alias`` value.

    :raises: PciInvalidRequest naming the value and the bad item.
    """
    if not isinstance(value, str):
        raise errors.PciInvalidRequest(value=value, reason='not a string')
    items = []
    for item in value.split(','):
        name, sep, count = item.partition(':')
        name = name.strip()
        if not name:
            raise errors.PciInvalidRequest(
                value=value, reason='item %r names no alias' % item)
        if not sep:
            items.append((name, 1))
            continue
        count = count.strip()
        if not count.isdigit() or not count.isascii():
            raise errors.PciInvalidRequest(
                value=value, reason='count %r of alias %r is not a whole '
                'number' % (count, name))
        if not 1 <= int(count) <= MAX_COUNT:
            raise errors.PciInvalidRequest(
                value=value, reason='count %s of alias %r is not between '
                '1 and %d' % (count, name, MAX_COUNT))
        items.append((name, int(count)))
    return items


def _checked_policy(policy, where):
    if policy is not None and policy not in pci_alias.NUMA_POLICIES:
        raise errors.InvalidPCINUMAAffinity(
            policy=policy, where=where,
            valid=', '.join(pci_alias.NUMA_POLICIES))
    return policy


def numa_policy_override(extra_specs, image_properties=None):
    """The PCI NUMA policy the flavor or the image sets, or None.

    :raises: InvalidPCINUMAAffinity for a value that is no policy;
        ImagePCINUMAPolicyForbidden when the image sets another policy
        than the flavor.
    """
    flavor_policy = _checked_policy(
        (extra_specs or {}).get(POLICY_EXTRA_SPEC) or None,
        'flavor extra spec %s' % POLICY_EXTRA_SPEC)
    image_policy = _checked_policy(
        (image_properties or {}).get(POLICY_IMAGE_PROPERTY) or None,
        'image property %s' % POLICY_IMAGE_PROPERTY)
    if flavor_policy and image_policy and flavor_policy != image_policy:
        raise errors.ImagePCINUMAPolicyForbidden(image=image_policy,
                                                 flavor=flavor_policy)
    return flavor_policy or image_policy


def requests_from_extra_specs(extra_specs, image_properties=None,
                              aliases=None):
    """The tuple of PciRequest a flavor's extra specs ask for.

    :param extra_specs: the flavor's extra specs (a dict of strings).
    :param image_properties: the image's properties, or None.
    :param aliases: ``{name: Alias}``; default: the configured ones.
    :returns: ``()`` when the flavor asks for no PCI device.
    :raises: PciRequestAliasNotDefined, PciInvalidRequest,
        InvalidPCINUMAAffinity, ImagePCINUMAPolicyForbidden; with the
        configured aliases, also PciInvalidAlias.
    """
    value = (extra_specs or {}).get(ALIAS_EXTRA_SPEC)
    if value is None:
        return ()
    policy = numa_policy_override(extra_specs, image_properties)
    if aliases is None:
        aliases = pci_alias.get_aliases()
    requests = []
    for name, count in parse_alias_spec(value):
        found = aliases.get(name)
        if found is None:
            raise errors.PciRequestAliasNotDefined(alias=name)
        requests.append(PciRequest(name, count, found.specs,
                                   policy or found.numa_policy))
    return tuple(requests)


@functools.lru_cache(maxsize=256)
def _cached_requests(value, flavor_policy, image_policy, alias_values):
    extra_specs = {ALIAS_EXTRA_SPEC: value}
    if flavor_policy is not None:
        extra_specs[POLICY_EXTRA_SPEC] = flavor_policy
    image = {}
    if image_policy is not None:
        image[POLICY_IMAGE_PROPERTY] = image_policy
    return requests_from_extra_specs(extra_specs, image,
                                     pci_alias.parsed_aliases(alias_values))


def _field(obj, name):
    """``obj.name``, None when unset (versioned objects) or absent."""
    if obj is None:
        return None
    if hasattr(obj, 'obj_get'):
        return obj.obj_get(name)
    return getattr(obj, name, None)


def requests_from_spec(spec, config=None):
    """The tuple of PciRequest of a RequestSpec (its flavor's extra specs
    and its image's properties), with ``[pci] alias`` of ``config``
    (default: the global CONF); ``()`` when it asks for no device.

    Results are cached per distinct input; callers must not change them.
    """
    extra_specs = _field(_field(spec, 'flavor'), 'extra_specs') or {}
    value = extra_specs.get(ALIAS_EXTRA_SPEC)
    if value is None:
        return ()
    properties = _field(_field(spec, 'image'), 'properties') or {}
    config = CONF if config is None else config
    return _cached_requests(value, extra_specs.get(POLICY_EXTRA_SPEC),
                            properties.get(POLICY_IMAGE_PROPERTY),
                            tuple(config.pci.alias))


def devices_needed(requests):
    """How many devices ``requests`` ask for in all."""
    return sum(req.count for req in requests)
