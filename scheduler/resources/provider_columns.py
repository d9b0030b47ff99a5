"""Resource providers as columns: what the allocation candidates read.

A provider is a row. Each provider has a *slot* in its tree: the root
is slot 0, its descendants follow by depth. Rows go slot by slot: the
roots first (row ``t`` is the root of tree ``t``), then the second
provider of every tree that has one, and so on; so a class that only
roots hold (VCPU, MEMORY_MB) is read from one contiguous run of rows, and
"some provider of this tree" is a handful of whole-slot passes. Per
resource class the row holds what Placement's capacity check needs, folded
into three numbers:

* ``limit``: the most one allocation (or the sum of several groups' on this
  provider) may take: ``min(floor((total - reserved) * allocation_ratio) -
  used, max_unit)``, or -1 where the provider has no inventory of the class;
* ``min_unit`` and ``step_size``, which each group's amount must respect.

Traits and aggregates are bitsets: one ``uint64`` word per 64 names, stored
word-major (``bits[word, provider]``) so that a test reads contiguous
memory.

Two ways in. In bulk, from arrays (what a cache filled from SQL holds; no
Python loop per provider)::

    columns = provider_columns.Columns.from_arrays(
        uuids=['cn1', 'cn1-pf'], parents=[-1, 0],
        inventories=provider_columns.InventoryArrays(
            class_names=('VCPU', 'SRIOV_NET_VF'), provider=[0, 1],
            class_index=[0, 1], total=[16, 8], used=[4, 0]),
        traits=provider_columns.Memberships(
            names=('HW_CPU_X86_AVX2',), provider=[0], index=[0]))

or, for tests and small clouds, from :class:`Provider` values::

    columns = provider_columns.Columns([
        provider_columns.Provider('cn1', inventories={'VCPU': Inventory(8)},
                                  traits={'HW_CPU_X86_AVX2'}),
        provider_columns.Provider('numa0', parent_uuid='cn1', ...),
    ])

A claim or a release changes a few ``used`` amounts; ``with_used`` and
``with_allocation`` give a new ``Columns`` sharing every array, without
rebuilding or copying: the changed rows go to a small per-class *patch*
(:class:`Patch`) over the shared base arrays, which the readers apply
(:meth:`Columns.limit_at`, and :mod:`tree_view` fixes up its vectorised
answers at the patched positions). A patch growing past ``PATCH_ROWS``
rows is folded into fresh arrays for its class, so that fix-up stays a
handful of rows while the cost of a derivation stays O(rows changed),
amortised. ``Columns.limit`` gives the patched arrays whole (built when
first asked for; for tests and tools, not the passes).
"""

import copy
import dataclasses
import math
from typing import Optional

import numpy as np

from scheduler.resources import provider_arrays

WORD = 64
# A class's patch holding more rows than this is folded into fresh arrays.
PATCH_ROWS = 64


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


InventoryArrays = provider_arrays.InventoryArrays
Memberships = provider_arrays.Memberships


