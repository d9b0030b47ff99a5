"""``[pci] alias``: the names flavors use to ask for PCI devices.

Each value of the option is one JSON object; :func:`parse_aliases` turns
the values into ``{name: Alias}``. An :class:`Alias` holds the NUMA policy
and device type all its entries share, and one device spec per entry
(several entries of one name are alternatives: a device matching any of
them will do)::

    aliases = alias.parse_aliases([
        '{"name": "qat", "vendor_id": "8086", "product_id": "0443",'
        ' "device_type": "type-PCI", "numa_policy": "required"}',
        '{"name": "qat", "vendor_id": "8086", "product_id": "0442",'
        ' "device_type": "type-PCI", "numa_policy": "required"}'])
    aliases['qat'].specs
    # ({'vendor_id': '8086', 'product_id': '0443', 'dev_type': 'type-PCI'},
    #  {'vendor_id': '8086', 'product_id': '0442', 'dev_type': 'type-PCI'})

The rules are Nova's (with ``[filter_scheduler] pci_in_placement`` off,
as Gantt has no Placement): known keys only, both IDs four hexadecimal
digits and both required, ``device_type`` one of ``type-PCI``,
``type-PF`` or ``type-VF`` (``vdpa`` devices cannot be requested by
alias), ``numa_policy`` defaulting to ``legacy``, and entries of one name
agreeing on both. ``capability_type``, ``resource_class`` and ``traits``
only matter to Placement and are left out of the specs. Any error is a
:class:`scheduler.pci.errors.PciInvalidAlias` naming the alias (or the
value, when it has no name) and the problem.

:func:`get_aliases` parses the configured values once per distinct
configuration.
"""

import collections
import functools
import json
import re

from oslo_utils import strutils

from scheduler import conf
from scheduler.pci import errors

CONF = conf.CONF

# Device types (Nova's PciDeviceType values).
TYPE_PCI = 'type-PCI'
TYPE_PF = 'type-PF'
TYPE_VF = 'type-VF'
TYPE_VDPA = 'vdpa'
ALIAS_DEVICE_TYPES = (TYPE_PCI, TYPE_PF, TYPE_VF)

# PCI NUMA affinity policies, strictest first.
REQUIRED = 'required'
LEGACY = 'legacy'
PREFERRED = 'preferred'
SOCKET = 'socket'
NUMA_POLICIES = (REQUIRED, LEGACY, PREFERRED, SOCKET)

MAX_NAME_LEN = 256
_HEX_ID = re.compile(r'[0-9a-fA-F]{4}\Z')
_KEYS = frozenset(('name', 'vendor_id', 'product_id', 'device_type',
                   'numa_policy', 'capability_type', 'resource_class',
                   'traits', 'live_migratable'))
# Keys Placement would use; accepted, checked, left out of the specs.
_PLACEMENT_ONLY = ('capability_type', 'resource_class', 'traits')

# ``device_type`` is None when the entries do not restrict it; ``specs``
# is a tuple of dicts whose keys are pool attributes (``vendor_id``,
# ``product_id``, ``dev_type``, ``live_migratable``); ``placement`` has,
# per entry, its ``(resource_class, traits)`` values (None where absent),
# what ``[filter_scheduler] pci_in_placement`` asks Placement for.
Alias = collections.namedtuple('Alias',
                               'name numa_policy device_type specs placement',
                               defaults=((),))


def _refuse(alias, reason):
    raise errors.PciInvalidAlias(alias=alias, reason=reason)


def _load(text):
    """The JSON object of one option value."""
    try:
        entry = json.loads(text)
    except (TypeError, ValueError) as error:
        _refuse(repr(text), 'not valid JSON (%s)' % error)
    if not isinstance(entry, dict):
        _refuse(repr(text), 'must be a JSON object, not %s'
                % type(entry).__name__)
    return entry


