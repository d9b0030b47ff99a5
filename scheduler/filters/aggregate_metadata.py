"""Reading a host's aggregate metadata, as Nova's aggregate filters do.

A host belongs to any number of aggregates (``host_state.aggregates``),
each with its own metadata. The filters read it in one of two ways:

* :func:`values_of`: the values set for one key, as written (the
  ``Aggregate*Filter`` limits and ratios, ``instance_type``);
* :func:`by_key`: every key, with each value split at commas and
  stripped, merged over the aggregates (``filter_tenant_id``, image
  property isolation, aggregate extra specs).

A numeric key set by several aggregates resolves to the smallest value
(:func:`minimum`). The batch paths decide once per distinct set of
aggregates rather than once per host (:func:`per_row`)::

    limit = minimum_of(host_state.aggregates, 'max_io_ops_per_host',
                       CONF.filter_scheduler.max_io_ops_per_host, int)
    limits = per_row(table, lambda aggregates: minimum_of(...), np.float64)
"""

import collections
import math
import threading

from oslo_log import log as logging
import numpy as np

LOG = logging.getLogger(__name__)


# Readings of one set of aggregates, by the ids of its members; an entry
# holds the aggregates, so their ids cannot be reused while it lives.
# Aggregates are never changed in place (a change builds new ones).
_MEMO_LIMIT = 4096
_memo = {}
_memo_lock = threading.Lock()


def _memoized(kind, aggregates, compute):
    key = (kind, tuple(id(aggregate) for aggregate in aggregates))
    entry = _memo.get(key)
    if entry is None:
        entry = (tuple(aggregates), compute(aggregates))
        with _memo_lock:
            if len(_memo) >= _MEMO_LIMIT:
                _memo.clear()
            _memo[key] = entry
    return entry[1]


def values_of(aggregates, key):
    """The set of values ``aggregates`` set for ``key``, as written (a
    frozenset; do not change it)."""
    return _memoized(('values', key), aggregates, lambda found: frozenset(
        aggregate.metadata[key] for aggregate in found
        if key in aggregate.metadata))


def _merged(aggregates):
    merged = collections.defaultdict(set)
    for aggregate in aggregates:
        for key, value in aggregate.metadata.items():
            merged[key].update(part.strip() for part in value.split(','))
    return {key: frozenset(values) for key, values in merged.items()}


def by_key(aggregates):
    """``{key: frozenset of values}``, each value split at commas and
    stripped, over all ``aggregates`` (do not change it)."""
    return _memoized('by_key', aggregates, _merged)


def minimum(values, default, cast, key=None, default_name=None):
    """The smallest of ``values`` converted with ``cast`` (``int`` or
    ``float``); ``default`` when there are none, or when one does not
    convert to a finite number (logged, as Nova logs it, naming the
    default as ``default_name`` if given)."""
    if not values:
        return default
    fallback = default if default_name is None else default_name
    try:
        numbers = [cast(value) for value in values]
    except (TypeError, ValueError) as error:
        LOG.warning("Could not decode aggregate metadata %(key)s: %(error)s; "
                    "using %(default)s", {'key': key, 'error': error,
                                          'default': fallback})
        return default
    if not all(math.isfinite(number) for number in numbers):
        LOG.warning("Aggregate metadata %(key)s is not finite: %(values)s; "
                    "using %(default)s", {'key': key, 'values': values,
                                          'default': fallback})
        return default
    if len(numbers) > 1:
        LOG.debug("%(count)d values of %(key)s found, using the smallest",
                  {'count': len(numbers), 'key': key})
    return min(numbers)


def minimum_of(aggregates, key, default, cast, default_name=None):
    """:func:`minimum` of the values ``aggregates`` set for ``key``,
    remembered per set of aggregates (a bad value is logged once)."""
    return _memoized(
        ('minimum', key, default, cast, default_name), aggregates,
        lambda found: minimum(values_of(found, key), default, cast, key,
                              default_name))


def per_row(table, decide, dtype=np.bool_):
    """``decide(aggregates)`` for every row of ``table``, computed once per
    distinct set of aggregates; an array of ``dtype``."""
    codes, groups = table.aggregate_groups()
    answers = np.fromiter((decide(aggregates) for aggregates in groups),
                          dtype=dtype, count=len(groups))
    return answers[codes]
