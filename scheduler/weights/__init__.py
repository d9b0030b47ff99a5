"""Host weighers: the base class and the handler that combines them.

A weigher ranks the hosts that passed the filters. Its contract is Nova's::

    class IoWeigher(weights.BaseHostWeigher):
        multiplier_option = None     # or a [filter_scheduler] option name

        def _weigh_object(self, host_state, spec):
            return -host_state.io_workload     # higher weights win

``_weigh_object`` gives a raw weight per host. The handler normalises each
weigher's raw weights over the hosts being weighed to 0..1,
``(w - min) / (max - min)`` (all equal: 0 for every host), multiplies by
the weigher's multiplier and sums over the weighers; the highest total
wins. ``minval``/``maxval`` on a weigher clamp its raw weights and replace
the observed minimum/maximum in the normalisation, as in Nova.

The multiplier is ``weight_multiplier(host_state)``: by default the
``[filter_scheduler] <multiplier_option>`` option, overridden for a host
by the same key in the metadata of its aggregates (several values: the
minimum wins; a value that is not a number is logged and the option is
used). A negative multiplier turns spreading into stacking.

The built-in weighers also give the batch path the handler prefers:
``weigh_all(host_table, rows, spec)`` returns the raw weights of the
table's ``rows`` as an array (or ``raw_column(host_table)`` names the
table's column that holds them, and the base class gathers them),
``uniform(spec)`` tells (True) that every
host weighs the same for this request (it changes no ranking: the handler
does not run it), and ``weight_multipliers(host_table, rows)``
the multiplier (a number, or an array when aggregates override it). The
base class implements both with ``_weigh_object``/``weight_multiplier``,
so a weigher with only ``_weigh_object`` works. As for filters, ``pure =
True`` says that the weights depend only on the host table, the spec and
the options, so that a request may be ranked ahead (see
:mod:`scheduler.filters`); the default is False::

    weights = weights.HostWeightHandler().weigh(weighers, table, rows, spec)
    best_row = rows[weights.argmax()]
"""

import math

from oslo_log import log as logging
import numpy as np

from scheduler.conf import cached
from scheduler import host_cache

LOG = logging.getLogger(__name__)

_MIN, _MAX = np.minimum.reduce, np.maximum.reduce


def multiplier_for_host(host_state, key, default):
    """The ``key`` multiplier of one host: aggregate metadata, else
    ``default``."""
    values = [aggregate.metadata[key] for aggregate in host_state.aggregates
              if key in aggregate.metadata]
    if not values:
        return default
    parsed = [host_cache.parse_multiplier(value) for value in values]
    if any(value is None for value in parsed):
        LOG.warning("Could not decode '%(key)s' weight multiplier %(values)s "
                    "of the aggregates of %(host)s; using %(default)s",
                    {'key': key, 'values': values, 'host': host_state.host,
                     'default': default})
        return default
    return min(parsed)


