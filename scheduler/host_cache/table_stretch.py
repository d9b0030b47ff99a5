"""A stretch of a HostTable's rows, seen as a host table of its own.

A table built by zone (:meth:`HostTable.build_by_zone
<scheduler.host_cache.host_table.HostTable.build_by_zone>`) holds each
zone's rows together, so the hosts left to a request for one zone lie in
one stretch of it: a quarter of a million rows of a million in four
zones. Once the filters confined a request's hosts to such a stretch,
the filters after and the weighers read a :class:`Stretch` of it rather
than the table, and every pass over a column reads that stretch only.

Row ``r`` of a stretch is row ``lo + r`` of its table. Its columns are
views of the table's rows ``lo`` to ``hi - 1`` (no copy), and it answers
what a table answers to the filters and weighers (the interface
:mod:`scheduler.filters` and :mod:`scheduler.weights` document: columns,
states, per-state columns and groupings, capacity masks, liveness, zones,
host masks, multipliers, constants, sparse rows, instance counts) by
asking its table, which keeps its answers across requests, and cutting
them to the stretch::

    stretch = Stretch(table, lo, hi)
    passed = a_filter.filter_all(stretch, mask[lo:hi], spec)
    rows = np.flatnonzero(passed) + lo          # the table's rows

A stretch lives for one request's filtering and weighing. It reads the
table as the request would (a claim the table takes in place meanwhile
shows in both). A filter or weigher that is not Gantt's own and has
batch paths of its own runs on one only if it says it may
(``reads_stretches = True``, see :func:`reads_stretches`).
"""

import collections.abc
import functools
import operator

import numpy as np

from scheduler.host_cache import table_columns
from scheduler.host_cache import table_kept


def reads_stretches(plugin, base, batch_methods):
    """Whether ``plugin`` (a filter or weigher) may be given a Stretch:
    what it says (``reads_stretches``), else whether each of its
    ``batch_methods`` (a tuple of names) is ``base``'s or one of Gantt's
    own (a class in ``base``'s package, whose batch paths read only what
    a Stretch offers, as ``tests/unit/scheduler/test_batch_paths.py``
    checks). One that is no ``base`` is asked host by host, which a
    Stretch serves."""
    said = getattr(plugin, 'reads_stretches', None)
    if said is not None:
        return bool(said)
    return _own_batch_paths(type(plugin), base, batch_methods)


@functools.lru_cache(maxsize=256)
def _own_batch_paths(cls, base, batch_methods):
    if not issubclass(cls, base):
        return True
    package = base.__module__
    for name in batch_methods:
        owner = next(klass for klass in cls.__mro__ if name in vars(klass))
        module = owner.__module__
        if module != package and not module.startswith(package + '.'):
            return False
    return True


class _States(collections.abc.Sequence):
    """``states[lo:hi]`` of a table, without copying the list: the
    table's own list read at an offset (so a state it takes in place
    meanwhile shows, as it would to a reader of the table)."""

    __slots__ = ('_states', '_lo', '_count')

    def __init__(self, states, lo, hi):
        self._states = states
        self._lo = lo
        self._count = hi - lo

    def __len__(self):
        return self._count

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._states[self._lo + row]
                    for row in range(*index.indices(self._count))]
        row = operator.index(index)
        if row < 0:
            row += self._count
        if not 0 <= row < self._count:
            raise IndexError('row %d of a stretch of %d rows'
                             % (operator.index(index), self._count))
        return self._states[self._lo + row]

    def __iter__(self):
        return map(self._states.__getitem__,
                   range(self._lo, self._lo + self._count))


class _Rows(collections.abc.Mapping):
    """A row index of the table (``rows_by_host``, ``row_by_id``...) in
    the stretch's row numbers: a name whose rows all lie outside it is
    not there."""

    __slots__ = ('_index', '_lo', '_hi', '_single')

    def __init__(self, index, lo, hi, single=False):
        self._index = index
        self._lo = lo
        self._hi = hi
        # row_by_id: one row per key, not a tuple.
        self._single = single

    def _inside(self, value):
        lo, hi = self._lo, self._hi
        if self._single:
            return value - lo if lo <= value < hi else None
        rows = tuple(row - lo for row in value if lo <= row < hi)
        return rows or None

    def __getitem__(self, key):
        found = self._inside(self._index[key])
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key, default=None):
        value = self._index.get(key)
        found = None if value is None else self._inside(value)
        return default if found is None else found

    def __contains__(self, key):
        return self.get(key) is not None

    def __iter__(self):
        return (key for key, value in self._index.items()
                if self._inside(value) is not None)

    def __len__(self):
        return sum(1 for _key in self)


class _Cut(collections.abc.Mapping):
    """A table's ``columns`` or ``derived`` as a stretch's: each column
    cut when first read."""

    __slots__ = ('_stretch', '_source')

    def __init__(self, stretch, source):
        self._stretch = stretch
        self._source = source

    def __getitem__(self, name):
        return self._stretch.cut(self._source[name])

    def __iter__(self):
        return iter(self._source)

    def __len__(self):
        return len(self._source)


