"""Allocation candidates over provider columns, as Placement computes them.

``ProviderTable(providers).acceptable_roots(request)`` answers, for every
root provider (compute node) at once, "would Placement's ``GET
/allocation_candidates`` return at least one candidate rooted here?";
``allocation_for(request, root_uuid)`` gives one such candidate, ``{provider
uuid: {class: amount}}``, what a claim would write. Placement's rules, as
its code applies them (openstack-placement 16, nested-aware microversions):

* capacity: ``used + amount <= (total - reserved) * allocation_ratio``, and
  ``min_unit <= amount <= max_unit``, ``amount % step_size == 0``, checked
  per group; where several groups land on one provider and class, their sum
  must still fit the capacity and ``max_unit`` (not min_unit or step);
* a suffixed group takes all its classes from one provider, which itself
  has the required traits, none of the forbidden ones, is itself in the
  ``member_of`` aggregates and in none of the forbidden ones;
* the unsuffixed group takes each class from one provider of the tree
  (classes may come from different providers); its required traits are
  carried by the providers it takes from *together*, none of them may
  have a forbidden trait; ``member_of`` holds when the provider *or its
  root* is in the aggregates (an aggregate on the root spans the tree), and
  neither may be in a forbidden aggregate;
* ``group_policy='isolate'``: the suffixed groups on distinct providers
  (the unsuffixed group may share any of them);
* ``root_required`` / ``root_forbidden``: traits of the root itself.

Where Placement refuses a request outright (a group without resources but
with traits, two granular groups without a group_policy), Gantt answers
rather than refuses: a group without resources needs one provider with its
traits and aggregates; no policy means ``'none'``. Sharing providers
(``MISC_SHARES_VIA_AGGREGATE``) are not modelled.

How: every constraint is a boolean column over providers; "some provider
of the tree" is a ``reduceat`` over the tree's contiguous rows. That
settles a tree when its groups cannot overfill a provider together, which
is the usual case; the rest go to the exact search of
:mod:`scheduler.resources.tree_search`::

    table = candidates.ProviderTable(providers)
    ok = table.acceptable_roots(request)        # bool per table.root_uuids
    table.allocation_for(request, table.root_uuids[0])
"""

import itertools

import numpy as np

from scheduler.resources import provider_columns
from scheduler.resources import request as request_mod
from scheduler.resources import tree_search

# Hall's condition is checked over every subset of the isolated groups up
# to this many groups; beyond, the undecided trees go to the search.
HALL_MAX_GROUPS = 4
# With a candidate mask keeping fewer than one root in this many, the
# passes read only the kept trees' rows (a gather); otherwise they read
# every row and the mask is applied to the answer.
SUBSET_SHARE = 3


