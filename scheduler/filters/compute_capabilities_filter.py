"""ComputeCapabilitiesFilter: flavor extra specs against what a host has.

Each extra spec of the flavor names something of the host and a
requirement on it (see :mod:`scheduler.filters.extra_specs_ops` for the
operators). Which extra specs count:

* ``capabilities:<name>[:<key>...]``: the host attribute ``<name>`` (one
  of ``host_cache.PUBLIC_ATTRIBUTES``: ``hypervisor_type``,
  ``free_ram_mb``, ``vcpus_total``...) or, when the host has no such
  attribute or it is unset, the stat ``<name>``; each further ``:<key>``
  looks inside it (a dict, or a string holding JSON);
* a key without a scope (``hypervisor_type``), for the hosts that have
  that attribute or stat, as if it had the ``capabilities:`` scope; the
  hosts that have neither ignore it;
* ``hw:maxphysaddr_bits`` and ``hw:maxphysaddr_mode``, read as
  requirements on ``cpu_info:maxphysaddr`` (see
  :mod:`scheduler.filters.maxphysaddr`);
* keys of any other scope (``hw:cpu_policy``,
  ``aggregate_instance_extra_specs:...``) are left to other filters.

``capabilities:cpu_info:<key>...`` walks the ``cpu_info`` the compute
reports (``features``, ``vendor``, ``topology:cores``...); a list such as
``features`` is compared as its text, so ``<in> avx2`` or ``<all-in> avx2
sse4.2`` find its items, as in Nova.

A host passes if it meets every extra spec that counts; a host lacking
what a ``capabilities:`` key names fails. Example::

    openstack flavor set gpu.large \\
        --property capabilities:hypervisor_type='s== QEMU' \\
        --property capabilities:stats:gpu_model='<or> a100 <or> h100' \\
        --property capabilities:vcpus_total='>= 32'
"""

import functools
import json

from oslo_log import log as logging
import numpy as np

from scheduler import filters
from scheduler.filters import extra_specs_ops
from scheduler.filters import maxphysaddr
from scheduler import host_cache

LOG = logging.getLogger(__name__)

SCOPE = 'capabilities'
# The key of a host to which an unscoped extra spec does not apply.
NOT_APPLICABLE = ('not applicable',)


def requirements(flavor):
    """``[(path, unscoped, requirement)]`` of the extra specs that count;
    ``path`` is the tuple of names the key walks. The ``hw:maxphysaddr_*``
    extra specs count as ``cpu_info:maxphysaddr`` capabilities (see
    :mod:`scheduler.filters.maxphysaddr`)."""
    extra_specs = flavor.obj_get('extra_specs') or {}
    scoped = {}
    found = []
    for key, requirement in extra_specs.items():
        scope = key.split(':')
        if len(scope) == 1:
            found.append(((key,), True, requirement))
        elif scope[0] == SCOPE:
            scoped[tuple(scope[1:])] = requirement
    # As in Nova, the translated bits replace an explicit capability.
    scoped.update(maxphysaddr.flavor_requirements(extra_specs))
    found.extend((path, False, requirement)
                 for path, requirement in scoped.items())
    return found


def _stats(host_state):
    stats = host_state.stats
    return stats if isinstance(stats, dict) else {}


def _step(host_state, value, name):
    """One name further down from ``value``; None when there is nothing."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if value is host_state:
        found = None
        if name in host_cache.PUBLIC_ATTRIBUTES:
            found = getattr(host_state, name, None)
        return found if found is not None else _stats(host_state).get(name)
    if isinstance(value, dict):
        return value.get(name)
    return None


def capability(host_state, path, unscoped):
    """The host's value for ``path`` as a string, None when it lacks it,
    or NOT_APPLICABLE (an unscoped key it has no attribute or stat for)."""
    if unscoped and path[0] not in host_cache.PUBLIC_ATTRIBUTES and (
            path[0] not in _stats(host_state)):
        return NOT_APPLICABLE
    value = host_state
    for name in path:
        value = _step(host_state, value, name)
        if value is None:
            return None
    return str(value)


def _meets(value, requirement):
    if value is NOT_APPLICABLE:
        return True
    return value is not None and extra_specs_ops.match(value, requirement)


class ComputeCapabilitiesFilter(filters.BaseHostFilter):
    """Passes hosts that meet the flavor's capability extra specs."""

    pure = True

    # Flavors and host capabilities do not change within a request.
    run_filter_once_per_request = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        for path, unscoped, requirement in requirements(spec.flavor):
            value = capability(host_state, path, unscoped)
            if not _meets(value, requirement):
                LOG.debug("%(host)s fails extra spec %(key)s: %(value)r "
                          "does not meet %(requirement)r",
                          {'host': host_state, 'key': ':'.join(path),
                           'value': value, 'requirement': requirement})
                return False
        return True

    def filter_all(self, host_table, mask, spec):
        for path, unscoped, requirement in requirements(spec.flavor):
            mask = mask & self._column(host_table, path, unscoped,
                                       requirement)
        return mask

    @staticmethod
    def _column(table, path, unscoped, requirement):
        """Whether each row meets one extra spec."""
        column = table.attribute_column(path[0]) if len(path) == 1 else None
        if column is not None and extra_specs_ops.is_numeric(requirement):
            # A numeric attribute is never unset: compare the column.
            return extra_specs_ops.match_numbers(column, requirement)
        codes, keys = table.grouped(
            ('capability', path, unscoped),
            functools.partial(capability, path=path, unscoped=unscoped))
        answers = np.fromiter((_meets(key, requirement) for key in keys),
                              dtype=np.bool_, count=len(keys))
        return answers[codes]
