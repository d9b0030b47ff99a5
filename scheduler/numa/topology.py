"""Host NUMA cells and their usage, read from and written to JSON.

A compute reports its NUMA topology (``compute_nodes.numa_topology``) and
the claims keep what is used on each cell (``compute_nodes.numa_usage``).
This module turns both JSON shapes into frozen values the fitting code can
trust, and back::

    cells = topology.parse_host_topology(host_state.numa_topology)
    used = topology.parse_usage(cells, host_state.numa_usage)
    used[0].free_pcpus(cells[0])          # CPUs of cell 0 still pinnable
    topology.usage_to_dict(used)          # canonical JSON shape

``parse_usage`` returns one :class:`CellUsage` per host cell (keyed by cell
id), all zero where the stored usage says nothing, so that the canonical
form of "nothing used" is the same whether the column was NULL or listed
cells with zero usage.
"""

import dataclasses
import json
from typing import Any

from scheduler.numa import errors


@dataclasses.dataclass(frozen=True)
class MemPages:
    """Pages of one size on one host cell (``reserved`` are not usable)."""

    size_kb: int
    total: int
    reserved: int = 0

    @property
    def usable(self) -> int:
        return self.total - self.reserved


@dataclasses.dataclass(frozen=True)
class HostCell:
    """One host NUMA cell as reported by the compute.

    ``cpuset`` holds the host CPUs for shared vCPUs, ``pcpuset`` those for
    pinned vCPUs; ``siblings`` the hyperthread sibling sets (empty when the
    host has no SMT); ``mempages`` sorted by size, smallest first.
    """

    id: int
    cpuset: frozenset[int]
    pcpuset: frozenset[int]
    memory_mb: int
    siblings: tuple[frozenset[int], ...] = ()
    mempages: tuple[MemPages, ...] = ()
    socket: int | None = None

    def pages(self, size_kb: int) -> MemPages | None:
        for pages in self.mempages:
            if pages.size_kb == size_kb:
                return pages
        return None

    @property
    def smallest_page_kb(self) -> int | None:
        return self.mempages[0].size_kb if self.mempages else None

    @property
    def threads_per_core(self) -> int:
        return max((len(sib) for sib in self.siblings), default=1) or 1

    def cores(self) -> list[frozenset[int]]:
        """The pinnable CPUs grouped by physical core, in reported order.

        A ``pcpuset`` CPU that no sibling set mentions is a core of its own.
        """
        cores = []
        seen: set[int] = set()
        for sib in self.siblings:
            core = sib & self.pcpuset
            if core:
                cores.append(core)
                seen |= core
        cores.extend(frozenset([cpu]) for cpu in sorted(self.pcpuset - seen))
        return cores


@dataclasses.dataclass(frozen=True)
class CellUsage:
    """What the claims have placed on one host cell."""

    id: int
    cpu_usage: int = 0
    memory_usage_mb: int = 0
    pinned_cpus: frozenset[int] = frozenset()
    mempages_used: tuple[tuple[int, int], ...] = ()

    def pages_used(self, size_kb: int) -> int:
        return dict(self.mempages_used).get(size_kb, 0)

    def free_pcpus(self, cell: HostCell) -> frozenset[int]:
        return cell.pcpuset - self.pinned_cpus

    def free_pages(self, cell: HostCell, size_kb: int) -> int:
        pages = cell.pages(size_kb)
        if pages is None:
            return 0
        return pages.usable - self.pages_used(size_kb)


def _load(value: Any, what: str) -> Any:
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise errors.InvalidHostNUMATopology(
                reason='%s is not JSON: %s' % (what, exc)) from None
    return value


def _int(mapping: dict, key: str, what: str, default: Any = ...) -> int:
    value = mapping.get(key, default)
    if value is ... or isinstance(value, bool) or not isinstance(value, int) \
            or value < 0:
        raise errors.InvalidHostNUMATopology(
            reason='%s: %r must be an integer >= 0, got %r'
                   % (what, key, value))
    return value


def _cpus(mapping: dict, key: str, what: str) -> frozenset[int]:
    value = mapping.get(key, [])
    if not isinstance(value, list) or not all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0
            for c in value):
        raise errors.InvalidHostNUMATopology(
            reason='%s: %r must be a list of CPU numbers, got %r'
                   % (what, key, value))
    return frozenset(value)


def _parse_cell(raw: Any) -> HostCell:
    if not isinstance(raw, dict):
        raise errors.InvalidHostNUMATopology(
            reason='a cell must be an object, got %r' % (raw,))
    cell_id = _int(raw, 'id', 'cell')
    what = 'cell %d' % cell_id
    siblings = raw.get('siblings') or []
    if not isinstance(siblings, list):
        raise errors.InvalidHostNUMATopology(
            reason='%s: siblings must be a list, got %r' % (what, siblings))
    sibling_sets = tuple(
        _cpus({'siblings': sib}, 'siblings', what) for sib in siblings)
    mempages = []
    for page in raw.get('mempages') or []:
        if not isinstance(page, dict):
            raise errors.InvalidHostNUMATopology(
                reason='%s: mempages entry %r is not an object'
                       % (what, page))
        size = _int(page, 'size_kb', what)
        if size == 0:
            raise errors.InvalidHostNUMATopology(
                reason='%s: size_kb must be > 0' % what)
        mempages.append(MemPages(size, _int(page, 'total', what),
                                 _int(page, 'reserved', what, 0)))
    cpuset = _cpus(raw, 'cpuset', what)
    pcpuset = _cpus(raw, 'pcpuset', what)
    if cpuset & pcpuset:
        raise errors.InvalidHostNUMATopology(
            reason='%s: cpuset and pcpuset share CPUs %s'
                   % (what, sorted(cpuset & pcpuset)))
    socket = raw.get('socket')
    return HostCell(
        id=cell_id, cpuset=cpuset, pcpuset=pcpuset,
        memory_mb=_int(raw, 'memory_mb', what), siblings=sibling_sets,
        mempages=tuple(sorted(mempages, key=lambda p: p.size_kb)),
        socket=cell_id if socket is None else _int(raw, 'socket', what))


