"""NUMATopologyFilter: only hosts whose NUMA cells can take the instance.

A flavor or image that asks for a NUMA topology (``hw:numa_nodes``,
``hw:cpu_policy=dedicated|mixed``, ``hw:mem_page_size``..., see
:mod:`scheduler.numa.request`) passes a host only if each of its guest
cells fits on a distinct host cell: its pinned vCPUs on free CPUs of the
cell's ``pcpuset`` under the thread policy, its shared vCPUs within the
cell's ``cpuset`` times ``cpu_allocation_ratio``, its memory in free pages
of the size asked (or within ``ram_allocation_ratio`` for small pages),
and, when the flavor asks for PCI devices too, the devices on those cells
as their NUMA policy requires. That is :meth:`scheduler.hardware.Request.fit`,
the same fit the claim makes in SQL. A host that reports no NUMA topology
fails such a request; a request without NUMA needs passes every host::

    [filter_scheduler]
    enabled_filters = ComputeFilter,NUMATopologyFilter,...

    openstack flavor set pinned.large --property hw:cpu_policy=dedicated \\
        --property hw:cpu_thread_policy=isolate

The batch path decides the common shapes (guest cells alike; CPU policy
none, shared or dedicated; no realtime mask; page size none, small or a
size) exactly from per-cell columns of the host table, for every host at
once (:mod:`scheduler.filters.numa_columns`); with PCI devices too, those
columns only drop the hosts whose cells cannot take the guest. For the
other shapes, and the hosts left, it first drops the hosts that cannot
possibly fit by comparing a few numbers per host
(:mod:`scheduler.numa.prescreen`, kept as host table columns and
recomputed only for hosts that changed) with the request's minimums,
then fits once for each distinct NUMA topology, usage,
ratios and PCI devices among the hosts left; it remembers those answers
for the next equal request (same flavor NUMA and PCI needs), which fits
only the hosts whose usage changed since.
"""

import json

from oslo_log import log as logging
import numpy as np

from scheduler import filters
from scheduler.filters import numa_columns
from scheduler import hardware
from scheduler import host_cache
from scheduler.numa import capacity
from scheduler.numa import cell_figures
from scheduler.numa import errors as numa_errors
from scheduler.numa import prescreen
from scheduler.pci import errors as pci_errors
from scheduler.pci import request as pci_request

LOG = logging.getLogger(__name__)

_UNREADABLE = (numa_errors.InvalidHostNUMATopology,
               numa_errors.NUMAUsageConflict, pci_errors.PciPoolInvalid,
               pci_errors.PciUsageInvalid)

# repr of a request -> (the first grouping key, decided, answers): what
# that request found per 'numa_fit' grouping key (see _known_answers).
# Flavors repeat: a request equal to an earlier one fits only the keys
# that appeared since (the hosts that claims changed).
_answers = {}
_ANSWERS_LIMIT = 256


def _read_summary(state):
    try:
        return prescreen.host_summary(
            state.numa_topology, state.numa_usage, capacity.Limits(
                state.cpu_allocation_ratio, state.ram_allocation_ratio))
    except _UNREADABLE as error:
        LOG.warning('%(host)s: cannot read its NUMA topology or usage: '
                    '%(error)s', {'host': state, 'error': error})
        return prescreen.host_summary(None, None)


# The prescreen summary of a state, computed once per HostState.
_summary = host_cache.StateMemo(_read_summary)


def _fit_key(state):
    """Equal for hosts on which every request fits alike."""
    try:
        return json.dumps(
            [state.numa_topology, state.numa_usage,
             state.cpu_allocation_ratio, state.ram_allocation_ratio,
             getattr(state, 'pci_device_pools', None),
             getattr(state, 'pci_usage', None)], sort_keys=True)
    except (TypeError, ValueError):
        return ('host', state)


def _fits(state, wanted):
    try:
        return wanted.fit(hardware.Host.of_state(state)) is not None
    except _UNREADABLE as error:
        LOG.warning('%(host)s fails NUMA requests: %(error)s',
                    {'host': state, 'error': error})
        return False


def _numa_request(spec):
    wanted = hardware.Request.from_spec(spec)
    return None if wanted is None or wanted.numa is None else wanted


