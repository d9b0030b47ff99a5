"""Ranking weighed hosts, and breaking ties between equal ones.

:class:`TieBreaks` is one driver's source of chance: the order in which
it tries hosts of equal weight, the shuffle of the equally best ones
(``shuffle_best_same_weighed_hosts``) and the pick among the best
``host_subset_size``. Each driver has its own, so that two schedulers
that see the same equal hosts (a fresh cloud of identical nodes) try
them in different orders instead of all claiming the first, while one
driver keeps a stable order. By default it is seeded afresh in every
process (a worker forked from the process that built the driver draws
its own); given a seeded :class:`random.Random` it repeats itself, as
``gantt-sim --seed`` needs::

    breaks = ranking.TieBreaks(random.Random(1))
    order = ranking.Ranking(rows, weights, need, node_ids, breaks)
    order.pick_order(subset_size=1, shuffle_best=False)
"""

import bisect
import os
import random

import numpy as np

# Rankings sort everything below this many hosts; above, only the best.
FULL_SORT_LIMIT = 256


class TieBreaks:
    """Where one driver's chance comes from; see the module docstring.

    ``source``: a :class:`random.Random` to draw from (seeded: the same
    choices every run); None: one seeded from the system, drawn again in
    a forked child.
    """

    def __init__(self, source=None):
        self._given = source
        self._pid = None
        # (ids column, salt, its keys): see keys_of.
        self._kept = None
        self._source = self._salt = None
        if source is not None:
            self._reset(source)

    def _reset(self, source):
        self._source = source
        self._salt = np.uint64(source.getrandbits(64) | 1)
        self._pid = os.getpid()

    def _fresh(self):
        if self._given is None and self._pid != os.getpid():
            self._reset(random.Random())

    @property
    def source(self):
        """The :class:`random.Random` to draw picks and shuffles from."""
        self._fresh()
        return self._source

    @property
    def salt(self):
        """What :meth:`keys` hashes with now (drawn again after a fork)."""
        self._fresh()
        return self._salt

    def keys(self, node_ids):
        """A sort key per node: this driver's order among equal hosts
        (a hash of the node's id salted per driver, not table order)."""
        self._fresh()
        keys = np.asarray(node_ids).astype(np.uint64) * self._salt
        return keys ^ (keys >> np.uint64(31))

    def keys_of(self, ids):
        """:meth:`keys` of a whole id column (a host table's ``ids``),
        kept for the last column asked for while it is the same array
        and the salt the same: a ranking gathers its rows' keys from it
        instead of hashing them again."""
        self._fresh()
        kept = self._kept
        if kept is not None and kept[0] is ids and kept[1] == self._salt:
            return kept[2]
        keys = self.keys(ids)
        self._kept = (ids, self._salt, keys)
        return keys


# Up to how many best rows a ranking finds one weight at a time (see
# _best_few) rather than by a selection over every weight: a request
# needs the host_subset_size best and the alternates, and the first
# instance of several one row more per instance after it (see
# filter_scheduler._Request.depth), up to this: four instances under
# anti-affinity, whose hosts leave the head one by one, without
# alternates (two rows needed), rank every host once, not twice (at
# 10,000 hosts under gantt-sim's pack, five best found one at a time
# cost less than by the sampled selection).
FEW_BEST = 5
# Up to how many rows of a head, and rows changed, Ranking.carried ranks
# again with Python's values (a request's later instance: its need, one
# more per instance after it, and its own claim).
FEW_CARRIED = 16
# Up to how many rows of a head Ranking.patched ranks again with Python's
# values (a ranking made ahead: a request's need and AHEAD_DEPTH more),
# as many rows changed as FEW_CARRIED at most.
FEW_PATCHED = 64

# nth_largest samples every SAMPLE_STRIDE-th weight.
SAMPLE_STRIDE = 16