class ProviderTable:
    """Providers as columns, asked for allocation candidates."""

    def __init__(self, providers=None, columns=None):
        if columns is None:
            columns = provider_columns.Columns(providers or ())
        self.columns = columns

    @classmethod
    def from_arrays(cls, *args, **kwargs):
        """A table built in bulk: the arguments of
        :meth:`provider_columns.Columns.from_arrays`."""
        return cls(columns=provider_columns.Columns.from_arrays(
            *args, **kwargs))

    def with_used(self, changes):
        """A new table where ``{uuid: {class: used}}`` replace those used
        amounts (see :meth:`provider_columns.Columns.with_used`)."""
        return ProviderTable(columns=self.columns.with_used(changes))

    def with_allocation(self, allocation, sign=1):
        """A new table with a claim's ``{uuid: {class: amount}}`` added to
        the used amounts (``sign=-1``: a release)."""
        return ProviderTable(columns=self.columns.with_allocation(
            allocation, sign))

    @property
    def root_uuids(self):
        return self.columns.root_uuids

    def acceptable_roots(self, request, candidate_mask=None):
        """Boolean array over :attr:`root_uuids`: Placement would return at
        least one allocation candidate rooted at that root.

        ``candidate_mask`` (boolean over the roots): the roots still in
        play; the others are answered False without being looked at.
        """
        columns = self.columns
        trees = len(columns.root_rows)
        if candidate_mask is None:
            return self._decide(_View.whole(columns), request)
        candidate_mask = np.asarray(candidate_mask, dtype=bool)
        if candidate_mask.shape != (trees,):
            raise ValueError('candidate_mask has shape %s; the table has %d '
                             'roots.' % (candidate_mask.shape, trees))
        kept = np.flatnonzero(candidate_mask)
        if len(kept) * SUBSET_SHARE > trees:
            return (self._decide(_View.whole(columns), request)
                    & candidate_mask)
        accept = np.zeros(trees, dtype=bool)
        accept[kept] = self._decide(_View.some(columns, kept), request)
        return accept

    @staticmethod
    def _decide(view, request):
        plan = _Plan(view, request)
        accept, undecided = plan.decide()
        for tree in np.flatnonzero(undecided):
            accept[tree] = plan.place(tree) is not None
        return accept

    def accepted_root_uuids(self, request):
        uuids = self.root_uuids
        return [uuids[tree]
                for tree in np.flatnonzero(self.acceptable_roots(request))]

    def allocation_for(self, request, root_uuid):
        """One candidate rooted at ``root_uuid``: ``{provider uuid: {class:
        amount}}`` with the amounts of groups sharing a provider summed, or
        None when there is none."""
        row = self.columns.row_of.get(root_uuid)
        if row is None or self.columns.root_of[row] != row:
            raise ValueError('%s is not a root provider of this table.'
                             % root_uuid)
        tree = int(np.searchsorted(self.columns.tree_starts, row))
        view = _View.tree(self.columns, tree)
        plan = _Plan(view, request)
        if not plan.root_ok[0]:
            return None
        chosen = plan.place(0)
        if chosen is None:
            return None
        allocation = {}
        for unit, local in chosen:
            uuid = self.columns.uuids[view.start + local]
            per_class = allocation.setdefault(uuid, {})
            for name, amount in unit.named_amounts:
                per_class[name] = per_class.get(name, 0) + amount
        return {uuid: amounts for uuid, amounts in allocation.items()
                if amounts} or _resourceless(chosen, view, self.columns)


def _resourceless(chosen, view, columns):
    """A request of groups without resources allocates nothing; its
    candidate is still the providers it picked, with nothing from each."""
    return {columns.uuids[view.start + local]: {} for _, local in chosen}


