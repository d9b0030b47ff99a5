"""``[pci] device_spec``: which PCI devices of a compute node guests may use.

The compute side of PCI passthrough. Each value of the option is a JSON
object, or a JSON list of objects, that selects devices by vendor and
product ID (four hexadecimal digits or ``*``), by PCI address (a glob such
as ``"*:0a:00.*"``, or an object of regular expressions keyed ``domain``,
``bus``, ``slot`` and ``function``) or by interface name (``devname``);
every other key is a tag the selected devices carry in their pool.
:func:`pools_from_devices` groups the devices a node has into the pools it
reports (``compute_nodes.pci_device_pools``, see
:mod:`scheduler.pci.pools`)::

    specs = device_spec.parse_device_specs(
        ['{"vendor_id": "8086", "physical_network": "physnet1"}'])
    device_spec.pools_from_devices([
        {'address': '0000:81:10.1', 'vendor_id': '8086',
         'product_id': '154c', 'dev_type': 'type-VF', 'numa_node': 0,
         'parent_addr': '0000:81:00.0'}], specs)
    # [{'vendor_id': '8086', 'product_id': '154c', 'numa_node': 0,
    #   'count': 1, 'tags': {'dev_type': 'type-VF',
    #                        'physical_network': 'physnet1',
    #                        'remote_managed': 'false'}}]

The rules are Nova's where a fake hypervisor can follow them: fields left
out match any device; ``address`` and ``devname`` exclude each other; the
``managed`` and ``live_migratable`` tags read as booleans and are stored
as ``"true"``/``"false"``; a device matches the first spec that selects
it; VFs, PFs and vDPA devices are tagged ``remote_managed: "false"``
unless their spec says otherwise. What needs the host's sysfs is
simplified: ``devname`` matches the device's own ``devname`` field, and a
spec naming one exact address also selects the devices whose
``parent_addr`` is that address (the VFs of that PF). ``resource_class``
and ``traits`` only matter to Placement and are not made tags. Errors are
:class:`scheduler.pci.errors.PciConfigInvalidSpec` naming the value.
"""

import json
import re

from oslo_utils import strutils

from scheduler.pci import alias as pci_alias
from scheduler.pci import errors

ANY = '*'
# Address fields: (name, largest value, width in hexadecimal digits).
ADDRESS_FIELDS = (('domain', 0xFFFF, 4), ('bus', 0xFF, 2),
                  ('slot', 0x1F, 2), ('function', 0x7, 1))
_BOOLEAN_TAGS = ('managed', 'live_migratable')
_PLACEMENT_ONLY = ('resource_class', 'traits')
_REMOTE_MANAGED_TYPES = (pci_alias.TYPE_VF, pci_alias.TYPE_PF,
                         pci_alias.TYPE_VDPA)


def _refuse(spec, reason):
    raise errors.PciConfigInvalidSpec(spec=spec, reason=reason)


def _hex_field(spec, name, value, largest, width):
    """``value`` (hex text or ``*``) as normalised hex text, or None for
    any."""
    if not isinstance(value, str):
        _refuse(spec, '%r must be a string, not %r' % (name, value))
    value = value.strip()
    if value in ('', ANY):
        return None
    try:
        number = int(value, 16)
    except ValueError:
        _refuse(spec, '%r is %r, not a hexadecimal number' % (name, value))
    if not 0 <= number <= largest:
        _refuse(spec, '%r is %r, above the largest %X'
                % (name, value, largest))
    return '%0*x' % (width, number)


def _glob_address(spec, text):
    """``{field: hex text or None}`` of a glob address."""
    front, _dot, function = text.partition('.')
    parts = front.split(':') if front else []
    if len(parts) > 3:
        _refuse(spec, "'address' %r has more than domain:bus:slot" % text)
    parts = [ANY] * (3 - len(parts)) + parts
    parts.append(function)
    return {name: _hex_field(spec, 'address %s' % name, part, largest, width)
            for (name, largest, width), part in zip(ADDRESS_FIELDS, parts)}


def _regex_address(spec, fields):
    """``{field: compiled regular expression}`` of an address object."""
    names = [name for name, _largest, _width in ADDRESS_FIELDS]
    unknown = sorted(set(fields) - set(names))
    if unknown:
        _refuse(spec, "'address' has unknown key(s) %s; valid keys: %s"
                % (', '.join(unknown), ', '.join(names)))
    found = {}
    for name in names:
        pattern = fields.get(name, '.*')
        if not isinstance(pattern, str):
            _refuse(spec, "'address' %s must be a string" % name)
        try:
            found[name] = re.compile(pattern)
        except re.error as error:
            _refuse(spec, "'address' %s %r is not a regular expression "
                    "(%s)" % (name, pattern, error))
    return found


