"""Pinning dedicated vCPUs onto free host CPUs, with thread policies.

``pin_cell`` maps the dedicated vCPUs of one guest cell onto the free
``pcpuset`` CPUs of one host cell, the way Nova packs them:

``prefer`` (and no policy)
    Use the same number of threads on each core, as many as possible: try
    "N free threads per core" for the largest N first, so a guest's vCPUs
    land on sibling threads; when no N works, fall back to any free CPUs,
    one by one.
``require``
    As ``prefer`` but only on cores with two or more free threads; fails on
    a host without SMT.
``isolate``
    Each vCPU gets a core of its own. As in Nova since bug 1889633, only
    on a cell without SMT: a host that reports dedicated CPUs
    (``pcpuset``, Nova's ``cpu_dedicated_set``) and hyperthread siblings
    on the cell fails an ``isolate`` guest there (Nova's scheduler leaves
    such hosts out with the forbidden trait ``HW_CPU_HYPERTHREADING``).
    Gantt hosts always report ``pcpuset`` apart from ``cpuset``, so
    Nova's legacy ``vcpu_pin_set`` way (pin one thread of a whole free
    core and set its siblings aside) never applies: the siblings-aside
    code only runs on cells of one thread per core, where there are none.

The emulator threads of a guest with ``hw:emulator_threads_policy=isolate``
get one more host CPU (``pin_emulator``), taken the same way.

Example, a host cell with cores (4, 5), (6, 7), CPU 5 already pinned::

    pin_cell(cell, {0, 1}, pinned={5}, thread_policy='prefer')
    # -> ({0: 6, 1: 7}, frozenset())
"""

import collections
import itertools
import logging

from scheduler.numa import request as numa_request
from scheduler.numa import topology

LOG = logging.getLogger(__name__)

Pinning = tuple[dict[int, int], frozenset[int]]


def _take(vcpus: list[int], cores: list[list[int]],
          per_core: int) -> dict[int, int] | None:
    """Pin ``vcpus`` on the first ``per_core`` threads of each core."""
    if per_core * len(cores) < len(vcpus):
        return None
    usable = itertools.chain.from_iterable(c[:per_core] for c in cores)
    return dict(zip(vcpus, usable))


def _free_cores(cell: topology.HostCell,
                pinned: frozenset[int]) -> list[list[int]]:
    free = cell.pcpuset - pinned
    return [sorted(core & free) for core in cell.cores() if core & free]


def whole_free_cores(cell: topology.HostCell,
                     pinned: frozenset[int]) -> list[list[int]]:
    """The cores ``isolate`` may use: all their threads free."""
    width = cell.threads_per_core
    return [sorted(core) for core in cell.cores()
            if len(core) == width and not core & pinned]


def packed_room(cell: topology.HostCell, pinned: frozenset[int],
                min_width: int) -> int:
    """Most vCPUs the packing of ``prefer``/``require`` can place with
    the same number (``min_width`` or more) of threads on each core: the
    largest ``width * cores with width free threads``, 0 if none."""
    counts = collections.Counter(len(core)
                                 for core in _free_cores(cell, pinned))
    room, cores = 0, 0
    for width in sorted(counts, reverse=True):
        cores += counts[width]
        if width >= min_width:
            room = max(room, width * cores)
    return room


def _pin_isolate(cell, vcpus, pinned) -> Pinning | None:
    whole = whole_free_cores(cell, pinned)
    pinning = _take(vcpus, whole, 1)
    if pinning is None:
        LOG.debug("Host cell %s has %d whole free cores, isolate needs %d",
                  cell.id, len(whole), len(vcpus))
        return None
    used = set(pinning.values())
    reserved = frozenset(cpu for core in whole if used & set(core)
                         for cpu in core) - used
    return pinning, reserved


def _pin_packed(cell, vcpus, pinned, require: bool) -> Pinning | None:
    cores = _free_cores(cell, pinned)
    by_width: dict[int, list[list[int]]] = collections.defaultdict(list)
    for core in cores:
        for width in range(1, len(core) + 1):
            by_width[width].append(core)
    for width in sorted(by_width, reverse=True):
        if require and width < 2:
            continue
        pinning = _take(vcpus, by_width[width], width)
        if pinning is not None:
            return pinning, frozenset()
    if require:
        return None
    singles = [[cpu] for core in cores for cpu in core]
    pinning = _take(vcpus, singles, 1)
    return None if pinning is None else (pinning, frozenset())


def pin_emulator(cell: topology.HostCell, taken, thread_policy: str | None,
                 count: int = 1) -> Pinning | None:
    """Pick ``count`` host CPUs for the emulator threads, or ``None``.

    ``taken`` are the host CPUs already pinned, including the guest's own.
    Returns ``({}, cpus)`` in the same shape as :func:`pin_cell`; with
    ``isolate`` the emulator gets a whole free core, and the core's other
    threads are returned with it.
    """
    taken = frozenset(taken)
    if thread_policy == numa_request.ISOLATE:
        width = cell.threads_per_core
        whole = [core for core in cell.cores()
                 if len(core) == width and not core & taken]
        if len(whole) < count:
            return None
        return {}, frozenset().union(*whole[:count])
    free = [cpu for core in cell.cores() for cpu in sorted(core - taken)]
    if len(free) < count:
        return None
    return {}, frozenset(free[:count])


def pin_cell(cell: topology.HostCell, vcpus, pinned,
             thread_policy: str | None) -> Pinning | None:
    """Return ``(vcpu -> host cpu, reserved host cpus)`` or ``None``.

    ``vcpus`` are the guest's dedicated vCPUs for this cell, ``pinned`` the
    host CPUs already taken on it. ``None`` means the cell cannot hold them
    under ``thread_policy``.
    """
    vcpus = sorted(vcpus)
    pinned = frozenset(pinned)
    if not vcpus:
        return {}, frozenset()
    if len(vcpus) > len(cell.pcpuset - pinned):
        return None
    if thread_policy == numa_request.ISOLATE:
        if cell.threads_per_core > 1:
            LOG.debug("Host cell %s has SMT siblings; thread policy "
                      "isolate fails (Nova bug 1889633)", cell.id)
            return None
        return _pin_isolate(cell, vcpus, pinned)
    require = thread_policy == numa_request.REQUIRE
    if require and cell.threads_per_core < 2:
        LOG.debug("Host cell %s has no SMT; thread policy require fails",
                  cell.id)
        return None
    return _pin_packed(cell, vcpus, pinned, require)
