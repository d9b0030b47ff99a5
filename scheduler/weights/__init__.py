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
table's ``rows`` as an array, ``uniform(spec)`` tells (True) that every
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

from oslo_log import log as logging
import numpy as np

from scheduler import conf
from scheduler import host_table as host_table_mod

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def multiplier_for_host(host_state, key, default):
    """The ``key`` multiplier of one host: aggregate metadata, else
    ``default``."""
    values = [aggregate.metadata[key] for aggregate in host_state.aggregates
              if key in aggregate.metadata]
    if not values:
        return default
    parsed = [host_table_mod.parse_multiplier(value) for value in values]
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

    def _weigh_object(self, host_state, spec):
        """Raw weight of one host; higher weights win."""
        raise NotImplementedError()

    def default_multiplier(self):
        if self.multiplier_option is None:
            return 1.0
        return getattr(CONF.filter_scheduler, self.multiplier_option)

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

    def weigh_all(self, host_table, rows, spec):
        """Raw weights of the table's ``rows``, as a float array."""
        states = host_table.states
        return np.fromiter(
            (self._weigh_object(states[row], spec) for row in rows),
            dtype=np.float64, count=len(rows))

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
    # ``raw`` may be the caller's (a column): written only once copied.
    own = False
    if minval is not None:
        raw, own = np.maximum(raw, minval), True
    if maxval is not None:
        raw = np.minimum(raw, maxval, out=raw if own else None)
        own = True
    low = float(raw.min()) if minval is None else float(minval)
    high = float(raw.max()) if maxval is None else float(maxval)
    if low == high:
        return None
    if own:
        scaled = raw
        scaled -= low
    else:
        scaled = np.subtract(raw, low)
    scaled /= high - low
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
        totals = np.zeros(len(rows))
        for _weigher, weighted in self.contributions(
                weighers, host_table, rows, spec, skip_zero=True):
            if weighted is not None:
                totals += weighted
            if between is not None:
                between()
        return totals

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
        for weigher in weighers:
            if isinstance(weigher, BaseHostWeigher):
                multipliers = weigher.weight_multipliers(host_table, rows)
                if skip_zero and not (
                        multipliers if isinstance(multipliers, float)
                        else np.any(multipliers)):
                    continue
                if weigher.uniform(spec) or _flat_everywhere(weigher,
                                                             host_table):
                    yield weigher, None if skip_zero else np.zeros(len(rows))
                    continue
                raw = weigher.weigh_all(host_table, rows, spec)
            else:
                raw = BaseHostWeigher.weigh_all(weigher, host_table, rows,
                                                spec)
                multipliers = np.fromiter(
                    (weigher.weight_multiplier(host_table.states[row])
                     for row in rows), dtype=np.float64, count=len(rows))
            scalar = isinstance(multipliers, float) or np.ndim(
                multipliers) == 0
            weighted = _scaled(np.asarray(raw, dtype=np.float64),
                               getattr(weigher, 'minval', None),
                               getattr(weigher, 'maxval', None),
                               float(multipliers) if scalar else 1.0)
            if weighted is None:
                yield weigher, None if skip_zero else np.zeros(len(rows))
                continue
            if not scalar:
                weighted *= multipliers
            yield weigher, weighted
