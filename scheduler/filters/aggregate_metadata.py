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

    limit = minimum(values_of(host_state.aggregates, 'max_io_ops_per_host'),
                    CONF.filter_scheduler.max_io_ops_per_host, int)
    limits = per_row(table, lambda aggregates: minimum(...), np.float64)
"""

import collections
import math

from oslo_log import log as logging
import numpy as np

LOG = logging.getLogger(__name__)


def values_of(aggregates, key):
    """The set of values ``aggregates`` set for ``key``, as written."""
    return {aggregate.metadata[key] for aggregate in aggregates
            if key in aggregate.metadata}


def by_key(aggregates):
    """``{key: set of values}``, each value split at commas and stripped,
    over all ``aggregates``."""
    merged = collections.defaultdict(set)
    for aggregate in aggregates:
        for key, value in aggregate.metadata.items():
            merged[key].update(part.strip() for part in value.split(','))
    return merged


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


def per_row(table, decide, dtype=np.bool_):
    """``decide(aggregates)`` for every row of ``table``, computed once per
    distinct set of aggregates; an array of ``dtype``."""
    codes, groups = table.aggregate_groups()
    answers = np.fromiter((decide(aggregates) for aggregates in groups),
                          dtype=dtype, count=len(groups))
    return answers[codes]
