"""The later instances of a request for several: filtered and weighed
again on the rows the earlier ones changed.

Each instance of a request for several starts from the hosts that passed
the filters for the instance before it, on a table whose rows written
since are known: the shared table, whose write log names them (the
earlier instance's claim, other requests' claims, nodes read again), or
the request's own (see :class:`scheduler.host_cache.PrivateTable`), where
they are those the request put there (the earlier instance's
reservation, its server group's member, a row read again after a lost
claim). The filters and weighers judge a host by its own row (every one
is pure, as for a ranking made ahead: see
:meth:`FilterScheduler._patch_shape`), and the spec is the same from one
instance to the next but for its server group and the instance being
placed, which only the plugins that say ``reads_group`` follow. So the
answer of the full pass comes from the last one for the cost of those
rows:

* the filters ask the rows written again, host by host, except those
  that read the group, which run over every host left
  (:meth:`scheduler.filters.HostFilterHandler.rerun`): the same hosts,
  steps and counts, hence the same NoValidHost reasons;
* the weights of the hosts that no longer pass are dropped and those of
  the rows written weighed again
  (:meth:`scheduler.weights.HostWeightHandler.narrowed` and
  ``reweighed``): the totals of a full pass, to the bit;
* the ranking is the last one carried over
  (:meth:`scheduler.drivers.ranking.Ranking.carried`): the rows dropped
  leave its head and the rows written are ranked again with the rest of
  it, the rows outside it still coming after its last row, since their
  totals did not change. The first instance's ranking heads with one
  row more per instance after it (``_Request.depth``), for the later
  ones to take from. When a weigher's bounds moved (every total summed
  again), the head's last row changed or left, or the head ran down
  below what is needed, the ranking is made from the totals, as the
  full pass makes it.

Anything else (an explanation being recorded, the placement stage's
resource classes, a weigher that follows the group and counts, a plugin
that is not pure, a table the request replaced, a shared table written
more times since than its log holds) takes the full pass::

    kept = later_instances.Kept(table, result.mask, weighed, set(),
                                ranking=ranking)
    kept.written.update(rows)    # the rows its claim wrote since
    ranked = later_instances.rank_again(request, kept, index, mask, steps,
                                        skip_filters)
    if ranked is None:
        ...                      # filter and weigh every host
"""

import collections

import numpy as np

from scheduler.drivers import ranking as ranking_mod
from scheduler import filters
from scheduler import weights

# What an instance's ranking leaves for the next: the table it was made
# on, the hosts that passed, their weights (a weights.Weighed), the rows
# written since (a set the request adds to), the table's write count
# when the ranking began (None: only the request writes the table), the
# ranking itself (a ranking.Ranking, None: the next ranks anew), and how
# many hosts passed (None: counted from the mask when needed).
Kept = collections.namedtuple('Kept',
                              'table mask weighed written writes ranking '
                              'passed', defaults=(None, None, None))


# Up to how many rows written _positions_of looks for one by one.
_FEW = 8


def rank_again(request, kept, index, mask, steps, skip_filters):
    """``(result, ranking)`` for instance ``index`` of ``request`` (a
    filter scheduler's request) over ``mask``, the hosts that passed for
    the instance before, from what that instance's ranking ``kept``; the
    same as filtering and weighing every host of ``mask``. None when it
    cannot be had that way."""
    table, spec = request.table, request.spec
    if (kept is None or kept.mask is not mask or kept.table is not table
            or request.observer is not None
            or request.between_steps is not None or request.plan.needed
            or not request.driver.all_pure(request.plugins)):
        return None
    weighed = kept.weighed
    grouped = request.group is not None
    if grouped and not all(_group_free(part, spec)
                           for part in weighed.parts):
        return None
    driver = request.driver
    changed = np.array(sorted(kept.written), dtype=np.intp)
    before = weighed
    whole = [filter_obj for filter_obj in request.filters
             if filters.reads_group(filter_obj)] if grouped else ()
    if skip_filters:
        result = filters.FilterResult(request.total, steps, mask)
    else:
        result = driver.filter_handler.rerun(
            request.filters, table, mask, spec, changed, index, steps,
            request.total, whole=whole, count=kept.passed)
    dropped = _dropped(weighed.rows, result, changed, whole)
    weighed = driver.weight_handler.narrowed(weighed, dropped)
    if weighed is None:
        return None
    # Whether a total changed but at the rows written (a weigher's bounds
    # moved: every total was summed again).
    resummed = weighed is not before and weighed.resummed
    rows = weighed.rows
    positions = rows[:0]
    if len(changed) and len(rows) > 1:
        positions = _positions_of(rows, changed)
        if len(positions):
            weighed = driver.weight_handler.reweighed(
                weighed, table, positions, spec, in_place=True)
            if weighed is None:
                return None
            resummed = resummed or weighed.resummed
    depth = request.depth(index)
    ranking = None
    if kept.ranking is not None and not resummed and len(rows) > 1:
        # The last ranking, without the rows dropped, its head ranked
        # again with the rows written.
        ranking = kept.ranking.carried(rows, weighed.totals, dropped,
                                       positions, request.need, depth)
    if ranking is None:
        ranking = ranking_mod.Ranking(rows, weighed.totals, depth,
                                      table.ids, driver.tie_breaks)
    ranking.weighed = weighed
    return result, ranking


def _positions_of(rows, changed):
    """The positions in ``rows`` (ascending) of those of the rows
    ``changed`` (ascending) that it holds."""
    positions = rows.searchsorted(changed)
    if len(changed) <= _FEW:
        # (Python's comparisons: NumPy's calls cost more on a few.)
        count = len(rows)
        return np.array([position for position, row in
                         zip(positions.tolist(), changed.tolist())
                         if position < count and rows.item(position) == row],
                        dtype=np.intp)
    inside = positions < len(rows)
    positions = positions[inside]
    return positions[rows[positions] == changed[inside]]


def _dropped(rows, result, changed, whole):
    """The positions in ``rows`` (the hosts that passed for the instance
    before) of the hosts that no longer pass: none when as many pass;
    else, when every filter asked the rows ``changed`` alone (none of
    ``whole`` ran over every host), among those rows only."""
    if result.passed == len(rows):
        return rows[:0]
    if whole:
        return np.flatnonzero(~result.mask[rows])
    positions = _positions_of(rows, changed)
    return positions[~result.mask[rows[positions]]]


def _group_free(part, spec):
    """Whether a weigher's part of the last ranking holds whatever the
    request's server group now holds."""
    if not filters.reads_group(part.weigher):
        return True
    # A multiplier of 0 or a flat column: whatever the group.
    return part.skipped in (weights.ZERO, weights.FLAT) or (
        part.skipped == weights.UNIFORM and part.weigher.uniform(spec))