def nth_largest(values, n):
    """The ``n``-th largest of ``values`` (a float array of at least ``n``),
    as ``np.partition`` gives it, without selecting over the whole array
    when ``n`` is small beside it (the best few of 10,000 hosts).

    The ``n``-th largest of a sample (every SAMPLE_STRIDE-th value) is at
    most the ``n``-th largest of all (the sample's ``n`` largest are ``n``
    values of the array), so every value that may be among the ``n``
    largest is at least that much: the selection runs over those only,
    about SAMPLE_STRIDE * ``n`` values.
    """
    count = len(values)
    sample = values[::SAMPLE_STRIDE]
    if len(sample) >= n and len(sample) * 4 < count:
        bound = np.partition(sample, len(sample) - n)[len(sample) - n]
        above = values[values >= bound]
        if len(above) >= n:
            # (Fewer only when the bound is not a number.)
            values, count = above, len(above)
    return np.partition(values, count - n)[count - n]


def _near_the_top(values, n):
    """Positions (ascending) of a few of ``values`` (numbers, none NaN)
    that hold every value at least as large as the ``n``-th largest,
    found from a sample as :func:`nth_largest` finds its bound (two
    passes over ``values`` fewer than it and the look for the positions
    after); None when ``values`` are too few for a sample to help, or
    when that bound is met by over a quarter of them (many hosts alike
    near the top: a selection over those would cost more than the passes
    it spares)."""
    count = len(values)
    sample = values[::SAMPLE_STRIDE]
    if len(sample) < n or len(sample) * 4 >= count:
        return None
    bound = np.partition(sample, len(sample) - n)[len(sample) - n]
    near = np.flatnonzero(values >= bound)
    return near if len(near) * 4 <= count else None


def _best_few(weights_, tied, need):
    """``(above, threshold, tied)`` for the best ``need`` (a few) of
    ``weights_`` (numbers, none NaN), ``tied`` the positions of their
    largest, fewer than ``need``: the positions (ascending within each
    weight) of the weights larger than ``threshold``, fewer than
    ``need``, and those of the weights equal to it, which make up the
    rest. Found one weight at a time, the best left first (two passes
    over the weights each, where a selection over all of them takes
    several)."""
    left = weights_.copy()
    found, count = [], 0
    while True:
        found.append(tied)
        count += len(tied)
        left[tied] = -np.inf
        # The largest weight left. (Where only -inf is left, the rows
        # that hold it are those compared equal below, not those set.)
        threshold = left[int(left.argmax())]
        tied = np.flatnonzero(weights_ == threshold)
        if count + len(tied) >= need:
            return np.concatenate(found), threshold, tied


def _smallest(keys, count):
    """Positions of the ``count`` smallest ``keys`` (None: the first
    ``count`` positions), in any order."""
    if keys is None:
        return np.arange(count)
    if count > 8:
        return np.argpartition(keys, count - 1)[:count]
    # A few: one pass each, no selection over all of them.
    left = keys.copy()
    found = []
    for _ in range(count):
        position = int(left.argmin())
        if position in found:
            # A key was the largest value itself: select instead.
            return np.argpartition(keys, count - 1)[:count]
        found.append(position)
        left[position] = np.iinfo(left.dtype).max
    return np.array(found, dtype=np.intp)


def _best_first(weights_, keys):
    """Indices sorting ``weights_`` best first, ties by ``keys``."""
    if keys is None:
        return np.argsort(-weights_, kind='stable')
    return np.lexsort((keys, -weights_))


def _keys_of(rows, ids, tie_breaks):
    """The tie keys of the nodes of ``rows`` (``ids``: the table's node
    ids by row; None: no keys)."""
    if ids is None:
        return None
    if len(rows) * 8 < len(ids):
        # A few: hashed here (a request's own table would not be asked
        # again).
        return tie_breaks.keys(ids[rows])
    return tie_breaks.keys_of(ids)[rows]