class NUMATopologyFilter(filters.BaseHostFilter):
    """Passes hosts whose NUMA cells can take the instance."""

    pure = True

    # As Nova's: a rebuild with a new image may change the topology.
    RUN_ON_REBUILD = True

    def host_passes(self, host_state, spec):
        wanted = _numa_request(spec)
        if wanted is None:
            return True
        if _fits(host_state, wanted):
            return True
        LOG.debug('%(host)s, %(cells)s cell(s), does not fit the requested '
                  'NUMA topology', {'host': host_state,
                                    'cells': _summary(host_state)['cells']})
        return False

    def filter_all(self, host_table, mask, spec):
        if not mask.any():
            return mask
        wanted = _numa_request(spec)
        if wanted is None:
            return mask
        if wanted.pci:
            # A host without as many free devices as asked never fits.
            mask = mask & (host_table.pci_free >= pci_request.devices_needed(
                wanted.pci))
            if not mask.any():
                return mask
        shape = cell_figures.shape_of(wanted.numa)
        if shape is not None:
            fits, decided = numa_columns.fit(host_table, shape)
            if wanted.pci:
                # The devices must follow the cells: only a host whose
                # cells cannot take the guest is decided.
                decided = decided & ~fits
            mask = mask & (fits | ~decided)
            undecided = mask & ~decided
            if not undecided.any():
                return mask
            return (mask & decided) | _fit_per_group(host_table, undecided,
                                                     wanted)
        mask = mask & _prescreen(host_table, wanted)
        if not mask.any():
            return mask
        return _fit_per_group(host_table, mask, wanted)


def _fit_per_group(host_table, mask, wanted):
    """``mask`` narrowed to the hosts the per-host fit passes, fitting
    once per distinct NUMA and PCI state (and remembering the answers
    for the next equal request)."""
    codes, keys = host_table.grouped('numa_fit', _fit_key)
    decided, answers = _known_answers(wanted, keys)
    states = host_table.states
    candidates = np.flatnonzero(mask)
    used, first = np.unique(codes[candidates], return_index=True)
    for code, row in zip(used.tolist(), candidates[first].tolist()):
        if not decided[code]:
            decided[code] = True
            answers[code] = _fits(states[row], wanted)
    return mask & answers[codes]


def _request_key(wanted):
    return repr((wanted.numa, wanted.pci))


def _known_answers(wanted, keys):
    """``(decided, answers)``, one flag each per grouping key: what
    earlier requests equal to ``wanted`` found on the hosts of that key,
    to complete and keep. The keys of tables derived from one another
    only grow and keep their codes; a grouping built afresh has new key
    objects, and its first key tells it apart."""
    request = _request_key(wanted)
    found = _answers.get(request)
    if found is None or not keys or found[0] is not keys[0]:
        if len(_answers) >= _ANSWERS_LIMIT:
            _answers.clear()
        found = (keys[0] if keys else None,
                 np.zeros(len(keys), dtype=np.bool_),
                 np.zeros(len(keys), dtype=np.bool_))
    first, decided, answers = found
    if len(decided) < len(keys):
        grow = len(keys) - len(decided)
        decided = np.concatenate([decided, np.zeros(grow, np.bool_)])
        answers = np.concatenate([answers, np.zeros(grow, np.bool_)])
    _answers[request] = (first, decided, answers)
    return decided, answers


def _prescreen(host_table, wanted):
    """Mask of the hosts that meet the request's minimums (the vectorised
    :func:`scheduler.numa.prescreen.meets_minimums`)."""
    needed = prescreen.request_minimums(wanted.numa)
    passed = np.ones(len(host_table), dtype=np.bool_)
    for key in prescreen.SCALAR_KEYS:
        column = host_table.state_column(
            'numa_' + key, lambda state, key=key: _summary(state)[key],
            np.int64)
        passed &= column >= needed[key]
    for size_kb, count in needed['free_pages'].items():
        column = host_table.state_column(
            'numa_free_pages_%d' % size_kb,
            lambda state, size=size_kb: _summary(state)['free_pages'].get(
                size, 0), np.int64)
        passed &= column >= count
    return passed