class BaseHostWeigher:
    """Base class of host weighers (see the module docstring)."""

    minval = None
    maxval = None
    # Name of the [filter_scheduler] option holding the multiplier, also
    # the aggregate metadata key that overrides it; None: multiplier 1.0.
    multiplier_option = None
    # True: the weights depend only on the host table, the spec and the
    # options (see the module docstring).
    pure = False
    # True: a host's weight may change when the request's server group or
    # the instance being placed change, although its row did not (see
    # scheduler.filters).
    reads_group = False

    def _weigh_object(self, host_state, spec):
        """Raw weight of one host; higher weights win."""
        raise NotImplementedError()

    def default_multiplier(self):
        if self.multiplier_option is None:
            return 1.0
        return getattr(cached.group('filter_scheduler'),
                       self.multiplier_option)

    def weight_multiplier(self, host_state):
        """How much this weigher counts for ``host_state``."""
        if self.multiplier_option is None:
            return 1.0
        return multiplier_for_host(host_state, self.multiplier_option,
                                   self.default_multiplier())

    def uniform(self, spec):
        """True when every host weighs the same for ``spec`` (so the
        weigher changes no ranking and need not run)."""
        return False

    def constant_weight(self, host_table):
        """The raw weight every row of ``host_table`` has whatever the
        request (no host failed a build, one hypervisor version...), or
        None. Found from a whole column, it spares gathering the
        candidates' weights only to find them flat."""
        return None

    def raw_column(self, host_table):
        """The column of ``host_table`` whose values are the raw weights
        (free RAM, I/O operations...), or None: they are asked of each
        host. A weigher that gives it lets the handler gather the
        weights of the rows it weighs into an array of its own, which it
        then scales in place rather than copying."""
        return None

    def weigh_all(self, host_table, rows, spec):
        """Raw weights of the table's ``rows``, as a float array (a new
        one, unless a subclass says otherwise)."""
        column = self.raw_column(host_table)
        if column is not None:
            return floats(column, rows)
        return _weighed_one_by_one(self, host_table, rows, spec)

    def weight_multipliers(self, host_table, rows):
        """The multiplier of each of ``rows``: a float or a float array."""
        if type(self).weight_multiplier is not (
                BaseHostWeigher.weight_multiplier):
            states = host_table.states
            return np.fromiter(
                (self.weight_multiplier(states[row]) for row in rows),
                dtype=np.float64, count=len(rows))
        default = float(self.default_multiplier())
        if self.multiplier_option is None:
            return default
        overrides = host_table.aggregate_multipliers(self.multiplier_option)
        if overrides is None:
            return default
        picked = overrides[rows]
        return np.where(np.isnan(picked), default, picked)


def reads_stretches(weigher):
    """Whether ``weigher`` may weigh the rows of a
    :class:`scheduler.host_cache.Stretch` (see
    :func:`scheduler.host_cache.reads_stretches`)."""
    return host_cache.reads_stretches(
        weigher, BaseHostWeigher,
        ('weigh_all', 'weight_multipliers', 'raw_column', 'constant_weight'))


def _weighed_one_by_one(weigher, host_table, rows, spec):
    """``weigher``'s raw weights of ``rows``, host by host (a new float
    array)."""
    states = host_table.states
    return np.fromiter(
        (weigher._weigh_object(states[row], spec) for row in rows),
        dtype=np.float64, count=len(rows))


def normalize(raw, minval=None, maxval=None):
    """Scale ``raw`` to 0..1 (see the module docstring); a new array."""
    raw = np.asarray(raw, dtype=np.float64)
    scaled = _scaled(raw, minval, maxval)
    return np.zeros(raw.shape) if scaled is None else scaled


def constant(column):
    """The value of every element of ``column``, or None (it has two, or
    none at all)."""
    if not len(column):
        return None
    first = column[0]
    return None if (column != first).any() else first.item()


def _flat_everywhere(weigher, host_table):
    """True when ``weigher`` normalises to all zeros on any rows of the
    table: their raw weights are one constant (see
    BaseHostWeigher.constant_weight) that minval/maxval leave flat."""
    value = weigher.constant_weight(host_table)
    if value is None:
        return False
    # _scaled's bounds, on one number (a constant is never NaN).
    minval, maxval = weigher.minval, weigher.maxval
    raw = float(value)
    if minval is not None:
        raw = max(raw, minval)
    if maxval is not None:
        raw = min(raw, maxval)
    low = raw if minval is None else float(minval)
    high = raw if maxval is None else float(maxval)
    return low == high


def _scaled(raw, minval, maxval, multiplier=1.0):
    """:func:`normalize` of a float array times ``multiplier`` (a
    number), or None when it is flat (all weights 0). One new array,
    written in place (at 100,000 hosts each array is 800 KB)."""
    if not raw.size:
        return raw
    clamped, low, high = _bounds(raw, minval, maxval)
    if low == high:
        return None
    return _scale(clamped, clamped is not raw, low, high, multiplier)