class Columns:
    """The arrays of one set of providers (see the module docstring).

    Attributes: ``uuids`` (row order, an object array), ``row_of`` {uuid:
    row}, ``order`` (the input position of each row, for
    :meth:`from_arrays`), ``root_rows`` (row of each tree's root, tree
    order: the order the roots had in the input; ``arange(trees)``),
    ``root_of`` (row of each row's root, which is also its tree number
    ``tree_of``), ``slot_of`` (each row's slot), ``slot_starts`` (first
    row of each slot, and the end), ``slot_trees`` (per slot, the trees
    with a provider there, or None: every tree), ``tree_sizes``,
    ``classes`` {name: column}, ``class_slots`` (per column, the slots
    ``(first, stop)`` holding its inventories),
    ``limit`` (per column, an int64 array over rows; the passes read
    ``base_limit`` and ``patches`` {column: :class:`Patch`} instead, see
    the module docstring), ``min_unit`` and
    ``step_size`` (per column, an array, or None where every provider takes
    any amount >= 1 / every step is 1), ``min_ok`` / ``step_ok`` (those
    None, per column), ``traits`` {name: bit}, ``trait_bits`` [word, row],
    ``aggregates`` {uuid: bit}, ``aggregate_bits`` [word, row], ``nested``
    (any tree has more than one provider).
    """

    def __init__(self, providers):
        self._build(**provider_arrays.from_providers(providers))

    @classmethod
    def from_arrays(cls, uuids, parents, inventories=None, traits=None,
                    aggregates=None):
        """Columns built from arrays, in bulk.

        ``uuids``: one per provider; ``parents``: the input position of
        each provider's parent, -1 for a root; ``inventories``: an
        :class:`InventoryArrays`; ``traits`` / ``aggregates``:
        :class:`Memberships`. Trees come in the order of their roots in the
        input, each root first, then its descendants by depth (input order
        within a depth); :attr:`order` maps rows back to the input.
        """
        columns = cls.__new__(cls)
        columns._build(uuids, parents, inventories, traits, aggregates)
        return columns

    def _build(self, uuids, parents, inventories, traits, aggregates):
        uuids = np.asarray(uuids, dtype=object).reshape(-1)
        parents = np.asarray(parents, dtype=np.int64).reshape(-1)
        if len(parents) != len(uuids):
            raise ValueError('%d parents given for %d providers.'
                             % (len(parents), len(uuids)))
        order, tree, slot = provider_arrays.tree_order(uuids, parents)
        count = len(uuids)
        position = np.empty(count, dtype=np.int64)
        position[order] = np.arange(count)
        self.order = order
        self.uuids = uuids[order]
        self.row_of = dict(zip(self.uuids.tolist(), range(count)))
        if len(self.row_of) != count:
            provider_arrays.refuse_duplicates(self.uuids)
        self._index_trees(tree[order], slot[order])
        inventory = provider_arrays.inventory_columns(
            inventories, position, self.uuids)
        self.classes = inventory.classes
        self.base_limit = inventory.limit
        self.patches = {}
        self._limit = None
        self.min_unit = inventory.min_unit
        self.step_size = inventory.step_size
        self._records = inventory.records
        self.min_ok = np.array([m is None for m in self.min_unit], dtype=bool)
        self.step_ok = np.array([s is None for s in self.step_size],
                                dtype=bool)
        self.class_slots = [self._slots_of(record[0])
                            for record in self._records]
        self.traits, self.trait_bits = provider_arrays.bitset(
            traits, position, 'traits')
        self.aggregates, self.aggregate_bits = provider_arrays.bitset(
            aggregates, position, 'aggregates')

    def _index_trees(self, tree_of, slot_of):
        count = len(tree_of)
        trees = int(np.count_nonzero(slot_of == 0))
        width = int(slot_of[-1]) + 1 if count else 0
        self.tree_of = tree_of
        self.slot_of = slot_of
        self.root_rows = np.arange(trees)
        self.root_of = tree_of
        self.tree_sizes = np.bincount(tree_of, minlength=trees)
        self.slot_starts = np.searchsorted(slot_of, np.arange(width + 1))
        self.slot_trees = []
        for slot in range(width):
            start, stop = self.slot_starts[slot], self.slot_starts[slot + 1]
            self.slot_trees.append(None if stop - start == trees
                                   else tree_of[start:stop])
        self.nested = width > 1

    def _slots_of(self, rows):
        """``(first, stop)``: the slots where ``rows`` lie."""
        if not len(rows):
            return 0, 0
        slots = self.slot_of[rows]
        return int(slots.min()), int(slots.max()) + 1

    def tree_rows(self, tree):
        """The rows of tree number ``tree``, slot by slot."""
        rows = []
        for slot in range(int(self.tree_sizes[tree])):
            trees = self.slot_trees[slot]
            rank = tree if trees is None else int(np.searchsorted(trees, tree))
            rows.append(int(self.slot_starts[slot]) + rank)
        return np.asarray(rows, dtype=np.int64)

    @property
    def root_uuids(self):
        return self.uuids[self.root_rows].tolist()

    @property
    def limit(self):
        """Per column, the limits over every row, patches applied (arrays
        built when first asked for; unpatched columns are the base's)."""
        if self._limit is None:
            limit = list(self.base_limit)
            for column, patch in self.patches.items():
                limit[column] = limit[column].copy()
                limit[column][patch.rows] = patch.limits
            self._limit = limit
        return self._limit

    def limit_at(self, column, row):
        """The limit of class ``column`` on row ``row``."""
        patch = self.patches.get(column)
        if patch is not None:
            entry = patch.by_row.get(row)
            if entry is not None:
                return entry[0]
        return int(self.base_limit[column][row])

    def used_of(self, uuid, name):
        """What is allocated of class ``name`` on provider ``uuid``."""
        column, row = self._locate(uuid, name)
        rows, _, _, used = self._records[column]
        at = self._record(rows, row, uuid, name)
        patch = self.patches.get(column)
        if patch is not None and row in patch.by_row:
            return patch.by_row[row][1]
        return int(used[at])

    def with_used(self, changes):
        """New columns where ``changes`` ``{uuid: {class: used}}`` replace
        those providers' used amounts; every base array is shared (the
        changes go to the classes' patches, see the module docstring).
        Refuses a provider or class it does not know, and a class the
        provider has no inventory of."""
        by_column = {}
        for uuid, amounts in changes.items():
            for name, used in amounts.items():
                column, row = self._locate(uuid, name)
                by_column.setdefault(column, []).append(
                    (row, int(used), uuid, name))
        new = copy.copy(self)
        new._limit = None
        new.patches = dict(self.patches)
        folded = False
        for column, entries in by_column.items():
            record_rows, capacity, max_unit, _ = self._records[column]
            patch = self.patches.get(column)
            by_row = dict(patch.by_row) if patch is not None else {}
            for row, used, uuid, name in entries:
                at = self._record(record_rows, row, uuid, name)
                by_row[row] = (int(min(capacity[at] - used, max_unit[at])),
                               used, at)
            if len(by_row) <= PATCH_ROWS:
                new.patches[column] = Patch(by_row)
                continue
            if not folded:
                new.base_limit = list(self.base_limit)
                new._records = list(self._records)
                folded = True
            new._fold(column, Patch(by_row))
        return new

    def _fold(self, column, patch):
        """Make ``patch`` part of fresh base arrays of class ``column``."""
        record_rows, capacity, max_unit, used = self._records[column]
        limit = self.base_limit[column].copy()
        limit[patch.rows] = patch.limits
        used = used.copy()
        used[patch.at] = patch.used
        self.base_limit[column] = limit
        self._records[column] = (record_rows, capacity, max_unit, used)
        self.patches.pop(column, None)

    def with_allocation(self, allocation, sign=1):
        """New columns with ``allocation`` ``{uuid: {class: amount}}``
        added to the used amounts (``sign=-1``: taken away, a release)."""
        return self.with_used({
            uuid: {name: self.used_of(uuid, name) + sign * amount
                   for name, amount in amounts.items()}
            for uuid, amounts in allocation.items()})

    def _locate(self, uuid, name):
        row = self.row_of.get(uuid)
        if row is None:
            raise ValueError('Provider %s is not in the table.' % uuid)
        column = self.classes.get(name)
        if column is None:
            raise ValueError('Provider %s has no inventory of %s.'
                             % (uuid, name))
        return column, row

    @staticmethod
    def _record(rows, row, uuid, name):
        at = int(np.searchsorted(rows, row))
        if at == len(rows) or rows[at] != row:
            raise ValueError('Provider %s has no inventory of %s.'
                             % (uuid, name))
        return at


class Patch:
    """The rows of one class whose used amounts changed since its base
    arrays were built: ``by_row`` {row: (limit, used, record index)}, and
    the same as arrays sorted by row: ``rows``, ``limits``, ``used``,
    ``at``."""

    __slots__ = ('by_row', 'rows', 'limits', 'used', 'at')

    def __init__(self, by_row):
        self.by_row = by_row
        rows = sorted(by_row)
        self.rows = np.asarray(rows, dtype=np.int64)
        entries = [by_row[row] for row in rows]
        self.limits = np.asarray([entry[0] for entry in entries],
                                 dtype=np.int64)
        self.used = np.asarray([entry[1] for entry in entries],
                               dtype=np.int64)
        self.at = np.asarray([entry[2] for entry in entries], dtype=np.int64)


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