class _View:
    """Some trees of the columns, as the passes read them: ``rows`` (a
    slice, or the rows of the trees kept, ascending) and, over the view's
    own positions, each tree's ``starts`` and ``sizes``.

    "Some provider of the tree" is computed slot by slot: slot ``j`` is
    the ``j``-th provider of every tree that has one, so a pass costs a
    few array operations whatever the number of trees (``reduceat`` would
    cost a call per tree).
    """

    def __init__(self, columns, rows, starts, sizes, slots=None):
        self.columns = columns
        self.rows = rows
        self.size = int(sizes.sum())
        self.starts = starts
        self.sizes = sizes
        self.trees = len(starts)
        self.flat = self.trees == self.size
        self.slots = slots if slots is not None else _slots(starts, sizes)
        self._root_local = None

    @classmethod
    def whole(cls, columns):
        cached = getattr(columns, '_whole_slots', None)
        sizes = columns.tree_ends - columns.tree_starts
        if cached is None:
            cached = _slots(columns.tree_starts, sizes)
            columns._whole_slots = cached
        return cls(columns, slice(0, len(columns.uuids)), columns.tree_starts,
                   sizes, cached)

    @classmethod
    def some(cls, columns, trees):
        """The view of the trees numbered ``trees`` (ascending)."""
        first = columns.tree_starts[trees]
        sizes = columns.tree_ends[trees] - first
        starts = np.cumsum(sizes) - sizes
        rows = np.repeat(first - starts, sizes) + np.arange(int(sizes.sum()))
        return cls(columns, rows, starts, sizes)

    @classmethod
    def tree(cls, columns, tree):
        start = int(columns.tree_starts[tree])
        stop = int(columns.tree_ends[tree])
        return cls(columns, slice(start, stop), np.zeros(1, np.int64),
                   np.array([stop - start]))

    @property
    def start(self):
        """The first row (a view of one tree or the whole table)."""
        return self.rows.start

    def table_row(self, local):
        """The table row of the view's position ``local``."""
        if isinstance(self.rows, slice):
            return self.rows.start + local
        return int(self.rows[local])

    @property
    def root_local(self):
        """The position of each position's root."""
        if self._root_local is None:
            self._root_local = np.repeat(self.starts, self.sizes)
        return self._root_local

    def _reduce(self, values, op, dtype=None):
        result = None
        for rows, trees in self.slots:
            part = values[rows]
            if result is None:
                result = np.array(part, dtype=dtype)
            elif trees is None:
                op(result, part, out=result)
            else:
                result[trees] = op(result[trees], part)
        return result

    def any_tree(self, mask):
        if self.flat:
            return mask
        return self._reduce(mask, np.logical_or)

    def count_tree(self, mask):
        if self.flat:
            return mask.astype(np.int64)
        return self._reduce(mask, np.add, np.int64)

    def or_tree(self, bits):
        if self.flat:
            return bits
        return self._reduce(bits, np.bitwise_or)

    def trait_words(self, word):
        return self.columns.trait_bits[word, self.rows]

    def has_all(self, names):
        """Rows with every trait of ``names`` (None: no constraint)."""
        words, unknown = provider_columns.masks(self.columns.traits, names)
        if unknown:
            return np.zeros(self.size, dtype=bool)
        result = None
        for word, mask in words.items():
            result = _and(result, (self.trait_words(word) & mask) == mask)
        return result

    def has_none(self, names):
        words, _ = provider_columns.masks(self.columns.traits, names)
        result = None
        for word, mask in words.items():
            result = _and(result, (self.trait_words(word) & mask) == 0)
        return result

    def in_any(self, uuids):
        """Rows in at least one aggregate of ``uuids``."""
        words, _ = provider_columns.masks(self.columns.aggregates, uuids)
        bits = self.columns.aggregate_bits
        result = np.zeros(self.size, dtype=bool)
        for word, mask in words.items():
            result |= (bits[word, self.rows] & mask) != 0
        return result

    def member_of(self, sets):
        result = None
        for uuids in sets:
            result = _and(result, self.in_any(uuids))
        return result

    def limit(self, column):
        return self.columns.limit[column][self.rows]

    def fits(self, column, amount):
        """Rows where one group can take ``amount`` of the class alone."""
        if column is None:
            return np.zeros(self.size, dtype=bool)
        columns = self.columns
        result = self.limit(column) >= amount
        if columns.min_unit[column] is not None:
            result &= columns.min_unit[column][self.rows] <= amount
        if columns.step_size[column] is not None:
            result &= amount % columns.step_size[column][self.rows] == 0
        return result


def _slots(starts, sizes):
    """``[(positions, trees), ...]``: slot ``j``'s positions, and the
    trees they belong to (None: every tree, in order)."""
    if not len(starts):
        return [(slice(0, 0), None)]
    width = int(sizes.max())
    if (sizes == width).all():
        total = width * len(starts)
        return [(slice(j, total, width), None) for j in range(width)]
    slots = [(starts, None)]
    for j in range(1, width):
        trees = np.flatnonzero(sizes > j)
        slots.append((starts[trees] + j, trees))
    return slots


def _and(left, right):
    if left is None:
        return right
    if right is None:
        return left
    return left & right


