"""Checks of RPC input: types, ranges, lengths, depths.

Every RPC method checks its arguments with these before it reads the
host table or writes SQL. Each check returns the value it accepted, or
raises :class:`scheduler.exception.InvalidRequest` naming the field and
saying what was wrong, so the caller can correct its payload::

    from scheduler import validation
    host = validation.name('host', host)
    vcpus = validation.integer('inventory.vcpus', vcpus,
                               high=validation.MAX_VCPUS)

Calls let the exception reach the caller (it is an expected exception of
every RPC method); casts, which have nobody to answer, log it once at
ERROR and drop the message.

The bounds are those an operator would defend for one hypervisor node or
one request, and keep every value inside the 32-bit integer columns of
the schema (usage columns sum several allocations, hence the headroom).
A boolean is never taken for an integer, nor a number for a string.
"""

import math

from oslo_utils import uuidutils

from scheduler import exception

# Sizes of one node or one flavor.
MAX_VCPUS = 1 << 20                 # 1,048,576 vCPUs
MAX_MEMORY_MB = 1 << 30             # 1 PiB of RAM, in MiB
MAX_DISK_GB = 1 << 30               # 1 EiB of disk, in GiB
MAX_SWAP_MB = MAX_MEMORY_MB
# Instances of one boot request, and on one node.
MAX_NUM_INSTANCES = 1000
MAX_INSTANCES_PER_NODE = 1 << 20
# Allocation ratios a node may report (Nova's defaults are 16, 1.5, 1).
MAX_ALLOCATION_RATIO = 10000.0
MAX_INT32 = (1 << 31) - 1
MAX_HYPERVISOR_VERSION = MAX_INT32

# Strings: names as long as their columns, free text bounded.
MAX_NAME_LEN = 255
MAX_FAULT_LEN = 64 * 1024
MAX_VALUE_LEN = 64 * 1024
# Collections: items of one list or dict, nesting of a JSON value.
MAX_ITEMS = 1000
MAX_DEPTH = 32


def refuse(field, problem):
    """Raise InvalidRequest: ``<field> <problem>``."""
    raise exception.InvalidRequest(reason='%s %s' % (field, problem))


def _kind(value):
    return type(value).__name__


def text(field, value, max_len=MAX_VALUE_LEN, nullable=False):
    """A str of at most ``max_len`` characters that a database stores
    as it is (no NUL, no lone surrogate)."""
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        refuse(field, 'must be a string, not %s' % _kind(value))
    if len(value) > max_len:
        refuse(field, 'is %d characters long; at most %d'
               % (len(value), max_len))
    if '\x00' in value:
        refuse(field, 'contains a NUL character')
    try:
        value.encode('utf-8')
    except UnicodeEncodeError:
        refuse(field, 'is not valid Unicode text')
    return value


def name(field, value, nullable=False):
    """A host, node, binary or topic name: a non-blank string of at most
    MAX_NAME_LEN characters, without control characters."""
    if value is None and nullable:
        return None
    text(field, value, MAX_NAME_LEN)
    if not value.strip():
        refuse(field, 'must not be empty')
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        refuse(field, 'contains a control character')
    return value


def uuid(field, value, nullable=False):
    """A UUID string."""
    if value is None and nullable:
        return None
    if not isinstance(value, str) or not uuidutils.is_uuid_like(value):
        refuse(field, 'must be a UUID string, not %s' % _short(value))
    return value


def integer(field, value, low=0, high=None, nullable=False):
    """An int (not a bool) with ``low <= value <= high``."""
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        refuse(field, 'must be an integer, not %s' % _kind(value))
    _in_range(field, value, low, high)
    return value


def number(field, value, low=0.0, high=None, nullable=False):
    """A finite int or float (not a bool) with ``low <= value <= high``."""
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        refuse(field, 'must be a number, not %s' % _kind(value))
    if isinstance(value, float) and not math.isfinite(value):
        refuse(field, 'must be a finite number, not %r' % value)
    _in_range(field, value, low, high)
    return value


def _in_range(field, value, low, high):
    if low is not None and value < low:
        refuse(field, 'must be at least %s, not %s' % (low, _short(value)))
    if high is not None and value > high:
        refuse(field, 'must be at most %s, not %s' % (high, _short(value)))


def choice(field, value, choices):
    """One of ``choices`` (compared by equality, type included)."""
    if not any(type(value) is type(c) and value == c for c in choices):
        refuse(field, 'must be one of %s, not %s'
               % (', '.join(repr(c) for c in choices), _short(value)))
    return value


def sequence(field, value, max_items=MAX_ITEMS, nullable=False):
    """A list (or tuple) of at most ``max_items`` items, as a list."""
    if value is None and nullable:
        return None
    if not isinstance(value, (list, tuple)):
        refuse(field, 'must be a list, not %s' % _kind(value))
    if len(value) > max_items:
        refuse(field, 'has %d items; at most %d' % (len(value), max_items))
    return list(value)


def mapping(field, value, max_items=MAX_ITEMS, nullable=False):
    """A dict of at most ``max_items`` items."""
    if value is None and nullable:
        return None
    if not isinstance(value, dict):
        refuse(field, 'must be a dict, not %s' % _kind(value))
    if len(value) > max_items:
        refuse(field, 'has %d items; at most %d' % (len(value), max_items))
    return value


def strings(field, value, max_items=MAX_ITEMS, max_len=MAX_NAME_LEN,
            nullable=False):
    """A list of strings (each checked by :func:`text`)."""
    if value is None and nullable:
        return None
    items = sequence(field, value, max_items)
    for index, item in enumerate(items):
        text('%s[%d]' % (field, index), item, max_len)
    return items


def string_dict(field, value, max_items=MAX_ITEMS, max_len=MAX_VALUE_LEN,
                nullable_values=False):
    """A dict of strings to strings (or None with ``nullable_values``)."""
    mapping(field, value, max_items)
    for key, item in value.items():
        text('%s key' % field, key, MAX_NAME_LEN)
        text('%s[%r]' % (field, key), item, max_len,
             nullable=nullable_values)
    return value


def instance_of(field, value, cls, nullable=False):
    """An object of class ``cls`` (a versioned object, typically)."""
    if value is None and nullable:
        return None
    if not isinstance(value, cls):
        refuse(field, 'must be a %s object, not %s'
               % (cls.__name__, _kind(value)))
    return value


def objects(field, value, cls, max_items=MAX_ITEMS):
    """A list of ``cls`` objects, as a list."""
    items = sequence(field, value, max_items)
    for index, item in enumerate(items):
        instance_of('%s[%d]' % (field, index), item, cls)
    return items


def fields_set(field, obj, names):
    """Refuse a versioned object on which one of ``names`` is unset (a
    payload may leave out fields that have no default)."""
    for attr in names:
        if not obj.obj_attr_is_set(attr):
            refuse('%s.%s' % (field, attr), 'is missing')
    return obj


def depth(field, value, max_depth=MAX_DEPTH):
    """A JSON-like value nested at most ``max_depth`` lists/dicts deep."""
    level = [value]
    for current in range(max_depth + 1):
        children = []
        for item in level:
            if isinstance(item, dict):
                children.extend(item.values())
            elif isinstance(item, (list, tuple)):
                children.extend(item)
        if not children:
            return value
        level = children
    refuse(field, 'is nested deeper than %d levels' % max_depth)


def _short(value):
    """``value`` for a message: long reprs cut to 80 characters."""
    try:
        shown = repr(value)
    except ValueError:   # an int too long to print
        return '<%s of %d bits>' % (_kind(value), value.bit_length())
    return shown if len(shown) <= 80 else shown[:77] + '...'