def device_address(address):
    """``{field: hex text}`` of a device's ``domain:bus:slot.function``.

    :raises: ValueError if ``address`` is not of that form.
    """
    match = re.fullmatch(r'([0-9a-fA-F]{4}):([0-9a-fA-F]{2}):'
                         r'([0-9a-fA-F]{2})\.([0-7])', address or '')
    if match is None:
        raise ValueError('%r is not a PCI address' % (address,))
    return {name: '%0*x' % (width, int(part, 16))
            for (name, _largest, width), part in zip(ADDRESS_FIELDS,
                                                     match.groups())}


class DeviceSpec:
    """One selector of ``[pci] device_spec``.

    ``vendor_id``/``product_id``: normalised hex text, None for any;
    ``address``: ``{field: hex text or None}`` (glob) or ``{field:
    pattern}`` (regular expressions); ``devname``: an interface name or
    None; ``tags``: the tags of the devices it selects.
    """

    def __init__(self, value, text=None):
        text = text if text is not None else json.dumps(value)
        value = dict(value)
        self.vendor_id = _hex_field(text, 'vendor_id',
                                    value.pop('vendor_id', ANY), 0xFFFF, 4)
        self.product_id = _hex_field(text, 'product_id',
                                     value.pop('product_id', ANY), 0xFFFF, 4)
        self.devname = value.pop('devname', None)
        address = value.pop('address', None)
        if address is not None and self.devname is not None:
            _refuse(text, "'address' and 'devname' exclude each other")
        if isinstance(address, dict):
            self.address = _regex_address(text, address)
        elif isinstance(address, str) or address is None:
            self.address = _glob_address(text, address or '')
        else:
            _refuse(text, "'address' must be a string or an object")
        self.tags = _tags(text, value)

    @property
    def exact_address(self):
        """True if the spec names one address (a PF's, say)."""
        return all(isinstance(part, str) for part in self.address.values())

    def _address_matches(self, fields):
        for name, wanted in self.address.items():
            if wanted is None:
                continue
            if isinstance(wanted, str):
                if wanted != fields[name]:
                    return False
            elif not wanted.match(fields[name]):
                return False
        return True

    def matches(self, device):
        """True if ``device`` (a dict with ``address``, ``vendor_id``,
        ``product_id``, optional ``parent_addr`` and ``devname``) is
        selected."""
        for name in ('vendor_id', 'product_id'):
            wanted = getattr(self, name)
            if wanted is not None and wanted != str(
                    device.get(name, '')).lower():
                return False
        if self.devname is not None:
            return device.get('devname') == self.devname
        if self._address_matches(device_address(device.get('address'))):
            return True
        parent = device.get('parent_addr')
        return bool(self.exact_address and parent and self._address_matches(
            device_address(parent)))


def _tags(text, tags):
    for key in _PLACEMENT_ONLY:
        tags.pop(key, None)
    for key in _BOOLEAN_TAGS:
        if tags.get(key) is None:
            continue
        try:
            flag = strutils.bool_from_string(tags[key], strict=True)
        except ValueError:
            _refuse(text, 'tag %r is %r; expected yes or no (or another '
                    'boolean word)' % (key, tags[key]))
        tags[key] = 'true' if flag else 'false'
    return tags


def parse_device_specs(values):
    """The DeviceSpecs of the ``[pci] device_spec`` values, in order.

    :raises: PciConfigInvalidSpec naming the value and the problem.
    """
    specs = []
    for text in values:
        try:
            found = json.loads(text)
        except (TypeError, ValueError) as error:
            _refuse(text, 'not valid JSON (%s)' % error)
        found = [found] if isinstance(found, dict) else found
        if not isinstance(found, list):
            _refuse(text, 'must be a JSON object or a list of objects')
        for value in found:
            if not isinstance(value, dict):
                _refuse(text, 'must be a JSON object or a list of objects')
            specs.append(DeviceSpec(value, text))
    return specs


def pools_from_devices(devices, specs):
    """The pools (``compute_nodes.pci_device_pools`` shape) of the devices
    some spec selects; each device counts in the pool of the first spec
    that selects it. Devices are dicts as :meth:`DeviceSpec.matches`
    reads, plus ``dev_type`` and ``numa_node``.
    """
    pools = {}
    for device in devices:
        spec = next((spec for spec in specs if spec.matches(device)), None)
        if spec is None:
            continue
        tags = dict(spec.tags, dev_type=device['dev_type'])
        if device['dev_type'] in _REMOTE_MANAGED_TYPES:
            tags.setdefault('remote_managed', 'false')
        pool = {'vendor_id': str(device['vendor_id']).lower(),
                'product_id': str(device['product_id']).lower(),
                'numa_node': device.get('numa_node'), 'tags': tags}
        key = json.dumps(pool, sort_keys=True)
        pools.setdefault(key, dict(pool, count=0))['count'] += 1
    return [pools[key] for key in sorted(pools)]