def _clamped(raw, minval, maxval):
    """``raw`` within minval and maxval (``raw`` itself if every weight
    is within them already, else a new array; a NaN is clamped, and
    stays NaN)."""
    # (A minimum or a maximum reads the array; clamping writes a new one,
    # the same values when none is beyond the limit.)
    if minval is not None and not raw.min() >= minval:
        raw = np.maximum(raw, minval)
    if maxval is not None and not raw.max() <= maxval:
        raw = np.minimum(raw, maxval)
    return raw


def floats(column, rows):
    """A new float array of ``column``'s values at ``rows`` (ascending
    row numbers of its table, as :class:`HostWeightHandler` gives a
    weigher): a weigher's raw weights from a column of the host table.
    All the rows (the usual case at 100,000 hosts, where most pass) cost
    a copy of the column, not an indexed read of it."""
    if len(rows) == len(column):
        return column.astype(np.float64)
    return column.take(rows).astype(np.float64, copy=False)


def _bounds(raw, minval, maxval):
    """``(raw clamped, low, high)``: the weights and the bounds
    :func:`_scaled` normalises with (``raw`` is not empty)."""
    raw = _clamped(raw, minval, maxval)
    # (The ufuncs' reductions are what ndarray.min and max call, NaN
    # included, without the Python wrapper between: a few microseconds
    # a weigher at any size.)
    low = float(_MIN(raw)) if minval is None else float(minval)
    high = float(_MAX(raw)) if maxval is None else float(maxval)
    return raw, low, high


def _scale(raw, own, low, high, multiplier):
    """``(raw - low) / (high - low) * multiplier``, in ``raw`` itself when
    ``own`` (the caller's to write), else in a new array."""
    span = high - low
    if multiplier == -1.0:
        # (A pack: ``x / d * -1.0`` is ``x / -d`` to the bit, -0.0
        # included, since rounding is the same on either side of 0; a NaN
        # stays a NaN.)
        span, multiplier = -span, 1.0
    if low == 0.0 and math.copysign(1.0, low) > 0:
        # The weighers' usual minval: ``x - 0.0`` is ``x`` to the bit, so
        # one pass instead of two.
        scaled = np.divide(raw, span, out=raw if own else None)
    else:
        if own:
            scaled = raw
            scaled -= low
        else:
            scaled = np.subtract(raw, low)
        scaled /= span
    if multiplier != 1.0:
        scaled *= multiplier
    return scaled


