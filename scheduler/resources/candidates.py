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

How: every constraint is a boolean column over providers, computed only
over the slots where the classes it concerns have inventories; "some
provider of the tree" is a pass per slot (:mod:`tree_view`). That
settles a tree when its groups cannot overfill a provider together, which
is the usual case; the rest go to the exact search of
:mod:`scheduler.resources.tree_search`. In the scheduler, the table is
built in bulk and follows its own claims between refreshes::

    table = candidates.ProviderTable.from_arrays(uuids, parents,
                                                 inventories, traits)
    ok = table.acceptable_roots(request)        # bool per table.root_uuids
    ok = table.acceptable_roots(request, candidate_mask=still_in_play)
    allocation = table.allocation_for(request, table.root_uuids[0])
    table = table.with_allocation(allocation)   # after the claim succeeded
"""

import itertools

import numpy as np

from scheduler.resources import provider_columns
from scheduler.resources import request as request_mod
from scheduler.resources import tree_search
from scheduler.resources import tree_view

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
            return self._decide(tree_view.View.whole(columns), request)
        candidate_mask = np.asarray(candidate_mask, dtype=bool)
        if candidate_mask.shape != (trees,):
            raise ValueError('candidate_mask has shape %s; the table has %d '
                             'roots.' % (candidate_mask.shape, trees))
        kept = np.flatnonzero(candidate_mask)
        if len(kept) * SUBSET_SHARE > trees:
            return (self._decide(tree_view.View.whole(columns), request)
                    & candidate_mask)
        accept = np.zeros(trees, dtype=bool)
        accept[kept] = self._decide(tree_view.View.some(columns, kept),
                                    request)
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
        tree = int(self.columns.tree_of[row])
        view = tree_view.View.tree(self.columns, tree)
        plan = _Plan(view, request)
        if not plan.root_ok[0]:
            return None
        chosen = plan.place(0)
        if chosen is None:
            return None
        allocation = {}
        for unit, local in chosen:
            uuid = self.columns.uuids[view.table_row(local)]
            per_class = allocation.setdefault(uuid, {})
            for name, amount in unit.named_amounts:
                per_class[name] = per_class.get(name, 0) + amount
        return {uuid: amounts for uuid, amounts in allocation.items()
                if amounts} or _resourceless(chosen, view, self.columns)


def _resourceless(chosen, view, columns):
    """A request of groups without resources allocates nothing; its
    candidate is still the providers it picked, with nothing from each."""
    return {columns.uuids[view.table_row(local)]: {}
            for _, local in chosen}


class _Plan:
    """A request turned into units over a view's positions.

    Each unit's ``hosts`` covers every position of the view, but is only
    computed (and only read) over its span: the slots where the classes it
    takes have inventories.
    """

    def __init__(self, view, request):
        self.view = view
        self.request = request
        _check(request)
        self.isolate = request.group_policy == 'isolate'
        self.units = []
        self.needed = ()
        self.collective = None
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

    def _slots(self, amounts):
        """The slots where every class of ``amounts`` has inventories."""
        first, stop = 0, self.view.width
        for _, column, _ in amounts:
            if column is None:
                return 0, 0
            low, high = self.view.columns.class_slots[column]
            first, stop = max(first, low), min(stop, high)
        return first, max(first, stop)

    def _spread(self, values, span):
        hosts = np.zeros(self.view.size, dtype=bool)
        hosts[span] = True if values is None else values
        return hosts

    def _add_suffixed(self, group):
        view = self.view
        amounts = self._amounts(group)
        slots = self._slots(amounts)
        span = view.span(*slots)
        hosts = tree_view.both(view.has_all(group.required_traits, span),
                               view.has_none(group.forbidden_traits, span))
        hosts = tree_view.both(hosts, view.member_of(group.member_of, span))
        if group.forbidden_aggregates:
            hosts = tree_view.both(
                hosts, ~view.in_any(group.forbidden_aggregates, span))
        for _, column, amount in amounts:
            hosts = tree_view.both(hosts, view.fits(column, amount, span))
        self.units.append(_Unit(group.suffix, amounts,
                                self._spread(hosts, span), slots,
                                isolated=self.isolate))

    def _base(self, group, span):
        """The unsuffixed group's own tests over ``span``: no forbidden
        trait, and the aggregates of the provider or of its root."""
        view = self.view
        base = view.has_none(group.forbidden_traits, span)
        if not (group.member_of or group.forbidden_aggregates):
            return base
        every = view.span()
        roots = view.root_positions[span]
        if group.member_of:
            own = view.member_of(group.member_of, every)
            base = tree_view.both(base, own[span] | own[roots])
        if group.forbidden_aggregates:
            own = view.in_any(group.forbidden_aggregates, every)
            base = tree_view.both(base, ~(own[span] | own[roots]))
        return base

    def _add_unsuffixed(self, group):
        if group.is_empty():
            return
        view = self.view
        amounts = self._amounts(group)
        if not amounts:
            # No resources: one provider with the traits and aggregates.
            span = view.span()
            hosts = tree_view.both(self._base(group, span),
                                   view.has_all(group.required_traits, span))
            self.units.append(_Unit('', (), self._spread(hosts, span),
                                    (0, view.width)))
            return
        self.needed = tuple(sorted(group.required_traits))
        each = [self._slots((amount,)) for amount in amounts]
        first = min(slots[0] for slots in each)
        stop = max(slots[1] for slots in each)
        whole = view.span(first, stop)
        base = self._base(group, whole)
        collective = np.zeros(whole.stop - whole.start, dtype=bool)
        for amount, slots in zip(amounts, each):
            span = view.span(*slots)
            local = slice(span.start - whole.start, span.stop - whole.start)
            hosts = view.fits(amount[1], amount[2], span)
            if base is not None:
                hosts &= base[local]
            collective[local] |= hosts
            self.units.append(_Unit('', (amount,), self._spread(hosts, span),
                                    slots, collective=True))
        self.collective = (collective, (first, stop), whole)

    def _root_ok(self):
        view = self.view
        roots = view.span(0, 1)
        ok = tree_view.both(view.has_all(self.request.root_required, roots),
                            view.has_none(self.request.root_forbidden, roots))
        if ok is None:
            return np.ones(view.trees, dtype=bool)
        return ok

    def decide(self):
        """``(accept, undecided)`` per tree of the view: the trees the
        column passes settle as acceptable, and those left to the search
        (every other tree is refused)."""
        view = self.view
        ok = self.root_ok.copy()
        for unit in self.units:
            ok &= view.any_tree(unit.hosts[view.span(*unit.slots)],
                                *unit.slots)
        sure = ok.copy()
        if self.needed:
            carried, alone = self._traits_carried()
            ok &= carried
            sure &= alone
        hall_ok, hall_sure = self._hall()
        ok &= hall_ok
        sure &= hall_sure & ok & ~self._may_overfill()
        undecided = ok & ~sure
        if undecided.any():
            undecided &= view.sizes > 1
        return sure, undecided

    def _traits_carried(self):
        """Per tree: the unsuffixed group's providers carry its required
        traits together (necessary), and one of them carries them all
        (sufficient)."""
        view = self.view
        columns = view.columns
        words, unknown = provider_columns.masks(columns.traits, self.needed)
        if unknown:
            none = np.zeros(view.trees, dtype=bool)
            return none, none
        hosts, slots, span = self.collective
        carried = np.ones(view.trees, dtype=bool)
        for word, mask in words.items():
            bits = np.where(hosts, view.take(columns.trait_bits[word], span),
                            np.uint64(0))
            carried &= (view.or_tree(bits, *slots) & mask) == mask
        alone = view.any_tree(hosts & view.has_all(self.needed, span), *slots)
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
                first = min(unit.slots[0] for unit in subset)
                stop = max(unit.slots[1] for unit in subset)
                span = view.span(first, stop)
                union = subset[0].hosts[span]
                for unit in subset[1:]:
                    union = union | unit.hosts[span]
                ok &= view.count_tree(union, first, stop) >= size
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
        over = np.zeros(view.trees, dtype=bool)
        for column, takers in by_column.items():
            if len(takers) < 2:
                continue
            slots = view.columns.class_slots[column]
            span = view.span(*slots)
            seen = np.zeros(span.stop - span.start, dtype=bool)
            shared = seen.copy()
            for unit, _ in takers:
                shared |= seen & unit.hosts[span]
                seen |= unit.hosts[span]
            if not shared.any():
                # No provider can be taken by two groups: none overfills.
                continue
            total = np.zeros(span.stop - span.start, dtype=np.int64)
            for unit, amount in takers:
                total += unit.hosts[span] * np.int64(amount)
            # A position no taker can take adds 0 (and may have no
            # inventory: limit -1).
            limit = view.limit(column, span)
            over |= view.any_tree(total > np.maximum(limit, 0), *slots)
        return over

    def place(self, tree):
        """The exact search over one tree of the view."""
        view = self.view
        positions = view.tree_positions(tree)
        units = []
        for unit in self.units:
            hosts = [position for position in positions
                     if unit.hosts[position]]
            if not hosts:
                return None
            units.append(tree_search.Unit(
                unit.suffix, unit.amounts, hosts, unit.isolated,
                unit.collective, unit.named_amounts))
        columns = view.columns
        table_row = view.table_row
        words, unknown = provider_columns.masks(columns.traits, self.needed)
        if unknown:
            return None
        needed = sum(int(mask) << (64 * word) for word, mask in words.items())

        def traits_of(position):
            row = table_row(position)
            return sum(int(columns.trait_bits[word, row]) << (64 * word)
                       for word in words) & needed

        def limit_of(position, column):
            return columns.limit_at(column, table_row(position))

        return tree_search.place(units, limit_of, traits_of, needed)


class _Unit:
    """A unit of the column passes (see :mod:`tree_search`); ``slots``:
    ``(first, stop)``, where its ``hosts`` may be true."""

    def __init__(self, suffix, full_amounts, hosts, slots, isolated=False,
                 collective=False):
        self.suffix = suffix
        self.full_amounts = full_amounts
        self.amounts = tuple((column, amount)
                             for _, column, amount in full_amounts)
        self.named_amounts = tuple((name, amount)
                                   for name, _, amount in full_amounts)
        self.hosts = hosts
        self.slots = slots
        self.isolated = isolated
        self.collective = collective


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
