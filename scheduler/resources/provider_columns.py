"""Resource providers as columns: what the allocation candidates read.

A provider is a row; its trees are kept contiguous (a root, then its
descendants depth first), so that "any provider of this tree" is one
``reduceat`` over the tree's slice. Per resource class the row holds what
Placement's capacity check needs, folded into three numbers:

* ``limit``: the most one allocation (or the sum of several groups' on this
  provider) may take: ``min(floor((total - reserved) * allocation_ratio) -
  used, max_unit)``, or -1 where the provider has no inventory of the class;
* ``min_unit`` and ``step_size``, which each group's amount must respect.

Traits and aggregates are bitsets: one ``uint64`` word per 64 names, stored
word-major (``bits[word, provider]``) so that a test reads contiguous
memory::

    columns = provider_columns.build([
        provider_columns.Provider('cn1', inventories={'VCPU': Inventory(8)},
                                  traits={'HW_CPU_X86_AVX2'}),
        provider_columns.Provider('numa0', parent_uuid='cn1', ...),
    ])
"""

import dataclasses
import math
from typing import Optional

import numpy as np

WORD = 64


@dataclasses.dataclass(frozen=True)
class Inventory:
    """One class's inventory on one provider, as Placement records it.

    ``max_unit`` None means ``total`` (Placement's default).
    """

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: Optional[int] = None
    step_size: int = 1
    allocation_ratio: float = 1.0

    def capacity(self):
        """What Placement lets be used in all: (total - reserved) * ratio,
        rounded down as its summaries do."""
        return math.floor((self.total - self.reserved) * self.allocation_ratio)


@dataclasses.dataclass(frozen=True)
class Provider:
    """A resource provider: a compute node (root) or a nested one.

    ``inventories``: ``{class: Inventory}``; ``used``: ``{class: amount}``
    already allocated; ``traits`` and ``aggregates``: names and UUIDs.
    """

    uuid: str
    parent_uuid: Optional[str] = None
    inventories: dict = dataclasses.field(default_factory=dict)
    used: dict = dataclasses.field(default_factory=dict)
    traits: frozenset = frozenset()
    aggregates: frozenset = frozenset()


class Columns:
    """The arrays of one set of providers (see the module docstring).

    Attributes: ``uuids`` (row order), ``row_of`` {uuid: row},
    ``root_rows`` (row of each tree's root, tree order), ``tree_starts``
    (== root_rows), ``tree_ends``, ``root_of`` (row of each row's root),
    ``tree_of`` (tree number of each row), ``classes`` {name: column},
    ``limit``, ``min_unit``, ``step_size`` ([class, row] int64), ``min_ok``
    / ``step_ok`` (class-wide: every provider takes any amount >= 1 /
    every step is 1), ``traits`` {name: bit}, ``trait_bits`` [word, row],
    ``aggregates`` {uuid: bit}, ``aggregate_bits`` [word, row], ``nested``
    (any tree has more than one provider).
    """

    def __init__(self, providers):
        ordered = _tree_order(providers)
        count = len(ordered)
        self.providers = ordered
        self.uuids = [provider.uuid for provider in ordered]
        self.row_of = {uuid: row for row, uuid in enumerate(self.uuids)}
        self._index_trees(ordered)
        self.classes = _names({name for provider in ordered
                               for name in provider.inventories})
        self._fill_inventories(ordered, count)
        self.traits = _names({name for provider in ordered
                              for name in provider.traits})
        self.trait_bits = _bitset(self.traits, ordered, 'traits')
        self.aggregates = _names({uuid for provider in ordered
                                  for uuid in provider.aggregates})
        self.aggregate_bits = _bitset(self.aggregates, ordered, 'aggregates')

    def _index_trees(self, ordered):
        root_of = np.empty(len(ordered), dtype=np.int64)
        roots = []
        for row, provider in enumerate(ordered):
            if provider.parent_uuid is None:
                roots.append(row)
                root_of[row] = row
            else:
                root_of[row] = root_of[self.row_of[provider.parent_uuid]]
        self.root_rows = np.asarray(roots, dtype=np.int64)
        self.tree_starts = self.root_rows
        self.tree_ends = np.append(self.root_rows[1:], len(ordered))
        self.root_of = root_of
        self.tree_of = np.repeat(np.arange(len(roots)),
                                 self.tree_ends - self.tree_starts)
        self.nested = len(roots) < len(ordered)

    def _fill_inventories(self, ordered, count):
        shape = (len(self.classes), count)
        self.limit = np.full(shape, -1, dtype=np.int64)
        self.min_unit = np.ones(shape, dtype=np.int64)
        self.step_size = np.ones(shape, dtype=np.int64)
        for row, provider in enumerate(ordered):
            for name, inventory in provider.inventories.items():
                column = self.classes[name]
                free = inventory.capacity() - provider.used.get(name, 0)
                max_unit = (inventory.total if inventory.max_unit is None
                            else inventory.max_unit)
                self.limit[column, row] = min(free, max_unit)
                self.min_unit[column, row] = inventory.min_unit
                self.step_size[column, row] = inventory.step_size
        self.min_ok = (self.min_unit <= 1).all(axis=1)
        self.step_ok = (self.step_size == 1).all(axis=1)

    @property
    def root_uuids(self):
        return [self.uuids[row] for row in self.root_rows]


