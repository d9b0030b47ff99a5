"""Which resource class and trait names a request may use.

Placement knows two kinds of name, for resource classes and traits
alike:

* the standard ones, which the ``os-resource-classes`` and ``os-traits``
  libraries list (``VCPU``, ``PCPU``, ``HW_CPU_X86_AVX2``...); Gantt asks
  the libraries, so that a new release of either brings its names along;
* custom ones, which an operator creates: ``CUSTOM_`` then one or more of
  ``A-Z``, ``0-9`` and ``_``, at most 255 characters in all.

Anything else Nova's API refuses in a flavor's extra specs, and
Placement refuses in a query. The checks return the name, so that they
read as a filter::

    names.check_resource_class('CUSTOM_BAREMETAL_GOLD')   # returned
    names.check_trait('hw_cpu_x86_avx2')   # InvalidResourceRequest

A PCI device's class and traits, as Nova's compute names them for
Placement (``[pci] report_in_placement``), come from here too::

    names.pci_class('8086', '154d')            # 'CUSTOM_PCI_8086_154D'
    names.pci_traits('fast, HW_NIC_SRIOV')     # {'CUSTOM_FAST', ...}
"""

import functools
import re

import os_resource_classes
import os_traits

from scheduler import exception

CUSTOM_PREFIX = 'CUSTOM_'
MAX_NAME_LENGTH = 255
_CUSTOM_NAME = re.compile(r'CUSTOM_[A-Z0-9_]+')
_CUSTOM_RULE = ('CUSTOM_ followed by one or more of A-Z, 0-9 and _, at '
                'most %d characters' % MAX_NAME_LENGTH)


def is_custom(name):
    """True when ``name`` is a well-formed custom class or trait name."""
    return (isinstance(name, str) and len(name) <= MAX_NAME_LENGTH
            and _CUSTOM_NAME.fullmatch(name) is not None)


@functools.lru_cache(maxsize=1)
def standard_resource_classes():
    """The standard resource classes of the installed os-resource-classes
    (a frozenset)."""
    return frozenset(os_resource_classes.STANDARDS)


@functools.lru_cache(maxsize=1)
def standard_traits():
    """The standard traits of the installed os-traits (a frozenset; the
    library walks its modules to list them, so the answer is kept)."""
    return frozenset(os_traits.get_traits())


def _refuse(kind, name, where, standards_from):
    if isinstance(name, str) and name.startswith(CUSTOM_PREFIX):
        problem = 'a custom %s name must be %s' % (kind, _CUSTOM_RULE)
    else:
        problem = ('it is neither a standard %s (of %s) nor a custom one '
                   '(%s)' % (kind, standards_from, _CUSTOM_RULE))
    at = ' in %s' % where if where else ''
    raise exception.InvalidResourceRequest(
        reason='unknown %s %r%s: %s' % (kind, name, at, problem))


def check_resource_class(name, where=None):
    """Return ``name`` if it is a standard or custom resource class.

    :param where: what the name came from (``"flavor extra spec
        'resources1:FOO'"``), for the message.
    :raises: InvalidResourceRequest naming the class.
    """
    if name in standard_resource_classes() or is_custom(name):
        return name
    _refuse('resource class', name, where, 'os-resource-classes')


def check_trait(name, where=None):
    """Return ``name`` if it is a standard or custom trait.

    :param where: what the name came from, for the message.
    :raises: InvalidResourceRequest naming the trait.
    """
    if name in standard_traits() or is_custom(name):
        return name
    _refuse('trait', name, where, 'os-traits')


def _normalised_class(name):
    name = name.upper()
    if (name in os_resource_classes.STANDARDS
            or os_resource_classes.is_custom(name)):
        return name
    return os_resource_classes.normalize_name(name)


def pci_class(vendor_id, product_id, requested=None):
    """Nova's class of a PCI device: the requested name (normalised) or
    ``CUSTOM_PCI_<VENDOR>_<PRODUCT>``."""
    if requested:
        return _normalised_class(requested)
    return ('CUSTOM_PCI_%s_%s' % (vendor_id, product_id)).upper()


def pci_traits(text):
    """The traits of a comma separated ``traits`` value, normalised as
    Nova does: standard names kept, others made ``CUSTOM_``."""
    names = [name.strip() for name in (text or '').split(',')
             if name.strip()]
    standard, rest = os_traits.check_traits(names)
    custom = set()
    for name in rest:
        name = name.upper()
        custom.add(name if os_traits.is_custom(name)
                   else os_traits.normalize_name(name))
    return set(standard) | custom