class Ranking:
    """Rows ranked by weight, best first, ties by ``tie_breaks.keys`` of
    their nodes (``ids``: the table's node ids, by row) or else in table
    order.

    Only the best ``need`` rows are sorted up front (``head``: the first
    ``need`` of the whole order), and only they get tie keys; :meth:`rest`
    sorts the others when a request runs out of hosts to try (many lost
    claim races). When many hosts tie for the last places (a cloud of
    identical nodes), the head takes those of them with the smallest tie
    keys, without sorting all of them. After a few rows' weights changed,
    :meth:`patched` ranks the head and those rows again rather than every
    row (a ranking made ahead heads with more rows than a request needs,
    for the patches to take from).
    """

    # The weights.Weighed the weights come from, when a ranking made ahead
    # keeps it (see filter_scheduler.FilterScheduler._patch_shape).
    weighed = None

    def __init__(self, rows, weights_, need, ids=None, tie_breaks=None):
        self.rows = rows
        self.weights = weights_
        self.need = need
        self.ids = ids
        self.tie_breaks = tie_breaks or TieBreaks()
        # The weight of the tie the head cut through, else None.
        self._cut_weight = None
        # Whether no weight is NaN (as far as _top looked: a full sort
        # says nothing).
        self._numbers = False
        count = len(rows)
        if count <= max(FULL_SORT_LIMIT, 4 * need):
            keys = self._keys(None)
            top = _best_first(weights_, keys)
            keys = keys[top] if keys is not None else None
        else:
            top = self._top(need)
            keys = self._keys(top)
            order = _best_first(weights_[top], keys)
            top = top[order]
            keys = keys[order] if keys is not None else None
        self._set_head(top, keys)
        self.complete = len(top) == count
        # The keys' salt (patched compares it with the one of the day).
        self._salt = self.tie_breaks.salt if keys is not None else None

    def _set_head(self, positions, keys):
        """The head: the rows at ``positions`` (of ``rows``), best first,
        their tie keys ``keys`` (None without node ids)."""
        self.head_positions = positions
        self.head_keys = keys
        self.head = self.rows[positions]
        self.head_weights = self.weights[positions]

    def patched(self, weights_, positions, need):
        """This ranking with the weights ``weights_`` (the same rows; only
        those at ``positions`` changed, the others' as they were): the
        order a Ranking of ``weights_`` gives, with a head of at least
        ``need`` rows.

        The rows outside this ranking's head that did not change still
        come after its last row (the boundary): only the head's rows
        and the changed ones are ranked again, and those that still come
        before the boundary (the boundary included) are the new head. A
        head that falls under ``need`` rows, a boundary that changed, a
        weight that is not a number or a ranking without tie keys ranks
        every row again (with this ranking's ``need``), as does a
        ranking that sorted every row (a small one: that costs little).
        """
        head = self.head_positions
        if (self.complete or not self._numbers or self.head_keys is None
                or not len(head) or self.tie_breaks.salt != self._salt):
            return Ranking(self.rows, weights_, self.need, self.ids,
                           self.tie_breaks)
        if len(head) <= FEW_PATCHED and len(positions) <= FEW_CARRIED:
            # A ranking made ahead (its head a few dozen rows) after a
            # claim: Python's values (see _reranked).
            return self._reranked(self.rows, weights_, head.tolist(),
                                  self.head_keys.tolist(),
                                  positions.tolist(), need, self.need)
        changed = positions.tolist()
        boundary = int(head[-1])
        if boundary in changed:
            return Ranking(self.rows, weights_, self.need, self.ids,
                           self.tie_breaks)
        inside = set(head.tolist())
        extra = [position for position in changed if position not in inside]
        candidates, keys = head, self.head_keys
        if extra:
            extra = np.array(extra, dtype=head.dtype)
            candidates = np.concatenate((head, extra))
            keys = np.concatenate((keys, self._keys(extra)))
        values = weights_[candidates]
        if np.isnan(values).any():
            return Ranking(self.rows, weights_, self.need, self.ids,
                           self.tie_breaks)
        last_weight = weights_[boundary]
        last_key = self.head_keys[-1]
        before = (values > last_weight) | ((values == last_weight)
                                           & (keys <= last_key))
        if int(np.count_nonzero(before)) < need:
            return Ranking(self.rows, weights_, self.need, self.ids,
                           self.tie_breaks)
        kept, kept_keys = candidates[before], keys[before]
        order = _best_first(values[before], kept_keys)
        ranking = self._like(self.rows, weights_, self.need, True)
        ranking._set_head(kept[order], kept_keys[order])
        ranking.complete = len(kept) == len(self.rows)
        # The boundary is the head's last row still: rows outside tie
        # with it if they did before, or a changed row left the head at
        # its weight.
        ranking._cut_weight = (
            last_weight if self._cut_weight == last_weight
            or bool((values[~before] == last_weight).any()) else None)
        return ranking

    def carried(self, rows, weights_, dropped, changed, need, depth):
        """This ranking brought to a request's next instance: the rows at
        positions ``dropped`` (ascending) no longer pass, ``rows`` and
        ``weights_`` are the rows left and their weights, those at
        positions ``changed`` (ascending, of ``rows``) new and every
        other one as it was. The order a Ranking of ``weights_`` gives,
        its head at least ``need`` rows long, as :meth:`patched` gives
        it (a ranking of every row ``depth`` deep when it must); a head
        of a few rows and a few rows changed (a request's own claim) are
        ranked again with Python's values, whose operations cost less
        than NumPy's calls on so few."""
        head = self.head_positions
        if (len(head) > FEW_CARRIED or len(changed) > FEW_CARRIED
                or self.complete or not self._numbers
                or self.head_keys is None
                or self.tie_breaks.salt != self._salt):
            return self.without(rows, weights_, dropped, depth).patched(
                weights_, changed, need)
        positions, keys = head.tolist(), self.head_keys.tolist()
        if len(dropped):
            gone = dropped.tolist()
            left = []
            for position, key in zip(positions, keys):
                before = bisect.bisect_left(gone, position)
                if before == len(gone) or gone[before] != position:
                    left.append((position - before, key))
            positions = [position for position, _key in left]
            keys = [key for _position, key in left]
        return self._reranked(rows, weights_, positions, keys,
                              changed.tolist(), need, depth)

    def _reranked(self, rows, weights_, positions, keys, changed, need,
                  depth):
        """What :meth:`patched` makes of a head and a few changed rows,
        with Python's values, whose operations cost less than NumPy's
        calls on so few: ``positions`` and ``keys`` (lists, best first)
        are the head's positions of ``rows`` and their tie keys, every
        row outside it ranked after its last (the boundary), as it was;
        ``changed``: the positions (a list) whose weights in
        ``weights_`` changed. The head's rows and the changed ones that
        still come before the boundary (the boundary included) are the
        new head, the ranking's ``need`` ``depth``. Every row is ranked
        again (``depth`` deep) when there is no head, the boundary
        changed, a weight is not a number or fewer than ``need`` rows
        are left before the boundary."""
        def anew():
            return Ranking(rows, weights_, depth, self.ids, self.tie_breaks)

        if not positions or positions[-1] in changed:
            return anew()
        boundary, last_key = positions[-1], keys[-1]
        inside = set(positions)
        extra = [position for position in changed if position not in inside]
        if extra:
            keys = keys + _keys_of(rows[extra], self.ids,
                                   self.tie_breaks).tolist()
        last_weight = weights_.item(boundary)
        tied_outside = self._cut_weight == last_weight
        ahead = []
        for index, (position, key) in enumerate(zip(positions + extra,
                                                    keys)):
            weight = weights_.item(position)
            if weight != weight:
                # Not a number: ranked as a full sort ranks it.
                return anew()
            if weight > last_weight or (weight == last_weight
                                        and key <= last_key):
                # (The index: where lexsort leaves equal keys.)
                ahead.append((-weight, key, index, position))
            elif weight == last_weight:
                tied_outside = True
        if len(ahead) < need:
            return anew()
        ahead.sort()
        ranking = self._like(rows, weights_, depth, True)
        ranking._set_head(
            np.array([entry[3] for entry in ahead], dtype=np.intp),
            np.array([entry[1] for entry in ahead], dtype=np.uint64))
        ranking.complete = len(ahead) == len(rows)
        # Rows outside the head tie with its last row when they did, or
        # a changed row left the head at its weight.
        ranking._cut_weight = last_weight if tied_outside else None
        return ranking

    def _like(self, rows, weights_, need, numbers):
        """A ranking of ``rows`` and ``weights_`` with this one's node
        ids, tie breaks and keys' salt, made without ranking: its
        caller sets its head, ``complete`` and ``_cut_weight``."""
        ranking = Ranking.__new__(Ranking)
        ranking.rows = rows
        ranking.weights = weights_
        ranking.need = need
        ranking.ids = self.ids
        ranking.tie_breaks = self.tie_breaks
        ranking._salt = self._salt
        ranking._numbers = numbers
        return ranking

    def without(self, rows, weights_, dropped, need):
        """This ranking once the rows at positions ``dropped`` (ascending)
        left it: over ``rows`` (this ranking's rows without those) and
        ``weights_`` (this ranking's weights without theirs), its head
        this one's rows that are left, in the same order; ``need``: the
        depth :meth:`patched` ranks every row with, when it must. Rows
        outside the head still come after its last row, as they did:
        only rows were taken away."""
        ranking = self._like(rows, weights_, need, self._numbers)
        # (Kept: patched says whether rows outside still tie with the
        # head's last.)
        ranking._cut_weight = self._cut_weight
        head, keys = self.head_positions, self.head_keys
        if len(dropped):
            before = np.searchsorted(dropped, head)
            gone = np.zeros(len(head), dtype=np.bool_)
            inside = before < len(dropped)
            gone[inside] = dropped[before[inside]] == head[inside]
            head = head[~gone] - before[~gone]
            keys = keys[~gone] if keys is not None else None
        ranking._set_head(head, keys)
        ranking.complete = self.complete and len(head) == len(rows)
        return ranking

    def _top(self, need):
        """Positions of the best ``need`` weights, in any order."""
        weights_ = self.weights
        threshold = weights_.max()
        # (The maximum of an array with a NaN is NaN.)
        self._numbers = not np.isnan(threshold)
        tied = np.flatnonzero(weights_ == threshold)
        above = near = None
        if len(tied) >= need:
            # As many tied for the best as needed (identical hosts): no
            # selection.
            above = tied[:0]
        elif self._numbers and need <= FEW_BEST:
            above, threshold, tied = _best_few(weights_, tied, need)
        elif self._numbers:
            near = _near_the_top(weights_, need)
        if above is None and near is not None:
            # A few positions hold every weight that may be among the
            # best: the selection looks at them alone.
            values = weights_[near]
            count = len(values)
            threshold = np.partition(values, count - need)[count - need]
            tied = near[values == threshold]
            above = near[values > threshold]
        elif above is None:
            threshold = nth_largest(weights_, need)
            tied = np.flatnonzero(weights_ == threshold)
            if not len(tied):
                # Not a number: as many as compare at least as large.
                return np.flatnonzero(weights_ >= threshold)
            above = np.flatnonzero(weights_ > threshold)
        wanted = need - len(above)
        if len(tied) > wanted:
            tied = tied[_smallest(self._keys(tied), wanted)]
            self._cut_weight = threshold
        return np.concatenate((above, tied))

    def _keys(self, positions):
        rows = self.rows if positions is None else self.rows[positions]
        return _keys_of(rows, self.ids, self.tie_breaks)

    def rest(self):
        if self.complete:
            return []
        order = _best_first(self.weights, self._keys(None))
        return [int(row) for row in self.rows[order][len(self.head):]]

    def pick_order(self, subset_size, shuffle_best):
        """Rows to try, in order: a random one of the best
        ``subset_size`` first, then the others best first (Nova)."""
        head = self.head.tolist()
        if not head:
            return head
        source = self.tie_breaks.source
        if shuffle_best and self._cut_weight == self.head_weights[0]:
            # Every host tied for the best, as a full sort holds them; the
            # head grows to all of them (rest() comes after).
            tied = np.flatnonzero(self.weights == self._cut_weight)
            keys = self._keys(tied)
            order = _best_first(self.weights[tied], keys)
            self._set_head(tied[order],
                           keys[order] if keys is not None else None)
            self._cut_weight = None
            head = self.head.tolist()
        if shuffle_best:
            best = int(np.count_nonzero(self.head_weights
                                        == self.head_weights[0]))
            tied = head[:best]
            source.shuffle(tied)
            head[:best] = tied
        chosen = source.choice(head[:subset_size])
        head.remove(chosen)
        return [chosen] + head