class _Plan:
    """A request turned into units over a view's rows."""

    def __init__(self, view, request):
        self.view = view
        self.request = request
        _check(request)
        self.isolate = request.group_policy == 'isolate'
        self.units = []
        self.needed = ()
        self.collective_hosts = None
        for group in request.groups:
            if group.suffix == request_mod.UNSUFFIXED:
                self._add_unsuffixed(group)
            else:
                self._add_suffixed(group)
        self.root_ok = self._root_ok()

    def _amounts(self, group):
        classes = self.view.columns.classes
        return tuple((name, classes.get(name), amount)
                     for name, amount in sorted(group.resources.items())
                     if amount)

    def _add_suffixed(self, group):
        view = self.view
        hosts = _and(view.has_all(group.required_traits),
                     view.has_none(group.forbidden_traits))
        hosts = _and(hosts, view.member_of(group.member_of))
        if group.forbidden_aggregates:
            hosts = _and(hosts, ~view.in_any(group.forbidden_aggregates))
        amounts = self._amounts(group)
        for _, column, amount in amounts:
            hosts = _and(hosts, view.fits(column, amount))
        if hosts is None:
            hosts = np.ones(view.size, dtype=bool)
        self.units.append(_unit(group.suffix, amounts, hosts,
                                isolated=self.isolate))

    def _add_unsuffixed(self, group):
        if group.is_empty():
            return
        view = self.view
        base = view.has_none(group.forbidden_traits)
        if group.member_of:
            own = view.member_of(group.member_of)
            base = _and(base, own | own[view.root_local])
        if group.forbidden_aggregates:
            own = view.in_any(group.forbidden_aggregates)
            base = _and(base, ~(own | own[view.root_local]))
        amounts = self._amounts(group)
        if not amounts:
            # No resources: one provider with the traits and aggregates.
            hosts = _and(base, view.has_all(group.required_traits))
            if hosts is None:
                hosts = np.ones(view.size, dtype=bool)
            self.units.append(_unit('', (), hosts))
            return
        self.needed = tuple(sorted(group.required_traits))
        for amount in amounts:
            hosts = _and(base, view.fits(amount[1], amount[2]))
            self.units.append(_unit('', (amount,), hosts, collective=True))
            self.collective_hosts = (hosts if self.collective_hosts is None
                                     else self.collective_hosts | hosts)

    def _root_ok(self):
        view = self.view
        ok = _and(view.has_all(self.request.root_required),
                  view.has_none(self.request.root_forbidden))
        if ok is None:
            return np.ones(view.trees, dtype=bool)
        return ok[view.starts]

    def decide(self):
        """``(accept, undecided)`` per tree of the view: the trees the
        column passes settle as acceptable, and those left to the search
        (every other tree is refused)."""
        view = self.view
        ok = self.root_ok.copy()
        for unit in self.units:
            ok &= view.any_tree(unit.hosts)
        sure = ok.copy()
        if self.needed:
            carried, alone = self._traits_carried()
            ok &= carried
            sure &= alone
        hall_ok, hall_sure = self._hall()
        ok &= hall_ok
        sure &= hall_sure & ok & ~self._may_overfill()
        undecided = ok & ~sure & (view.sizes > 1)
        return sure, undecided

    def _traits_carried(self):
        """Per tree: the unsuffixed group's providers carry its required
        traits together (necessary), and one of them carries them all
        (sufficient)."""
        view = self.view
        words, unknown = provider_columns.masks(view.columns.traits,
                                                self.needed)
        if unknown:
            none = np.zeros(view.trees, dtype=bool)
            return none, none
        hosts = self.collective_hosts
        carried = np.ones(view.trees, dtype=bool)
        for word, mask in words.items():
            bits = view.or_tree(
                np.where(hosts, view.trait_words(word), np.uint64(0)))
            carried &= (bits & mask) == mask
        alone = view.any_tree(hosts & view.has_all(self.needed))
        return carried, alone

    def _hall(self):
        """Per tree: the isolated groups can have distinct providers
        (Hall's condition over every subset), and whether that answer is
        exact (it is up to HALL_MAX_GROUPS groups)."""
        view = self.view
        isolated = [unit for unit in self.units if unit.isolated]
        ones = np.ones(view.trees, dtype=bool)
        if len(isolated) < 2:
            return ones, ones
        ok = ones.copy()
        exact = len(isolated) <= HALL_MAX_GROUPS
        for size in range(2, len(isolated) + 1 if exact else 3):
            for subset in itertools.combinations(isolated, size):
                union = subset[0].hosts
                for unit in subset[1:]:
                    union = union | unit.hosts
                ok &= view.count_tree(union) >= size
        if not exact:
            return ok, np.zeros(view.trees, dtype=bool)
        return ok, ones

    def _may_overfill(self):
        """Per tree: some provider could be given, by the groups that can
        each take it, more of a class than it has in all."""
        view = self.view
        by_column = {}
        for unit in self.units:
            for _, column, amount in unit.full_amounts:
                if column is not None:
                    by_column.setdefault(column, []).append((unit, amount))
        over = np.zeros(view.size, dtype=bool)
        for column, takers in by_column.items():
            if len(takers) < 2:
                continue
            total = np.zeros(view.size, dtype=np.int64)
            for unit, amount in takers:
                total += unit.hosts * np.int64(amount)
            # A row no taker can take adds 0 (and may have no inventory:
            # limit -1).
            limit = view.limit(column)
            over |= total > np.maximum(limit, 0)
        return view.any_tree(over)

    def place(self, tree):
        """The exact search over one tree of the view."""
        view = self.view
        start = int(view.starts[tree])
        stop = start + int(view.sizes[tree])
        units = []
        for unit in self.units:
            hosts = [int(row) for row in
                     np.flatnonzero(unit.hosts[start:stop]) + start]
            if not hosts:
                return None
            units.append(tree_search.Unit(
                unit.suffix, unit.amounts, hosts, unit.isolated,
                unit.collective, unit.named_amounts))
        limit = view.columns.limit
        table_row = view.table_row
        words, unknown = provider_columns.masks(view.columns.traits,
                                                self.needed)
        if unknown:
            return None
        needed = sum(int(mask) << (64 * word) for word, mask in words.items())

        def traits_of(row):
            return sum(int(view.columns.trait_bits[word, table_row(row)])
                       << (64 * word) for word in words) & needed

        chosen = tree_search.place(
            units, lambda row, column: int(limit[column][table_row(row)]),
            traits_of, needed)
        if chosen is None:
            return None
        return [(unit, row) for unit, row in chosen]