class HostWeightHandler:
    """Combines weighers into one total weight per host."""

    def weigh(self, weighers, host_table, rows, spec, between=None):
        """Total weights of the table's ``rows`` (an array of row numbers).

        One host or none: all weights are 0, as in Nova, and no weigher
        runs. ``between()``, if given, is called after each weigher (a
        ranking made ahead stops there when a request arrives).
        """
        return self.weighed(weighers, host_table, rows, spec, between,
                            keep=False).totals

    def contributions(self, weighers, host_table, rows, spec,
                      skip_zero=False):
        """Yield ``(weigher, multiplier * normalized weights)`` of each
        weigher over ``rows``: what each adds to the totals of
        :meth:`weigh` (``gantt-manage explain`` shows them). With
        ``skip_zero`` a weigher whose multiplier is 0 for every row
        (``num_instances_weight_multiplier``'s default, for one) is not
        run at all, and one that weighs every row the same yields None
        instead of zeros."""
        rows = np.asarray(rows, dtype=np.intp)
        if len(rows) <= 1:
            return
        for part in _parts(weighers, host_table, rows, spec, skip_zero):
            if part.skipped == ZERO:
                continue
            weighted = part.weighted()
            if weighted is None and not skip_zero:
                weighted = np.zeros(len(rows))
            yield part.weigher, weighted

    def weighed(self, weighers, host_table, rows, spec, between=None,
                keep=True):
        """:meth:`weigh` of ``rows`` (row numbers, ascending) as a
        :class:`Weighed`, which keeps what each weigher gave so that
        :meth:`reweighed` can weigh a few of the rows again (``keep``
        False: the parts may share arrays with the weighers and the
        table, for the totals alone)."""
        rows = np.asarray(rows, dtype=np.intp)
        totals = np.zeros(len(rows))
        parts = []
        if len(rows) > 1:
            for part in _parts(weighers, host_table, rows, spec, True,
                               keep=keep, sparse=not keep):
                parts.append(part)
                weighted = part.weighted()
                if weighted is None:
                    pass
                elif part.positions is None:
                    totals += weighted
                else:
                    totals[part.positions] += weighted
                if between is not None:
                    between()
        return Weighed(rows, totals, parts)

    def reweighed(self, weighed, host_table, positions, spec,
                  in_place=False):
        """``weighed`` with the rows at ``positions`` (of ``weighed.rows``:
        rows the host table's writes changed since, every other row as
        it was) weighed again on ``host_table``: the totals :meth:`weigh`
        would give now, to the bit. None when a weigher would now run
        that did not, or no longer run (the caller weighs every row
        again).

        A weigher's raw weight and multiplier are per host, so only those
        rows' are asked for again. The other rows' totals change only
        when a weigher's bounds (the minimum and maximum it normalises
        with) move; they are then summed again from the raw weights
        kept, in the same order as :meth:`weigh` sums them.

        ``in_place``: ``weighed`` is written instead of copied (it is not
        to be used after, whatever the answer: None may come after some
        of its weighers' weights were written). The totals are then
        ``weighed.totals`` written at ``positions``, unless they were
        summed again (a new array, and the answer's ``resummed``).
        """
        rows = weighed.rows
        if len(rows) <= 1:
            return weighed
        changed = rows[positions]
        parts = []
        moved = False
        for part in weighed.parts:
            if part.skipped is not None:
                if not part.still_skipped(host_table, changed):
                    return None
                parts.append(part)
                continue
            new = part.with_rows(host_table, changed, positions, spec,
                                 in_place)
            if new is None:
                return None
            moved = moved or not (new.low == part.low
                                  and new.high == part.high)
            parts.append(new)
        if moved:
            totals = _summed(parts, len(rows))
        else:
            totals = weighed.totals if in_place else weighed.totals.copy()
            for position in positions.tolist():
                total = 0.0
                for part in parts:
                    total = part.total_of(position, total)
                totals[position] = total
        return Weighed(rows, totals, parts, resummed=moved)

    def narrowed(self, weighed, dropped):
        """``weighed`` without the rows at positions ``dropped`` (of
        ``weighed.rows``, which no longer pass the filters): the totals
        :meth:`weigh` gives over the rows left, to the bit, when none of
        them was written since. None when a weigher's multiplier differs
        by row (dropping rows may turn it into one :meth:`weigh` skips)
        or a bound is not a number (the caller weighs every row
        again)."""
        if not len(dropped):
            return weighed
        rows = _deleted(weighed.rows, dropped)
        if len(rows) <= 1:
            return Weighed(rows, np.zeros(len(rows)), [])
        parts = []
        moved = False
        for part in weighed.parts:
            if part.skipped is None:
                new = part.without(dropped)
                if new is None:
                    return None
                moved = moved or not (new.low == part.low
                                      and new.high == part.high)
                part = new
            # (Skipped: fewer rows with a multiplier of 0 still have 0,
            # and UNIFORM and FLAT do not depend on the rows.)
            parts.append(part)
        totals = (_summed(parts, len(rows)) if moved
                  else _deleted(weighed.totals, dropped))
        return Weighed(rows, totals, parts, resummed=moved)


def _deleted(values, positions):
    """``np.delete(values, positions)`` (``positions`` ascending, none
    twice): for a few, the pieces between them joined, which costs less
    than the mask np.delete builds over every value."""
    if len(positions) > 4:
        return np.delete(values, positions)
    pieces, start = [], 0
    for position in positions.tolist():
        pieces.append(values[start:position])
        start = position + 1
    pieces.append(values[start:])
    return np.concatenate(pieces)


def _summed(parts, count):
    """The totals of ``count`` rows: each part's weighted weights added
    in turn, as :meth:`HostWeightHandler.weighed` adds them."""
    totals = np.zeros(count)
    for part in parts:
        weighted = part.weighted()
        if weighted is not None:
            totals += weighted
    return totals


