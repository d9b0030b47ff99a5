"""Some trees of provider columns, as the passes of the candidates read them.

The columns store rows slot by slot (see
:mod:`scheduler.resources.provider_columns`). A view is a set of trees;
its *positions* are those trees' rows, slot by slot as well: a *segment*
per slot, ``(start, stop, trees)`` where ``trees`` says which of the
view's trees the segment's positions belong to (None: every tree, in
order). So:

* the roots are positions ``0 .. trees - 1``, tree ``t`` at ``t``;
* "some provider of the tree" (``any_tree``) is one pass per segment,
  whatever the number of trees (``reduceat`` would make a call per tree);
* a run of slots ``first .. stop - 1`` is one contiguous *span* of
  positions: a class only the roots hold is read from the roots' span
  alone.

The per-span helpers (``has_all``, ``fits``, ...) take the positions as a
slice from :meth:`View.span` and answer over those positions only::

    view = tree_view.View.whole(columns)
    span = view.span(0, 1)                      # the roots
    ok = view.any_tree(view.fits(column, 2, span), 0, 1)
"""

import numpy as np

from scheduler.resources import provider_columns


class View:
    """The positions of some trees (see the module docstring)."""

    def __init__(self, columns, rows, trees, segments):
        self.columns = columns
        # Position -> table row: a slice (the whole table) or an array.
        self.rows = rows
        self.trees = trees
        self.segments = segments
        self.width = len(segments)
        self.size = segments[-1][1] if segments else 0
        self._root_positions = None
        self._sizes = None

    @classmethod
    def whole(cls, columns):
        starts = columns.slot_starts
        segments = [(int(starts[slot]), int(starts[slot + 1]), trees)
                    for slot, trees in enumerate(columns.slot_trees)]
        return cls(columns, slice(0, len(columns.uuids)),
                   len(columns.root_rows), segments)

    @classmethod
    def some(cls, columns, kept):
        """The view of trees ``kept`` (ascending tree numbers)."""
        rows = []
        segments = []
        start = 0
        for slot, trees in enumerate(columns.slot_trees):
            first = int(columns.slot_starts[slot])
            if trees is None:
                part, local = first + kept, None
            else:
                rank = np.searchsorted(trees, kept)
                has = trees[np.minimum(rank, len(trees) - 1)] == kept
                part = first + rank[has]
                local = None if has.all() else np.flatnonzero(has)
            if not len(part):
                break
            rows.append(part)
            segments.append((start, start + len(part), local))
            start += len(part)
        rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        return cls(columns, rows, len(kept), segments)

    @classmethod
    def tree(cls, columns, tree):
        rows = columns.tree_rows(tree)
        return cls(columns, rows, 1,
                   [(slot, slot + 1, None) for slot in range(len(rows))])

    # Positions.

    def span(self, first=0, stop=None):
        """The positions of slots ``first .. stop - 1``, as a slice."""
        stop = self.width if stop is None else min(stop, self.width)
        if first >= stop:
            return slice(0, 0)
        return slice(self.segments[first][0], self.segments[stop - 1][1])

    def table_row(self, position):
        if isinstance(self.rows, slice):
            return self.rows.start + position
        return int(self.rows[position])

    def take(self, values, span):
        """``values`` (one per table row) at the positions of ``span``."""
        if isinstance(self.rows, slice):
            base = self.rows.start
            return values[base + span.start:base + span.stop]
        return values[self.rows[span]]

    @property
    def root_positions(self):
        """The position of each position's root (its tree number)."""
        if self._root_positions is None:
            parts = [np.arange(stop - start) if trees is None else trees
                     for start, stop, trees in self.segments]
            self._root_positions = (np.concatenate(parts) if parts
                                    else np.zeros(0, np.int64))
        return self._root_positions

    @property
    def sizes(self):
        """The number of providers of each tree."""
        if self._sizes is None:
            sizes = np.zeros(self.trees, dtype=np.int64)
            for start, stop, trees in self.segments:
                if trees is None:
                    sizes += 1
                else:
                    sizes[trees] += 1
            self._sizes = sizes
        return self._sizes

    def tree_positions(self, tree):
        """The positions of tree ``tree``, slot by slot."""
        positions = []
        for start, stop, trees in self.segments:
            if trees is None:
                positions.append(start + tree)
                continue
            rank = int(np.searchsorted(trees, tree))
            if rank < len(trees) and trees[rank] == tree:
                positions.append(start + rank)
        return positions

    # Per tree, over the span of slots first .. stop - 1 (``values`` hold
    # that span's positions).

    def _reduce(self, values, op, first, stop, dtype):
        result = np.zeros(self.trees, dtype=dtype)
        stop = self.width if stop is None else min(stop, self.width)
        if first >= stop:
            return result
        base = self.segments[first][0]
        for start, end, trees in self.segments[first:stop]:
            part = values[start - base:end - base]
            if trees is None:
                op(result, part, out=result)
            else:
                result[trees] = op(result[trees], part)
        return result

    def any_tree(self, mask, first=0, stop=None):
        return self._reduce(mask, np.logical_or, first, stop, bool)

    def count_tree(self, mask, first=0, stop=None):
        return self._reduce(mask, np.add, first, stop, np.int64)

    def or_tree(self, bits, first=0, stop=None):
        return self._reduce(bits, np.bitwise_or, first, stop, np.uint64)

    # Per position of a span.

    def has_all(self, names, span):
        """Positions with every trait of ``names`` (None: no constraint)."""
        columns = self.columns
        words, unknown = provider_columns.masks(columns.traits, names)
        if unknown:
            return np.zeros(span.stop - span.start, dtype=bool)
        result = None
        for word, mask in words.items():
            bits = self.take(columns.trait_bits[word], span)
            result = both(result, (bits & mask) == mask)
        return result

    def has_none(self, names, span):
        columns = self.columns
        words, _ = provider_columns.masks(columns.traits, names)
        result = None
        for word, mask in words.items():
            bits = self.take(columns.trait_bits[word], span)
            result = both(result, (bits & mask) == 0)
        return result

    def in_any(self, uuids, span):
        """Positions in at least one aggregate of ``uuids``."""
        columns = self.columns
        words, _ = provider_columns.masks(columns.aggregates, uuids)
        result = np.zeros(span.stop - span.start, dtype=bool)
        for word, mask in words.items():
            bits = self.take(columns.aggregate_bits[word], span)
            result |= (bits & mask) != 0
        return result

    def member_of(self, sets, span):
        result = None
        for uuids in sets:
            result = both(result, self.in_any(uuids, span))
        return result

    def _patched(self, column, span):
        """``(offsets, limits)``: the rows of class ``column`` whose limit
        the columns' patch changes, as offsets into ``span``, or None."""
        patch = self.columns.patches.get(column)
        if patch is None:
            return None
        if isinstance(self.rows, slice):
            positions = patch.rows - self.rows.start
            found = np.ones(len(positions), dtype=bool)
        else:
            # A view's rows ascend: slot by slot, tree order within.
            positions = np.searchsorted(self.rows, patch.rows)
            found = positions < len(self.rows)
            found[found] = self.rows[positions[found]] == patch.rows[found]
        offsets = positions - span.start
        found &= (offsets >= 0) & (offsets < span.stop - span.start)
        if not found.any():
            return None
        return offsets[found], patch.limits[found]

    def limit(self, column, span):
        values = self.take(self.columns.base_limit[column], span)
        patched = self._patched(column, span)
        if patched is None:
            return values
        values = values.copy()
        values[patched[0]] = patched[1]
        return values

    def fits(self, column, amount, span):
        """Positions where one group can take ``amount`` of the class
        alone."""
        if column is None:
            return np.zeros(span.stop - span.start, dtype=bool)
        columns = self.columns
        result = self.take(columns.base_limit[column], span) >= amount
        patched = self._patched(column, span)
        if patched is not None:
            result[patched[0]] = patched[1] >= amount
        if columns.min_unit[column] is not None:
            result &= self.take(columns.min_unit[column], span) <= amount
        if columns.step_size[column] is not None:
            result &= amount % self.take(columns.step_size[column], span) == 0
        return result


def both(left, right):
    """``left & right``, where None stands for "no constraint"."""
    if left is None:
        return right
    if right is None:
        return left
    return left & right
