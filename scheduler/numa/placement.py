"""An instance's NUMA placement on a host, and its JSON round trip.

A :class:`Placement` is what fitting returns and what a claim stores so
that it can release exactly what it took later: for each guest cell, the
host cell it went to, its memory and the page size charged, its shared
vCPUs, the host CPU each dedicated vCPU is pinned to, and the host CPUs
set aside beside them (the ``isolate`` thread policy), and the host CPU
for the emulator threads (``hw:emulator_threads_policy=isolate``)::

    text = json.dumps(placement.to_dict())
    same = Placement.from_dict(json.loads(text))

JSON shape::

    {"cpu_policy": "dedicated", "cpu_thread_policy": null,
     "pagesize_request": null, "realtime_vcpus": [],
     "emulator_threads_policy": "isolate",
     "cells": [{"id": 0, "host_cell": 1, "memory_mb": 2048,
                "page_size_kb": 4, "shared_vcpus": [],
                "cpu_pinning": {"0": 4, "1": 5}, "reserved_cpus": [],
                "emulator_cpus": [6]}]}

``page_size_kb`` is null when the host cell reports no page sizes;
``pagesize_request`` is the request's page size (``"large"``, 2048, ...)
or null: with one, pages are charged without overcommit.
"""

import dataclasses
from typing import Any

from scheduler.numa import errors
from scheduler.numa import request as numa_request


@dataclasses.dataclass(frozen=True)
class PlacedCell:
    """One guest cell placed on one host cell."""

    id: int
    host_cell: int
    memory_mb: int
    page_size_kb: int | None
    shared_vcpus: frozenset[int] = frozenset()
    cpu_pinning: tuple[tuple[int, int], ...] = ()
    reserved_cpus: frozenset[int] = frozenset()
    emulator_cpus: frozenset[int] = frozenset()

    @property
    def pinned_host_cpus(self) -> frozenset[int]:
        """Host CPUs this cell takes: pinned, set aside, emulator's."""
        return (frozenset(p for _, p in self.cpu_pinning) |
                self.reserved_cpus | self.emulator_cpus)

    @property
    def pages(self) -> int:
        """Pages of ``page_size_kb`` charged (0 when there is no size)."""
        if not self.page_size_kb:
            return 0
        return self.memory_mb * 1024 // self.page_size_kb


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where each guest cell of one instance went."""

    cells: tuple[PlacedCell, ...]
    cpu_policy: str | None = None
    cpu_thread_policy: str | None = None
    pagesize_request: str | int | None = None
    realtime_vcpus: frozenset[int] = frozenset()
    emulator_threads_policy: str | None = None

    @property
    def pinned(self) -> bool:
        return self.cpu_policy in (numa_request.DEDICATED,
                                   numa_request.MIXED)

    @property
    def host_cells(self) -> tuple[int, ...]:
        return tuple(c.host_cell for c in self.cells)

    def to_dict(self) -> dict:
        return {
            'cpu_policy': self.cpu_policy,
            'cpu_thread_policy': self.cpu_thread_policy,
            'pagesize_request': self.pagesize_request,
            'realtime_vcpus': sorted(self.realtime_vcpus),
            'emulator_threads_policy': self.emulator_threads_policy,
            'cells': [{
                'id': c.id, 'host_cell': c.host_cell,
                'memory_mb': c.memory_mb, 'page_size_kb': c.page_size_kb,
                'shared_vcpus': sorted(c.shared_vcpus),
                'cpu_pinning': {str(v): p for v, p in c.cpu_pinning},
                'reserved_cpus': sorted(c.reserved_cpus),
                'emulator_cpus': sorted(c.emulator_cpus),
            } for c in self.cells]}

    @classmethod
    def from_dict(cls, data: Any) -> 'Placement':
        """Read back :meth:`to_dict`; a malformed value names the problem."""
        try:
            cells = tuple(_cell_from_dict(c) for c in data['cells'])
            request = data.get('pagesize_request')
            return cls(
                cells=cells, cpu_policy=data.get('cpu_policy'),
                cpu_thread_policy=data.get('cpu_thread_policy'),
                pagesize_request=(None if request is None else
                                  numa_request.parse_page_size(request)),
                realtime_vcpus=frozenset(
                    int(v) for v in data.get('realtime_vcpus', [])),
                emulator_threads_policy=data.get('emulator_threads_policy'))
        except (KeyError, TypeError, ValueError, AttributeError,
                errors.InvalidNUMARequest) as exc:
            raise errors.InvalidNUMAPlacement(
                reason='%r: %s' % (data, exc)) from None


def _cell_from_dict(raw: dict) -> PlacedCell:
    page = raw.get('page_size_kb')
    return PlacedCell(
        id=int(raw['id']), host_cell=int(raw['host_cell']),
        memory_mb=int(raw['memory_mb']),
        page_size_kb=None if page is None else int(page),
        shared_vcpus=frozenset(int(v) for v in raw.get('shared_vcpus', [])),
        cpu_pinning=tuple(sorted(
            (int(v), int(p)) for v, p in raw.get('cpu_pinning', {}).items())),
        reserved_cpus=frozenset(
            int(c) for c in raw.get('reserved_cpus', [])),
        emulator_cpus=frozenset(
            int(c) for c in raw.get('emulator_cpus', [])))