def _name_of(entry, text):
    name = entry.get('name')
    if not isinstance(name, str) or not name.strip():
        _refuse(repr(text), "'name' is missing or not a non-empty string")
    name = name.strip()
    if len(name) > MAX_NAME_LEN:
        _refuse(repr(name[:40] + '...'), "'name' is longer than %d "
                "characters" % MAX_NAME_LEN)
    return name


def _string(name, entry, key, choices=None):
    """``entry[key]`` (None if absent), a string among ``choices``."""
    value = entry.get(key)
    if value is None and key not in entry:
        return None
    if not isinstance(value, str):
        _refuse(repr(name), '%r must be a string, not %r' % (key, value))
    if choices is not None and value not in choices:
        _refuse(repr(name), '%r is %r; valid values: %s'
                % (key, value, ', '.join(choices)))
    return value


def _spec_of(name, entry):
    """The device spec of one entry (its matching keys)."""
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        _refuse(repr(name), 'unknown key(s) %s; valid keys: %s'
                % (', '.join(unknown), ', '.join(sorted(_KEYS))))
    spec = {}
    for key in ('vendor_id', 'product_id'):
        value = _string(name, entry, key)
        if value is None:
            _refuse(repr(name), "both 'vendor_id' and 'product_id' are "
                    "required; %r is missing" % key)
        if not _HEX_ID.match(value):
            _refuse(repr(name), '%r is %r; expected four hexadecimal '
                    'digits' % (key, value))
        spec[key] = value
    if entry.get('device_type') == TYPE_VDPA:
        _refuse(repr(name), "'device_type' %r cannot be requested by "
                "alias" % TYPE_VDPA)
    device_type = _string(name, entry, 'device_type', ALIAS_DEVICE_TYPES)
    if device_type is not None:
        spec['dev_type'] = device_type
    migratable = _string(name, entry, 'live_migratable')
    if migratable is not None:
        try:
            flag = strutils.bool_from_string(migratable, strict=True)
        except ValueError:
            _refuse(repr(name), "'live_migratable' is %r; expected yes "
                    "or no (or another boolean word)" % migratable)
        spec['live_migratable'] = 'true' if flag else 'false'
    _string(name, entry, 'capability_type', ('pci',))
    for key in _PLACEMENT_ONLY[1:]:
        _string(name, entry, key)
    return spec


def _placement_of(name, entry):
    return (_string(name, entry, 'resource_class'),
            _string(name, entry, 'traits'))


def parse_aliases(values):
    """``{name: Alias}`` of the ``[pci] alias`` values ``values``.

    :raises: PciInvalidAlias naming the alias and the problem.
    """
    found = {}
    for text in values:
        entry = _load(text)
        name = _name_of(entry, text)
        spec = _spec_of(name, entry)
        policy = _string(name, entry, 'numa_policy', NUMA_POLICIES)
        policy = policy or LEGACY
        device_type = spec.get('dev_type')
        known = found.get(name)
        if known is None:
            found[name] = Alias(name, policy, device_type, (spec,),
                                (_placement_of(name, entry),))
            continue
        if known.numa_policy != policy:
            _refuse(repr(name), "entries of one name must have the same "
                    "'numa_policy', not %r and %r"
                    % (known.numa_policy, policy))
        if known.device_type != device_type:
            _refuse(repr(name), "entries of one name must have the same "
                    "'device_type', not %r and %r"
                    % (known.device_type, device_type))
        found[name] = known._replace(
            specs=known.specs + (spec,),
            placement=known.placement + (_placement_of(name, entry),))
    return found


@functools.lru_cache(maxsize=8)
def parsed_aliases(values):
    """:func:`parse_aliases` of the tuple ``values``, parsed once."""
    return parse_aliases(values)


def get_aliases(config=None):
    """``{name: Alias}`` of ``[pci] alias`` in ``config`` (default: the
    global CONF), parsed once per distinct list of values.

    Callers must not change what it returns.
    """
    config = CONF if config is None else config
    return parsed_aliases(tuple(config.pci.alias))