# What parse_host_topology read, by document: hosts of one shape share
# their document (scheduler.host_cache.host_inputs), which nobody changes in
# place, so a filter fitting thousands of hosts parses each shape once. Holding
# the document keeps its id from being reused.
_parsed = {}
_PARSED_LIMIT = 4096


def parse_host_topology(value: Any) -> tuple[HostCell, ...] | None:
    """Return the host cells (ordered by id) of a reported topology.

    ``value`` is the JSON text or its parsed dict; ``None`` (or no cells)
    gives ``None``: the host reports no NUMA topology. The document must
    not be changed afterwards: the cells read are kept for it.
    """
    if value is None:
        return None
    key = value if isinstance(value, (str, bytes)) else id(value)
    found = _parsed.get(key)
    if found is not None and (found[0] is value or found[0] == key):
        return found[1]
    cells = _parse_host_topology(value)
    if len(_parsed) >= _PARSED_LIMIT:
        _parsed.clear()
    _parsed[key] = (value, cells)
    return cells


def _parse_host_topology(value: Any) -> tuple[HostCell, ...] | None:
    data = _load(value, 'numa_topology')
    if data is None:
        return None
    if not isinstance(data, dict) or not isinstance(
            data.get('cells', []), list):
        raise errors.InvalidHostNUMATopology(
            reason='numa_topology must be {"cells": [...]}, got %r'
                   % (data,))
    cells = sorted((_parse_cell(c) for c in data.get('cells', [])),
                   key=lambda c: c.id)
    ids = [c.id for c in cells]
    if len(set(ids)) != len(ids):
        raise errors.InvalidHostNUMATopology(
            reason='duplicate cell ids %s' % ids)
    return tuple(cells) or None


def _parse_cell_usage(raw: Any) -> CellUsage:
    if not isinstance(raw, dict):
        raise errors.InvalidHostNUMATopology(
            reason='a usage cell must be an object, got %r' % (raw,))
    cell_id = _int(raw, 'id', 'usage cell')
    what = 'usage of cell %d' % cell_id
    pages = raw.get('mempages_used') or {}
    if not isinstance(pages, dict):
        raise errors.InvalidHostNUMATopology(
            reason='%s: mempages_used must be an object' % what)
    used = {}
    for size, count in pages.items():
        try:
            size_kb = int(size)
        except ValueError:
            raise errors.InvalidHostNUMATopology(
                reason='%s: page size %r is not an integer'
                       % (what, size)) from None
        used[size_kb] = _int(pages, size, what)
    return CellUsage(
        id=cell_id, cpu_usage=_int(raw, 'cpu_usage', what, 0),
        memory_usage_mb=_int(raw, 'memory_usage_mb', what, 0),
        pinned_cpus=_cpus(raw, 'pinned_cpus', what),
        mempages_used=tuple(sorted(
            (size, n) for size, n in used.items() if n)))


def parse_usage(cells: tuple[HostCell, ...],
                value: Any) -> dict[int, CellUsage]:
    """Return the usage of every host cell, keyed by cell id.

    ``value`` is the stored JSON text, its parsed dict, or ``None``
    (nothing used). A usage naming a cell the host does not have is an
    error.
    """
    data = _load(value, 'numa_usage')
    usage = {cell.id: CellUsage(id=cell.id) for cell in cells}
    if data is None:
        return usage
    if not isinstance(data, dict) or not isinstance(
            data.get('cells', []), list):
        raise errors.InvalidHostNUMATopology(
            reason='numa_usage must be {"cells": [...]}, got %r' % (data,))
    for raw in data.get('cells', []):
        cell_usage = _parse_cell_usage(raw)
        if cell_usage.id not in usage:
            raise errors.InvalidHostNUMATopology(
                reason='usage names cell %d, which the host does not have'
                       % cell_usage.id)
        usage[cell_usage.id] = cell_usage
    return usage


def usage_to_dict(usage: dict[int, CellUsage]) -> dict:
    """Return the canonical JSON shape of a usage (cells ordered by id)."""
    return {'cells': [
        {'id': u.id, 'cpu_usage': u.cpu_usage,
         'memory_usage_mb': u.memory_usage_mb,
         'pinned_cpus': sorted(u.pinned_cpus),
         'mempages_used': {str(size): n for size, n in u.mempages_used}}
        for _, u in sorted(usage.items())]}


def normalize_usage(cells: tuple[HostCell, ...], value: Any) -> dict:
    """Return the canonical dict for a stored usage (``None`` included)."""
    return usage_to_dict(parse_usage(cells, value))
