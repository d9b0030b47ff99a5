"""Answers a HostTable keeps across its in-place writes and brings up to
date from the rows written since, instead of reading a whole column
again (at a million hosts a column is 8 MB that is not in the CPU's
caches): the capacity filters' masks and the few rows of a mostly-zero
column.

:class:`Kept` is a mixin of
:class:`scheduler.host_cache.host_table.HostTable`; each answer is kept
with the table's ``writes`` count it was found at, and
``rows_written_since`` says which rows to look at again (as
``HostTable.constant`` does)::

    fits = table.at_least('room_memory_mb', 2048)
    busy = table.nonzero_rows(table.io_workload)   # None: not few
"""

import numpy as np

# How many masks of at_least a table keeps (a flavor's sizes make three;
# each is a byte a row).
AT_LEAST = 16
# nonzero_rows answers for a column with at most one row in this many
# not zero.
SPARSE = 64
# How many columns' nonzero rows a table keeps.
NONZERO = 16


class Kept:
    """See the module docstring; the table sets ``_at_least`` and
    ``_nonzero`` to empty dicts."""

    def at_least(self, name, amount):
        """Read-only mask of the rows whose derived column ``name`` is at
        least ``amount`` (``self.derived[name] >= amount``).

        A cloud has few flavors, so the capacity filters ask for the same
        few amounts again and again: the mask is kept, and a later call
        compares the rows written since instead of the whole column (a
        byte a row instead of eight), in the mask itself.

        The mask is a filter's to read during one request: a write of
        the table changes the rows it wrote, as it changes the table's
        columns (a reader meanwhile may see a row before or after).
        """
        column = self.derived[name]
        key = (name, amount)
        writes = self.writes
        kept = self._at_least
        entry = kept.get(key)
        if entry is not None and entry[0] is column:
            _column, mask, view, proof = entry
            rows = self.rows_written_since(proof)
            if rows is not None:
                if len(rows):
                    # Into the mask the view reads (the view stays
                    # read-only: no flag is switched back and forth
                    # under another reader).
                    mask[rows] = column[rows] >= amount
                    kept[key] = (column, mask, view, writes)
                return view
        mask = column >= amount
        view = mask.view()
        view.flags.writeable = False
        if key not in kept and len(kept) >= AT_LEAST:
            # The least recently found first (a new dict, for the readers
            # iterating over the old one: none does).
            kept = self._at_least = dict(list(kept.items())[1:])
        kept[key] = (column, mask, view, writes)
        return view

    def nonzero_rows(self, column):
        """The rows (ascending, read-only) where ``column`` (one of this
        table's columns, written in place only by ``update_in_place``)
        is not 0, or None when more than one row in :data:`SPARSE` is:
        the I/O operations or instances of a cloud whose hosts are mostly
        idle, which a weigher then need not read row by row.

        Kept with a count of rows that were not 0 when the column is
        not sparse (at least that many are not: each row written since
        may have become 0), so that it is read again only once enough
        rows were written to make it so.
        """
        limit = len(column) // SPARSE
        key = id(column)
        writes = self.writes
        entry = self._nonzero.get(key)
        if entry is not None and entry[0] is column:
            _column, found, count, proof = entry
            written = self.rows_written_since(proof)
            if written is not None:
                if found is None:
                    count -= len(written)
                    if count > limit:
                        self._nonzero[key] = (column, None, count, writes)
                        return None
                elif not len(written):
                    return found
                else:
                    return self._kept_nonzero(
                        column, limit, writes,
                        _rewritten_rows(found, column, written))
        return self._kept_nonzero(column, limit, writes,
                                  np.flatnonzero(column))

    def _kept_nonzero(self, column, limit, writes, found):
        """``found`` (the rows of ``column`` not 0 at ``writes``) kept,
        and returned if they are few."""
        count = len(found)
        if count > limit:
            found = None
        else:
            found.flags.writeable = False
        kept = self._nonzero
        if id(column) not in kept and len(kept) >= NONZERO:
            # Columns built and dropped: start again (a new dict, for the
            # readers holding the old one).
            kept = self._nonzero = {}
        kept[id(column)] = (column, found, count, writes)
        return found


# _rewritten_rows looks a write of this many rows or fewer up row by row.
_FEW_WRITTEN = 16


def _rewritten_rows(found, column, written):
    """``found`` (ascending rows of ``column`` that were not 0) once the
    rows ``written`` (any order, repeats) were written: a new array."""
    if len(written) > _FEW_WRITTEN:
        written = np.unique(written)
        return np.union1d(np.setdiff1d(found, written, assume_unique=True),
                          written[column[written] != 0])
    # A claim or two: a few searches, no set operations over ``found``.
    rows = sorted(set(written.tolist()))
    places = np.searchsorted(found, rows).tolist()
    size = len(found)
    gone = [place for place, row in zip(places, rows)
            if place < size and found.item(place) == row]
    kept = np.delete(found, gone)
    added = [row for row in rows if column.item(row) != 0]
    if added:
        kept = np.insert(kept, np.searchsorted(kept, added), added)
    return kept