# Why a weigher of a Weighed did not run: its multiplier is 0 for every
# row; every host weighs the same for the request; every row of the
# table has one raw weight.
ZERO, UNIFORM, FLAT = 'zero', 'uniform', 'flat'


class Weighed:
    """The total weights of a table's ``rows`` (ascending) and each
    weigher's :class:`_Part` of them, in order (see
    :meth:`HostWeightHandler.weighed`); ``resummed``: made by
    :meth:`HostWeightHandler.reweighed` summing every row's total again
    (False: only the rows it was given changed)."""

    __slots__ = ('rows', 'totals', 'parts', 'resummed')

    def __init__(self, rows, totals, parts, resummed=False):
        self.rows = rows
        self.totals = totals
        self.parts = parts
        self.resummed = resummed


class _Part:
    """What one weigher gave over a Weighed's rows.

    ``skipped``: why it did not run (ZERO, UNIFORM or FLAT), else None;
    ``weights``: its raw weights, clamped to its minval/maxval; ``low``,
    ``high``: the bounds it normalised them with (equal: it weighed
    every row the same and added nothing); ``multipliers``: a float, or
    an array by row; ``at_bounds``: how many weights are ``low`` and how
    many ``high`` (None: not counted yet), so that :meth:`with_rows` need
    not look through every weight for a bound that one row left;
    ``owns``: ``weights`` is this part's alone and used once, so that
    :meth:`weighted` may scale it in place (a part not kept);
    ``positions``: None, or the positions (of the rows weighed) that
    ``weights`` are of, every other row weighing 0 and adding nothing
    (see :func:`_sparse_part`).
    """

    __slots__ = ('weigher', 'skipped', 'weights', 'low', 'high',
                 'multipliers', 'at_bounds', 'owns', 'positions')

    def __init__(self, weigher, skipped=None, weights=None, low=None,
                 high=None, multipliers=1.0, at_bounds=None, owns=False):
        self.weigher = weigher
        self.skipped = skipped
        self.weights = weights
        self.low = low
        self.high = high
        self.multipliers = multipliers
        self.at_bounds = at_bounds
        self.owns = owns
        self.positions = None

    def counted(self):
        """This part with :attr:`at_bounds` counted."""
        weights_ = self.weights
        self.at_bounds = (int(np.count_nonzero(weights_ == self.low)),
                          int(np.count_nonzero(weights_ == self.high)))
        return self

    def weighted(self):
        """Multiplier times normalised weights, a new array (or, for a
        part that :attr:`owns` its weights, those weights scaled in
        place); None when the weigher adds nothing."""
        if self.skipped is not None or self.low == self.high:
            return None
        multipliers = self.multipliers
        scalar = isinstance(multipliers, float)
        weighted = _scale(self.weights, self.owns, self.low, self.high,
                          multipliers if scalar else 1.0)
        if not scalar:
            weighted *= multipliers
        return weighted

    def still_skipped(self, host_table, changed):
        """Whether the weigher is still not to run with the rows
        ``changed`` as they are now."""
        if self.skipped == ZERO:
            multipliers = self.weigher.weight_multipliers(host_table,
                                                          changed)
            return not (multipliers if isinstance(multipliers, float)
                        else np.any(multipliers))
        if self.skipped == FLAT:
            return _flat_everywhere(self.weigher, host_table)
        return True     # UNIFORM: a matter of the request alone

    def with_rows(self, host_table, changed, positions, spec,
                  in_place=False):
        """This part with the raw weights and multipliers of ``changed``
        (the rows at ``positions``) asked for again; None when the
        weigher would now be skipped, its multiplier is no longer the
        one number it was, or a weight is not a number. (A few rows:
        Python floats, whose arithmetic is NumPy's, cost less than
        NumPy's calls.) ``in_place``: the new part writes this one's
        arrays instead of copies of them."""
        weigher = self.weigher
        if self.low != self.low or self.high != self.high or (
                # The handler asks the table whether a BaseHostWeigher is
                # flat everywhere (FLAT) before running it.
                isinstance(weigher, BaseHostWeigher)
                and _flat_everywhere(weigher, host_table)):
            return None
        multipliers = self.multipliers
        if isinstance(weigher, BaseHostWeigher):
            new = weigher.weigh_all(host_table, changed, spec)
            fresh = weigher.weight_multipliers(host_table, changed)
            one = isinstance(fresh, float) or np.ndim(fresh) == 0
            if isinstance(multipliers, float):
                if not one or float(fresh) != multipliers:
                    return None
            elif one:
                # One number now where each host had its own: the table
                # changed more than those rows.
                return None
            else:
                if not in_place:
                    multipliers = multipliers.copy()
                multipliers[positions] = fresh
        else:
            new = _weighed_one_by_one(weigher, host_table, changed, spec)
            if not in_place:
                multipliers = multipliers.copy()
            multipliers[positions] = [
                weigher.weight_multiplier(host_table.states[row])
                for row in changed]
        new = np.asarray(new, dtype=np.float64).tolist()
        minval, maxval = _limits(weigher)
        if minval is not None:
            new = [max(value, float(minval)) for value in new]
        if maxval is not None:
            new = [min(value, float(maxval)) for value in new]
        if any(value != value for value in new):
            return None     # not a number: the full run says what it gives
        at_low, at_high = self.at_bounds or self.counted().at_bounds
        weights_ = self.weights if in_place else self.weights.copy()
        old = weights_[positions].tolist()
        weights_[positions] = new
        low, high = self.low, self.high
        # A bound moves when a new weight goes beyond it, or when the last
        # weight at it changed (see _kept_bound).
        if minval is None and min(new) < low:
            low = min(new)
            at_low = new.count(low)
        else:
            low, at_low = _kept_bound(weights_, low, at_low, old, new,
                                      weights_.min if minval is None
                                      else None)
        if maxval is None and max(new) > high:
            high = max(new)
            at_high = new.count(high)
        else:
            high, at_high = _kept_bound(weights_, high, at_high, old, new,
                                        weights_.max if maxval is None
                                        else None)
        return _Part(weigher, None, weights_, low, high, multipliers,
                     (at_low, at_high))

    def without(self, dropped):
        """This part without the weights at positions ``dropped``, its
        bounds those of the weights left; None when its multiplier
        differs by row or a bound is not a number."""
        if (not isinstance(self.multipliers, float)
                or self.low != self.low or self.high != self.high):
            return None
        at_low, at_high = self.at_bounds or self.counted().at_bounds
        gone = self.weights[dropped].tolist()
        weights_ = _deleted(self.weights, dropped)
        minval, maxval = _limits(self.weigher)
        low, at_low = _kept_bound(weights_, self.low, at_low, gone, [],
                                  weights_.min if minval is None else None)
        high, at_high = _kept_bound(weights_, self.high, at_high, gone, [],
                                    weights_.max if maxval is None
                                    else None)
        return _Part(self.weigher, None, weights_, low, high,
                     self.multipliers, (at_low, at_high))

    def total_of(self, position, subtotal):
        """``subtotal`` plus what this part adds to the total of the row
        at ``position``: the operations of :meth:`weighted` and of the
        sum in :meth:`HostWeightHandler.weigh`, on Python floats."""
        if self.skipped is not None or self.low == self.high:
            return subtotal
        value = (self.weights.item(position) - self.low) / (self.high
                                                             - self.low)
        multipliers = self.multipliers
        if isinstance(multipliers, float):
            if multipliers != 1.0:
                value *= multipliers
        else:
            value *= multipliers.item(position)
        return subtotal + value