class _Unit:
    """A unit of the column passes (see :mod:`tree_search`)."""

    def __init__(self, suffix, full_amounts, hosts, isolated, collective):
        self.suffix = suffix
        self.full_amounts = full_amounts
        self.amounts = tuple((column, amount)
                             for _, column, amount in full_amounts)
        self.named_amounts = tuple((name, amount)
                                   for name, _, amount in full_amounts)
        self.hosts = hosts
        self.isolated = isolated
        self.collective = collective


def _unit(suffix, amounts, hosts, isolated=False, collective=False):
    return _Unit(suffix, amounts, hosts, isolated, collective)


def _check(request):
    if request.group_policy not in (None,) + request_mod.GROUP_POLICIES:
        raise ValueError('group_policy must be one of %s, not %r.'
                         % (', '.join(request_mod.GROUP_POLICIES),
                            request.group_policy))
    suffixes = [group.suffix for group in request.groups]
    if len(suffixes) != len(set(suffixes)):
        raise ValueError('Request groups repeat a suffix: %s.'
                         % sorted(suffixes))
    for group in request.groups:
        for name, amount in group.resources.items():
            if not isinstance(amount, (int, np.integer)) or amount < 0:
                raise ValueError('Group %r asks for %r of %s: amounts are '
                                 'whole numbers of at least 0.'
                                 % (group.suffix, amount, name))