class Stretch:
    """Rows ``lo`` to ``hi - 1`` of ``table`` (see the module
    docstring)."""

    def __init__(self, table, lo, hi):
        if not 0 <= lo <= hi <= len(table):
            raise ValueError('rows %d to %d are not a stretch of a table '
                             'of %d rows' % (lo, hi, len(table)))
        self.table = table
        self.lo = lo
        self.hi = hi
        # id(column of the table) -> (that column, its view); id(view) ->
        # (the view, the table's column): each column is cut once, so a
        # caller comparing columns by identity finds them equal, and an
        # answer the table keeps per column is asked of the right one.
        self._views = {}
        self._columns_of = {}
        self.states = _States(table.states, lo, hi)
        self.aggregates = table.aggregates
        self.az_sets = table.az_sets
        # Columns are cut when first read (a request reads a dozen of the
        # sixty).
        self.columns = _Cut(self, table.columns)
        self.derived = _Cut(self, table.derived)
        self.row_by_id = _Rows(table.row_by_id, lo, hi, single=True)
        self.rows_by_host = _Rows(table.rows_by_host, lo, hi)
        self.rows_by_nodename = _Rows(table.rows_by_nodename, lo, hi)
        self._rows_by_host_lower = None

    def __getattr__(self, name):
        # A column (base or derived) under its name, as on a table.
        table = self.__dict__.get('table')
        if table is not None:
            for source in (table.columns, table.derived):
                column = source.get(name)
                if column is not None:
                    view = self.cut(column)
                    setattr(self, name, view)
                    return view
        raise AttributeError('%s has no attribute %r'
                             % (type(self).__name__, name))

    @property
    def capacity(self):
        return {resource: self.cut(column)
                for resource, column in self.table.capacity.items()}

    @property
    def used(self):
        return {resource: self.cut(column)
                for resource, column in self.table.used.items()}

    def __len__(self):
        return self.hi - self.lo

    def __repr__(self):
        return '<Stretch rows %d-%d of %d>' % (self.lo, self.hi - 1,
                                               len(self.table))

    @property
    def writes(self):
        return self.table.writes

    @property
    def rows_by_host_lower(self):
        index = self._rows_by_host_lower
        if index is None:
            index = self._rows_by_host_lower = _Rows(
                self.table.rows_by_host_lower, self.lo, self.hi)
        return index

    def cut(self, column):
        """The view of ``column`` (one of the table's, a row per table
        row) over the stretch's rows."""
        found = self._views.get(id(column))
        if found is not None and found[0] is column:
            return found[1]
        view = column[self.lo:self.hi]
        self._views[id(column)] = (column, view)
        self._columns_of[id(view)] = (view, column)
        return view

    def _table_column(self, column):
        """The table's column that ``column`` is this stretch's view of,
        or None."""
        found = self._columns_of.get(id(column))
        if found is not None and found[0] is column:
            return found[1]
        return None

    # -- what the table keeps, cut to the stretch ----------------------------

    def at_least(self, name, amount):
        return self.cut(self.table.at_least(name, amount))

    def service_up(self, down_time=None, now=None):
        return self.cut(self.table.service_up(down_time, now))

    def liveness_changes_at(self, down_time, now_us):
        return self.table.liveness_changes_at(down_time, now_us)

    def in_zone(self, zone):
        return self.cut(self.table.in_zone(zone))

    def zone_rows(self, zone):
        found = self.table.zone_rows(zone)
        if found is None:
            return None
        lo, hi = max(found[0], self.lo), min(found[1], self.hi)
        return (lo - self.lo, hi - self.lo) if lo < hi else None

    def aggregate_multipliers(self, key):
        column = self.table.aggregate_multipliers(key)
        return None if column is None else self.cut(column)

    def attribute_column(self, name):
        column = table_columns.ATTRIBUTE_COLUMNS.get(name)
        return None if column is None else getattr(self, column)

    def state_column(self, name, compute, dtype=np.float64):
        return self.cut(self.table.state_column(name, compute, dtype))

    def grouped(self, name, key):
        codes, keys = self.table.grouped(name, key)
        return self.cut(codes), keys

    def aggregate_groups(self):
        codes, groups = self.table.aggregate_groups()
        return self.cut(codes), groups

    def instance_counts(self, uuids):
        return self.table.instance_counts(uuids)[self.lo:self.hi]

    def instance_rows(self, uuids):
        lo, hi = self.lo, self.hi
        return {row - lo: count for row, count
                in self.table.instance_rows(uuids).items()
                if lo <= row < hi}

    def mask_of_rows(self, rows):
        mask = np.zeros(len(self), dtype=np.bool_)
        if len(rows):
            mask[np.asarray(rows, dtype=np.intp)] = True
        return mask

    def hosts_mask(self, hosts, ignore_case=True):
        return self.table.hosts_mask(hosts, ignore_case)[self.lo:self.hi]

    def nodes_mask(self, nodenames):
        return self.table.nodes_mask(nodenames)[self.lo:self.hi]

    def constant(self, column):
        """As :meth:`HostTable.constant
        <scheduler.host_cache.host_table.HostTable.constant>`, for a view
        of one of the table's columns: the value the table keeps when
        every row of the whole column holds it, else None (the stretch's
        rows alone may agree: a weigher asked for its constant weight
        then weighs them, and finds them flat, which adds the same
        nothing). A column that is no view of the table's is read
        here."""
        if not len(column):
            return None
        whole = self._table_column(column)
        if whole is not None:
            return self.table.constant(whole)
        first = column[0]
        return None if bool((column != first).any()) else first.item()

    def nonzero_rows(self, column):
        """As :meth:`HostTable.nonzero_rows
        <scheduler.host_cache.table_kept.Kept.nonzero_rows>`, in the
        stretch's rows: the rows the table keeps for the whole column,
        cut to the stretch. None when they are more than one row in
        ``table_kept.SPARSE`` of the stretch, or when the table's whole
        column is not sparse (a weigher then reads every row, which
        gives the same weights). A column that is no view of the table's
        is read here."""
        limit = len(column) // table_kept.SPARSE
        whole = self._table_column(column)
        if whole is None:
            found = np.flatnonzero(column)
        else:
            found = self.table.nonzero_rows(whole)
            if found is None:
                return None
            start, stop = np.searchsorted(found, (self.lo, self.hi))
            found = found[start:stop] - self.lo
        if len(found) > limit:
            return None
        found.flags.writeable = False
        return found