def _kept_bound(weights_, bound, count, old, new, find):
    """``(bound, count)`` once the weights ``old`` of a few rows became
    ``new`` in ``weights_``, none beyond ``bound``, ``count`` of them at
    it before: how many are at it now, and the bound found again
    (``find()``) and its weights counted when none is left at it
    (``find`` None: the bound is fixed, a weigher's minval or
    maxval)."""
    count += new.count(bound) - old.count(bound)
    if count > 0 or find is None:
        return bound, count
    bound = float(find())
    return bound, int(np.count_nonzero(weights_ == bound))


def _limits(weigher):
    """A weigher's ``(minval, maxval)`` (one that is not a
    BaseHostWeigher may have neither)."""
    return (getattr(weigher, 'minval', None),
            getattr(weigher, 'maxval', None))


def _sparse_part(weigher, host_table, rows, multiplier):
    """A part of ``weigher`` (not kept) over the few ``rows`` whose raw
    weight is not 0, when its raw column is mostly 0 (the I/O operations
    of mostly idle hosts: see HostTable.nonzero_rows) and a 0 adds
    nothing to a total: the normalised weights' minimum is 0, and a 0
    stays 0 (times the multiplier, +0.0 or -0.0, which leaves a total
    as it was: a total is never -0.0). None otherwise.

    The weights of those rows, and the bounds (a 0 stands for the
    others), go through the operations the whole array would."""
    column = weigher.raw_column(host_table)
    if column is None:
        return None
    nonzero = host_table.nonzero_rows(column)
    if nonzero is None:
        return None
    at = np.searchsorted(rows, nonzero)
    inside = at < len(rows)
    at = at[inside]
    at = at[rows[at] == nonzero[inside]]
    if len(at) == len(rows):
        return None
    raw = np.append(floats(column, rows[at]), 0.0)
    weights_, low, high = _bounds(raw, *_limits(weigher))
    if not (low == 0.0 and math.copysign(1.0, low) > 0
            and weights_[-1] == 0.0):
        return None
    part = _Part(weigher, None, weights_[:-1], low, high, multiplier,
                 owns=True)
    part.positions = at
    return part