def _names(names):
    return {name: index for index, name in enumerate(sorted(names))}


def _bitset(index, providers, attribute):
    words = max(1, -(-len(index) // WORD))
    bits = np.zeros((words, len(providers)), dtype=np.uint64)
    for row, provider in enumerate(providers):
        for name in getattr(provider, attribute):
            bit = index[name]
            bits[bit // WORD, row] |= np.uint64(1 << (bit % WORD))
    return bits


def masks(index, names):
    """``{word: mask}`` of the known ``names``, and whether any is unknown."""
    words = {}
    unknown = False
    for name in names:
        bit = index.get(name)
        if bit is None:
            unknown = True
            continue
        words[bit // WORD] = words.get(bit // WORD, 0) | (1 << (bit % WORD))
    return ({word: np.uint64(mask) for word, mask in words.items()},
            unknown)


def _tree_order(providers):
    """The providers with each tree contiguous, root first, children
    after their parent; refuses duplicates, orphans and cycles."""
    by_uuid = {}
    children = {}
    for provider in providers:
        if provider.uuid in by_uuid:
            raise ValueError('Provider %s is listed twice.' % provider.uuid)
        by_uuid[provider.uuid] = provider
    roots = []
    for provider in by_uuid.values():
        if provider.parent_uuid is None:
            roots.append(provider)
        elif provider.parent_uuid not in by_uuid:
            raise ValueError('Provider %s has parent %s, which is not among '
                             'the providers.' % (provider.uuid,
                                                 provider.parent_uuid))
        else:
            children.setdefault(provider.parent_uuid, []).append(provider)
    ordered = []
    for root in roots:
        stack = [root]
        while stack:
            provider = stack.pop()
            ordered.append(provider)
            stack.extend(reversed(children.get(provider.uuid, ())))
    if len(ordered) != len(by_uuid):
        cyclic = sorted(set(by_uuid) - {p.uuid for p in ordered})
        raise ValueError('Providers %s form a cycle of parents.'
                         % ', '.join(cyclic))
    for provider in ordered:
        for name, inventory in provider.inventories.items():
            _check_inventory(provider.uuid, name, inventory)
    return ordered


def _check_inventory(uuid, name, inventory):
    if inventory.step_size < 1 or inventory.min_unit < 1:
        raise ValueError('Provider %s: %s inventory needs min_unit and '
                         'step_size of at least 1.' % (uuid, name))
    if inventory.allocation_ratio <= 0:
        raise ValueError('Provider %s: %s inventory needs a positive '
                         'allocation_ratio.' % (uuid, name))
