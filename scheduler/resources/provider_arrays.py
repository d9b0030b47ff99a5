"""The bulk inputs of provider columns, and how they become columns.

:class:`InventoryArrays` and :class:`Memberships` are what a cache filled
from SQL holds (one record per inventory row, one pair per trait or
aggregate association); the functions here check them and turn them into
the arrays of :class:`scheduler.resources.provider_columns.Columns`, with
whole-array operations only: 300,000 providers take a fraction of a
second. :func:`from_providers` turns a list of ``Provider`` values into
the same inputs, for tests and small clouds.
"""

import collections
import dataclasses
from typing import Any

import numpy as np

WORD = 64


@dataclasses.dataclass(frozen=True)
class InventoryArrays:
    """Inventory records in bulk, one per (provider, class).

    Record ``k``: provider ``provider[k]`` (its input position) has
    inventory of ``class_names[class_index[k]]``. The columns left None
    take :class:`~scheduler.resources.provider_columns.Inventory`'s
    defaults; a negative ``max_unit`` means ``total``; ``used`` is what is
    allocated already.
    """

    class_names: tuple
    provider: Any
    class_index: Any
    total: Any
    reserved: Any = None
    min_unit: Any = None
    max_unit: Any = None
    step_size: Any = None
    allocation_ratio: Any = None
    used: Any = None


@dataclasses.dataclass(frozen=True)
class Memberships:
    """Names (traits, aggregate UUIDs) held by providers, in bulk: pair
    ``k`` says provider ``provider[k]`` (input position) has
    ``names[index[k]]``."""

    names: tuple
    provider: Any
    index: Any


@dataclasses.dataclass
class InventoryColumns:
    classes: dict
    limit: list
    min_unit: list
    step_size: list
    # Per column: (rows, capacity, max_unit, used) of the providers with
    # inventory of the class, rows ascending; what with_used needs.
    records: list


def tree_order(uuids, parents):
    """``(order, tree, slot)``: the input positions in row order, and each
    input provider's tree number and slot (its rank in its tree: the root
    0, then its descendants by depth, input order within a depth). Rows go
    slot by slot, trees in the order of their roots within a slot.
    Refuses parents out of range and cycles."""
    count = len(parents)
    bad = np.flatnonzero((parents < -1) | (parents >= count))
    if len(bad):
        raise ValueError('Provider %s has parent %d, which is not among the '
                         'providers.' % (uuids[bad[0]], parents[bad[0]]))
    is_root = parents < 0
    up = np.where(is_root, np.arange(count), parents)
    depth = (~is_root).astype(np.int64)
    # Pointer doubling: after k steps ``up`` is the ancestor 2**k levels
    # up (or the root) and ``depth`` the distance to it.
    for _ in range(max(1, int(count).bit_length() + 1)):
        if is_root[up].all():
            break
        depth += depth[up]
        up = up[up]
    stuck = np.flatnonzero(~is_root[up])
    if len(stuck):
        raise ValueError('Providers %s form a cycle of parents.'
                         % ', '.join(sorted(map(str, uuids[stuck[:10]]))))
    tree = (np.cumsum(is_root) - 1)[up]
    by_tree = np.lexsort((np.arange(count), depth, tree))
    sizes = np.bincount(tree, minlength=int(is_root.sum()))
    firsts = np.cumsum(sizes) - sizes
    slot = np.empty(count, dtype=np.int64)
    slot[by_tree] = np.arange(count) - firsts[tree[by_tree]]
    order = np.lexsort((tree, slot))
    return order, tree, slot


def refuse_duplicates(uuids):
    twice = sorted(uuid for uuid, seen in
                   collections.Counter(uuids.tolist()).items() if seen > 1)
    raise ValueError('Provider %s is listed twice.' % ', '.join(twice[:10]))


def _column(values, default, count, dtype):
    if values is None:
        return np.full(count, default, dtype=dtype)
    values = np.asarray(values, dtype=dtype).reshape(-1)
    if len(values) != count:
        raise ValueError('Inventory columns differ in length: %d and %d.'
                         % (len(values), count))
    return values