def _parts(weighers, host_table, rows, spec, skip_zero, keep=False,
           sparse=False):
    """A :class:`_Part` for each weigher over ``rows`` (two or more), run
    as :meth:`HostWeightHandler.contributions` describes; ``keep``: the
    parts are kept (see :meth:`HostWeightHandler.weighed`); ``sparse``:
    a part may be one of a few rows (see :func:`_sparse_part`)."""
    for weigher in weighers:
        if isinstance(weigher, BaseHostWeigher):
            multipliers = weigher.weight_multipliers(host_table, rows)
            if skip_zero and not (
                    multipliers if isinstance(multipliers, float)
                    else np.any(multipliers)):
                yield _Part(weigher, ZERO)
                continue
            if weigher.uniform(spec):
                yield _Part(weigher, UNIFORM)
                continue
            if _flat_everywhere(weigher, host_table):
                yield _Part(weigher, FLAT)
                continue
            # The base class's weigh_all gives a new array each time.
            fresh = type(weigher).weigh_all is BaseHostWeigher.weigh_all
            part = (_sparse_part(weigher, host_table, rows, multipliers)
                    if sparse and fresh and isinstance(multipliers, float)
                    else None)
            if part is not None:
                yield part
                continue
            raw = weigher.weigh_all(host_table, rows, spec)
        else:
            raw = _weighed_one_by_one(weigher, host_table, rows, spec)
            fresh = True
            multipliers = np.fromiter(
                (weigher.weight_multiplier(host_table.states[row])
                 for row in rows), dtype=np.float64, count=len(rows))
        if isinstance(multipliers, float) or np.ndim(multipliers) == 0:
            multipliers = float(multipliers)
        elif keep:
            multipliers = np.array(multipliers, dtype=np.float64)
        # Kept: a copy unless fresh (a weigher may hand over an array it
        # keeps, a column the table writes in place).
        raw = (np.array if keep and not fresh else np.asarray)(
            raw, dtype=np.float64)
        weights_, low, high = _bounds(raw, *_limits(weigher))
        # Not kept: scaled in place when the array is the handler's own
        # (fresh, or a clamped copy).
        owns = not keep and (fresh or weights_ is not raw)
        part = _Part(weigher, None, weights_, low, high, multipliers,
                     owns=owns)
        yield part.counted() if keep else part