def inventory_columns(inventories, position, uuids):
    """The per-class columns of ``inventories`` (rows: ``position`` of
    each input provider)."""
    rows_count = len(position)
    if inventories is None:
        return InventoryColumns({}, [], [], [], [])
    names = list(inventories.class_names)
    classes = {name: column for column, name in enumerate(names)}
    if len(classes) != len(names):
        raise ValueError('Inventory class names repeat: %s.' % names)
    provider = np.asarray(inventories.provider, dtype=np.int64).reshape(-1)
    count = len(provider)
    class_index = _column(inventories.class_index, 0, count, np.int64)
    _check_range(provider, rows_count, 'provider')
    _check_range(class_index, len(names), 'class_index')
    rows = position[provider]
    total = _column(inventories.total, 0, count, np.int64)
    reserved = _column(inventories.reserved, 0, count, np.int64)
    min_unit = _column(inventories.min_unit, 1, count, np.int64)
    max_unit = _column(inventories.max_unit, -1, count, np.int64)
    step = _column(inventories.step_size, 1, count, np.int64)
    ratio = _column(inventories.allocation_ratio, 1.0, count, np.float64)
    used = _column(inventories.used, 0, count, np.int64)
    bad = np.flatnonzero((min_unit < 1) | (step < 1) | ~(ratio > 0))
    if len(bad):
        k = bad[0]
        raise ValueError('Provider %s: %s inventory needs min_unit and '
                         'step_size of at least 1 and a positive '
                         'allocation_ratio.'
                         % (uuids[rows[k]], names[class_index[k]]))
    key = class_index * rows_count + rows
    sort = np.argsort(key, kind='stable')
    key = key[sort]
    repeated = np.flatnonzero(key[1:] == key[:-1])
    if len(repeated):
        k = sort[repeated[0]]
        raise ValueError('Provider %s has two %s inventories.'
                         % (uuids[rows[k]], names[class_index[k]]))
    capacity = np.floor((total - reserved) * ratio).astype(np.int64)
    max_unit = np.where(max_unit < 0, total, max_unit)
    bounds = np.searchsorted(class_index[sort], np.arange(len(names) + 1))
    result = InventoryColumns(classes, [], [], [], [])
    for column in range(len(names)):
        part = sort[bounds[column]:bounds[column + 1]]
        record = (rows[part], capacity[part], max_unit[part], used[part])
        result.records.append(record)
        limit = np.full(rows_count, -1, dtype=np.int64)
        limit[record[0]] = np.minimum(record[1] - record[3], record[2])
        result.limit.append(limit)
        result.min_unit.append(_sparse(min_unit[part], record[0], rows_count))
        result.step_size.append(_sparse(step[part], record[0], rows_count))
    return result


def _sparse(values, rows, count):
    """A full column of ``values`` at ``rows`` (1 elsewhere), or None
    when every value is 1."""
    if (values == 1).all():
        return None
    column = np.ones(count, dtype=np.int64)
    column[rows] = values
    return column


def _check_range(values, size, what):
    bad = np.flatnonzero((values < 0) | (values >= size))
    if len(bad):
        raise ValueError('%s %d is out of range (0 to %d).'
                         % (what, values[bad[0]], size - 1))


def bitset(memberships, position, what):
    """``({name: bit}, bits[word, row])`` of ``memberships``."""
    count = len(position)
    if memberships is None:
        return {}, np.zeros((1, count), dtype=np.uint64)
    names = list(memberships.names)
    index = {name: bit for bit, name in enumerate(names)}
    if len(index) != len(names):
        raise ValueError('The names of %s repeat.' % what)
    words = max(1, -(-len(names) // WORD))
    bits = np.zeros((words, count), dtype=np.uint64)
    provider = np.asarray(memberships.provider, dtype=np.int64).reshape(-1)
    bit = np.asarray(memberships.index, dtype=np.int64).reshape(-1)
    if len(provider) != len(bit):
        raise ValueError('%s: %d providers for %d names.'
                         % (what, len(provider), len(bit)))
    _check_range(provider, count, '%s provider' % what)
    _check_range(bit, len(names), '%s index' % what)
    values = np.left_shift(np.uint64(1), (bit % WORD).astype(np.uint64))
    np.bitwise_or.at(bits, (bit // WORD, position[provider]), values)
    return index, bits


def from_providers(providers):
    """The arguments of ``Columns.from_arrays`` for ``Provider`` values
    (a loop per provider: for tests and small clouds)."""
    row_of = {}
    for row, provider in enumerate(providers):
        if provider.uuid in row_of:
            raise ValueError('Provider %s is listed twice.' % provider.uuid)
        row_of[provider.uuid] = row
    parents = []
    for provider in providers:
        if provider.parent_uuid is None:
            parents.append(-1)
        elif provider.parent_uuid not in row_of:
            raise ValueError('Provider %s has parent %s, which is not among '
                             'the providers.' % (provider.uuid,
                                                 provider.parent_uuid))
        else:
            parents.append(row_of[provider.parent_uuid])
    classes = {}
    records = []
    for row, provider in enumerate(providers):
        for name, inv in provider.inventories.items():
            column = classes.setdefault(name, len(classes))
            records.append((row, column, inv.total, inv.reserved,
                            inv.min_unit, -1 if inv.max_unit is None
                            else inv.max_unit, inv.step_size,
                            inv.allocation_ratio, provider.used.get(name, 0)))
    fields = list(zip(*records)) or [()] * 9
    inventories = InventoryArrays(tuple(classes), *(
        np.asarray(values, dtype=np.float64 if number == 7 else np.int64)
        for number, values in enumerate(fields)))
    return dict(uuids=[provider.uuid for provider in providers],
                parents=parents, inventories=inventories,
                traits=_memberships(providers, 'traits'),
                aggregates=_memberships(providers, 'aggregates'))


def _memberships(providers, attribute):
    index = {}
    pairs = []
    for row, provider in enumerate(providers):
        for name in getattr(provider, attribute):
            pairs.append((row, index.setdefault(name, len(index))))
    rows, bits = zip(*pairs) if pairs else ((), ())
    return Memberships(tuple(index), np.asarray(rows, dtype=np.int64),
                       np.asarray(bits, dtype=np.int64))
