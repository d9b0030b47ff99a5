"""Host filters: the base class, the capacity base, and the handler.

A filter decides whether a host may take an instance of a request. Its
contract is Nova's::

    class MyFilter(filters.BaseHostFilter):
        run_filter_once_per_request = False   # True: skip for the 2nd..nth
                                              # instance of a request
        RUN_ON_REBUILD = False                # True: also run on rebuild

        def host_passes(self, host_state, spec):
            return host_state.stats.get('gpu') == 'yes'

``host_passes`` reads the HostState and the RequestSpec and changes
neither. That is all a third-party filter needs. A filter whose answer
depends on nothing but them and the options says so with ``pure =
True``: the scheduler may then run it ahead of a request (while the
request before it waits for its claim), on the host cache as it is then,
and use the answer as long as the cache was not written (see
:mod:`scheduler.drivers.ahead`). Gantt's own
filters are pure (ComputeFilter reads the clock too, through
``service_up``, which the scheduler accounts for); one that asks a
service, a database or the clock is not, and the default, False, keeps
such a filter running when each request arrives. A subclass that reads
more than its pure parent must set it back to False.

The later instances of a request for several are filtered again only on
the rows the earlier instances changed (:meth:`HostFilterHandler.rerun`)
when every filter is pure: a pure filter judges a host by its own row.
One whose answer for a host also follows the request's server group or
the instance being placed, which grow from one instance to the next
(ServerGroupAffinityFilter: once a member has a host, every other host
fails), says so with ``reads_group = True``; it then runs over every
host for each instance.

The built-in filters also give the batch path the handler prefers,
``filter_all(host_table, mask, spec) -> mask``: given the whole
:class:`scheduler.host_cache.host_table.HostTable` and a boolean mask of the
hosts still in the running, return the mask of those that pass, computed over
NumPy columns. The base class implements ``filter_all`` by calling
``host_passes`` for every host left, so both paths always exist.

:class:`HostFilterHandler` runs the enabled filters in order and records
how many hosts each one left, so that a NoValidHost can say which filter
removed the last hosts::

    result = filters.HostFilterHandler().run_filters(
        enabled, table, table.candidates, spec)
    if not result.passed:
        raise exception.NoValidHost(reason=result.explain())
    # "0/50 hosts available: ComputeFilter 50 -> 48, RamFilter 48 -> 0
    #  (removed the last 48)"

Partial scoring (``[filter_scheduler] hosts_to_score_percent``, after
Kubernetes' percentageOfNodesToScore): given ``wanted``, the handler
filters the candidates in windows that start at a rotating offset and
stops once ``wanted`` hosts passed, so that the weighers rank a part of a
large cloud, and every host gets its turn over successive requests. A
step ``hosts_to_score_percent N -> M`` then says how many candidates
were looked at. ``wanted`` at or above the candidate count filters them
all, exactly as without it.

Stretches (``stretch=True``, what the filter scheduler asks for when no
one watches the masks): once the filters left only hosts within one
stretch of rows that is at most half of a large table (a zone, in a
table built by zone), or before a filter that passes no host outside
one (``passing_rows``: the AvailabilityZoneFilter's zone), the filters
from there run on a :class:`scheduler.host_cache.Stretch` of it and the
stretch's part of the mask, and the result says so
(:attr:`FilterResult.stretch`), for the weighers to read the stretch
too. The masks, counts and steps are the ones the whole table gives. A
filter of its own kind runs on a stretch only if it says
``reads_stretches = True`` or keeps the base class's ``filter_all``;
else the table's rows stay whole.
"""

import collections

from oslo_log import log as logging
import numpy as np

from scheduler import host_cache

LOG = logging.getLogger(__name__)

Step = collections.namedtuple('Step', 'name before after')


class BaseHostFilter:
    """Base class of host filters (see the module docstring)."""

    # Filters whose answer cannot change between the instances of one
    # request set this, and run only for the first instance.
    run_filter_once_per_request = False

    # Nova's default: a rebuild keeps the instance on its host and its
    # resources, so filters run on rebuild only if they set this to True.
    RUN_ON_REBUILD = False

    # True: the answer depends only on the host table, the spec and the
    # options (see the module docstring).
    pure = False

    # True: the answer for a host may change when the request's server
    # group (its hosts and members) or the instance being placed change,
    # as they do from one instance of a request to the next, although the
    # host's row did not (see the module docstring).
    reads_group = False

    def passing_rows(self, host_table, spec):
        """``(lo, hi)``: rows of ``host_table`` outside which no host
        passes for ``spec``, or None (any row may). The handler may then
        run this filter and the ones after on that stretch of the table
        alone (see the module docstring)."""
        return None

    def host_passes(self, host_state, spec):
        """True if the host may take one instance of ``spec``."""
        raise NotImplementedError()

    def filter_all(self, host_table, mask, spec):
        """Mask of the hosts of ``mask`` that pass; see the module doc."""
        return host_passes_each(self, host_table, mask, spec)

    def run_filter_for_index(self, index):
        """False for the 2nd..nth instance of once-per-request filters."""
        return not (self.run_filter_once_per_request and index > 0)


def host_passes_each(filter_obj, host_table, mask, spec):
    """Batch path of a filter that only has ``host_passes``."""
    passed = np.zeros(len(host_table), dtype=np.bool_)
    states = host_table.states
    for row in np.flatnonzero(mask):
        passed[row] = bool(filter_obj.host_passes(states[row], spec))
    return passed


def decide_per_group(host_table, mask, name, key, decide):
    """The rows of ``mask`` whose group passes: the rows are grouped by
    ``key(state)`` (see :meth:`HostTable.grouped`, kept under ``name``)
    and ``decide(state)`` runs once per group, for one of its rows in
    ``mask``. For filters whose answer is a costly function of a few
    values many hosts share."""
    codes, keys = host_table.grouped(name, key)
    decided = np.zeros(len(keys), dtype=np.bool_)
    answers = np.zeros(len(keys), dtype=np.bool_)
    states = host_table.states
    for row in np.flatnonzero(mask):
        code = codes[row]
        if not decided[code]:
            decided[code] = True
            answers[code] = decide(states[row])
    return mask & answers[codes]


class CapacityFilter(BaseHostFilter):
    """Passes hosts with room for one instance of one resource.

    ``resource`` is a field of :class:`scheduler.db.claims.Resources`.
    Room is what the claim checks: capacity ``total * allocation_ratio -
    reserved``, and a request fits if ``used + requested <= capacity``;
    nothing requested always fits.
    """

    pure = True

    resource = None
    unit = ''

    def host_passes(self, host_state, spec):
        amount = getattr(spec.resources(), self.resource)
        if host_state.fits(self.resource, amount):
            return True
        LOG.debug('%(host)s does not have %(amount)s %(unit)s usable '
                  '%(resource)s, it only has %(usable)s',
                  {'host': host_state, 'amount': amount, 'unit': self.unit,
                   'resource': self.resource,
                   'usable': host_state.capacity(self.resource)
                   - host_state.used(self.resource)})
        return False

    def filter_all(self, host_table, mask, spec):
        amount = getattr(spec.resources(), self.resource)
        if amount <= 0:
            return mask
        if float(amount).is_integer():
            # The same test in one pass (see host_table._room).
            return mask & host_table.at_least('room_' + self.resource,
                                              amount)
        return mask & (host_table.used[self.resource] + amount
                       <= host_table.capacity[self.resource])


# A table of fewer rows than this is never filtered in stretches.
STRETCH_MIN_ROWS = 16384


def stretch_of(mask):
    """``(lo, hi)``: the first row of ``mask`` that is set and one past
    the last, when they lie within half of it at most and it has
    :data:`STRETCH_MIN_ROWS` rows or more; else None (``mask`` has a row
    set)."""
    count = len(mask)
    if count < STRETCH_MIN_ROWS:
        return None
    lo = int(mask.argmax())
    if not mask[lo]:
        return None
    # The last row set: blocks from the end (an argmax over a reversed
    # view of a million rows takes 0.3 ms, over one block 20 us).
    stop = count
    while stop > lo:
        start = max(lo, stop - _LAST_ROW_BLOCK)
        block = mask[start:stop]
        if block.any():
            hi = stop - int(block[::-1].argmax())
            return (lo, hi) if hi - lo <= count // 2 else None
        stop = start
    return None


_LAST_ROW_BLOCK = 1 << 16


class FilterResult:
    """The hosts left after filtering and how each step narrowed them.

    ``steps`` is a list of :data:`Step` ``(name, before, after)``; a step
    is a filter, or a restriction such as ``ignore_hosts``. ``mask``: the
    hosts that passed, a row per table row. ``stretch``: None, or the
    :class:`scheduler.host_cache.Stretch` the last filters ran on
    (``stretch_mask``: the hosts that passed, a row per stretch row;
    ``mask`` is then made from it when first read).
    """

    def __init__(self, total, steps, mask, stretch=None, passed=None):
        self.total = total
        self.steps = list(steps)
        self.stretch = stretch
        if stretch is None:
            self._mask, self.stretch_mask = mask, None
        else:
            self._mask, self.stretch_mask = None, mask
        # ``passed``: how many hosts ``mask`` holds, from a caller that
        # counted them (a pass over every host's flag otherwise).
        self.passed = (int(np.count_nonzero(mask)) if passed is None
                       else passed)

    @property
    def mask(self):
        if self._mask is None:
            stretch = self.stretch
            mask = np.zeros(len(stretch.table), dtype=np.bool_)
            mask[stretch.lo:stretch.hi] = self.stretch_mask
            self._mask = mask
        return self._mask

    def rows(self):
        """The table's rows that passed, ascending."""
        if self.stretch is None:
            return np.flatnonzero(self._mask)
        rows = np.flatnonzero(self.stretch_mask)
        rows += self.stretch.lo
        return rows

    def explain(self):
        """``"0/50 hosts available: AFilter 50 -> 50, BFilter 50 -> 0
        (removed the last 50)"``, naming no host."""
        parts = []
        for step in self.steps:
            text = '%s %d -> %d' % (step.name, step.before, step.after)
            if step.after == 0 and step.before > 0:
                text += ' (removed the last %d)' % step.before
            parts.append(text)
        summary = '%d/%d hosts available' % (self.passed, self.total)
        if not parts:
            return summary
        return '%s: %s' % (summary, ', '.join(parts))


def _is_rebuild(spec):
    getter = getattr(spec, 'obj_get', None)
    if getter is not None:
        return bool(getter('is_rebuild', False))
    return bool(getattr(spec, 'is_rebuild', False))


# The first window of a partial scoring pass holds this many times the
# hosts wanted (few fail the filters in a cloud with room); each next
# window doubles.
FIRST_WINDOW_FACTOR = 2
PARTIAL_STEP = 'hosts_to_score_percent'


# Up to how many lists of filters a HostFilterHandler keeps what runs of.
_RUNS_KEPT = 16


class HostFilterHandler:
    """Runs filters in order over a host table."""

    def __init__(self):
        # Where the next partial scoring pass starts, among the candidates.
        self.next_start = 0
        # {(filters, later instance, rebuild): _running's answer}.
        self._runs = {}

    def _running(self, filters, index, rebuild):
        """``(the filters of ``filters`` that run for instance ``index``,
        whether each of them may run on a stretch)``: found once per list
        of filters and kind of instance (a request may run the filters
        twice per instance, and asking each filter costs a few
        microseconds)."""
        # (By identity: a filter of its own may not be hashable. The
        # entry holds every filter of the list, so no id is reused while
        # it is kept.)
        key = (tuple(map(id, filters)), index > 0, rebuild)
        found = self._runs.get(key)
        if found is None:
            running = tuple(filter_obj for filter_obj in filters
                            if _runs_for(filter_obj, index, rebuild))
            found = (running, all(map(_reads_stretches, running)),
                     tuple(filters))
            if len(self._runs) >= _RUNS_KEPT:
                # Lists of filters reloaded many times over.
                self._runs.clear()
            self._runs[key] = found
        return found[:2]

    def run_filters(self, filters, host_table, mask, spec, index=0,
                    steps=(), total=None, on_filter=None, wanted=None,
                    stretch=False):
        """Apply ``filters`` to the hosts of ``mask``; a FilterResult.

        :param index: which instance of the request this is (0-based);
            once-per-request filters only run for index 0.
        :param steps: earlier restrictions to report before the filters.
        :param total: the host count the explanation starts from
            (default: the hosts in ``mask``).
        :param on_filter: called as ``on_filter(filter_obj, host_table,
            spec, before, after)`` with the masks around each filter that
            ran (what ``gantt-manage explain`` reports).
        :param wanted: stop once this many hosts passed (see the module
            docstring); None filters every host of ``mask``.
        :param stretch: filter on a stretch of the table once the hosts
            left lie within one (see the module docstring); ``on_filter``
            is then given the stretch and its masks.
        """
        if wanted is not None:
            rows = np.flatnonzero(mask)
            if wanted < len(rows):
                return self._run_partial(filters, host_table, rows, spec,
                                         index, steps, total, on_filter,
                                         wanted)
        return self._run_all(filters, host_table, mask, spec, index, steps,
                             total, on_filter, stretch=stretch)

    def all_pass(self, filters, host_table, rows, spec, index=0):
        """Whether every one of ``rows`` passes the filters that run for
        instance ``index``, asked host by host (``host_passes``, which
        the batch paths agree with): for a few rows, far cheaper than
        the batch paths, which read whole columns whatever the mask."""
        running, _stretches = self._running(filters, index,
                                            _is_rebuild(spec))
        states = host_table.states
        return all(filter_obj.host_passes(states[row], spec)
                   for row in rows for filter_obj in running)

    def _run_partial(self, filters, host_table, rows, spec, index, steps,
                     total, on_filter, wanted):
        """Filter windows of ``rows`` from a rotating start until
        ``wanted`` hosts passed; one FilterResult for all of them."""
        start = self.next_start % len(rows)
        order = np.concatenate((rows[start:], rows[:start]))
        found = np.zeros(len(host_table), dtype=np.bool_)
        counts = {}
        scanned, size = 0, wanted * FIRST_WINDOW_FACTOR
        while scanned < len(order) and int(np.count_nonzero(found)) < wanted:
            window = np.zeros(len(host_table), dtype=np.bool_)
            window[order[scanned:scanned + size]] = True
            scanned += min(size, len(order) - scanned)
            size *= 2
            result = self._run_all(filters, host_table, window, spec, index,
                                   (), None, on_filter)
            found |= result.mask
            for step in result.steps:
                before, after = counts.get(step.name, (0, 0))
                counts[step.name] = (before + step.before,
                                     after + step.after)
        self.next_start = start + scanned
        steps = list(steps)
        if scanned < len(order):
            steps.append(Step(PARTIAL_STEP, len(order), scanned))
        steps.extend(Step(name, before, after)
                     for name, (before, after) in counts.items())
        LOG.debug('Partial scoring: %d of %d host(s) filtered, %d passed',
                  scanned, len(order), int(np.count_nonzero(found)))
        return FilterResult(len(rows) if total is None else total, steps,
                            found)

    def rerun(self, filters, host_table, mask, spec, changed, index,
              steps=(), total=None, whole=(), count=None):
        """:meth:`run_filters` over every host of ``mask`` when the
        filters that run for instance ``index`` passed every row of
        ``mask`` on this table and spec but the rows ``changed`` (written
        since), and still do: only ``changed`` are asked again, host by
        host, except by the filters in ``whole`` (their answer may have
        changed for any host), which run over every host of ``mask``.
        The same FilterResult, steps and counts included, for the cost
        of a few rows. ``count``: how many hosts ``mask`` holds, if the
        caller knows (None: counted)."""
        states = host_table.states
        changed = [int(row) for row in changed]
        whole = {id(filter_obj) for filter_obj in whole}

        def judge(filter_obj, current, count):
            if id(filter_obj) in whole:
                passed = _filtered(filter_obj, current, host_table, spec)
                # (The mask given back: the filter removed none.)
                return passed, count if passed is current else None
            failing = [row for row in changed if current.item(row)
                       and not filter_obj.host_passes(states[row], spec)]
            if not failing:
                return current, count
            passed = current.copy()
            passed[failing] = False
            return passed, count - len(failing)
        return self._run_all(filters, host_table, mask, spec, index, steps,
                             total, None, judge=judge, count=count)

    def _run_all(self, filters, host_table, mask, spec, index, steps, total,
                 on_filter, judge=None, stretch=False, count=None):
        """Every filter that runs for ``index`` over ``mask``: a
        FilterResult. ``judge(filter, mask, count)``: ``(the mask a
        filter passes, its count)`` given ``mask`` and its ``count``
        (default: the filter's batch path). A judge that knows the mask
        it gives is within ``mask`` says how many it holds (``mask``
        itself, and ``count``, when the filter removed nothing: no array
        is built or counted again), else gives None for the count.
        ``stretch``: see :meth:`run_filters` (not with a judge).
        ``count``: how many hosts ``mask`` holds, if the caller knows."""
        if count is None:
            count = int(np.count_nonzero(mask))
        total = count if total is None else total
        steps = list(steps)
        rebuild = _is_rebuild(spec)
        # Asked once: a debug call that logs nothing still costs about a
        # microsecond, twice a filter, and a request may run every
        # filter twice per instance.
        debug = LOG.isEnabledFor(logging.DEBUG)
        if debug:
            LOG.debug('Starting with %d host(s)', count)
        running, stretches = (self._running(filters, index, rebuild)
                              if count else ((), True))
        # Whether the filters left to run may be given a stretch.
        stretchable = stretch and judge is None and stretches
        on_stretch = None
        # Whether ``mask`` was made here (a filter that gives back the
        # mask it was given removed none: its count stands, without the
        # pass over every host's flag and its count; the mask given may
        # be a column of the table, written in place later).
        own = False
        for filter_obj in running:
            if stretchable and on_stretch is None:
                found = _stretch_before(filter_obj, host_table, mask, count,
                                        spec)
                if found is not None:
                    on_stretch = host_cache.Stretch(host_table, *found)
                    host_table = on_stretch
                    mask = mask[found[0]:found[1]]
                    # (Hosts outside the stretch may have been left:
                    # the filter counts again.)
                    own = False
            name = type(filter_obj).__name__
            before_mask, before = mask, count
            if judge is None:
                passed = _filtered(filter_obj, mask, host_table, spec)
                if passed is not mask or not own:
                    count = None
            else:
                passed, count = judge(filter_obj, mask, count)
            if count is None:
                # A filter can only remove hosts, never bring one back.
                mask = mask & np.asarray(passed, dtype=np.bool_)
                count = int(np.count_nonzero(mask))
                own = True
            else:
                mask = passed
            if on_filter is not None:
                on_filter(filter_obj, host_table, spec, before_mask, mask)
            steps.append(Step(name, before, count))
            if debug:
                LOG.debug('Filter %s returned %d host(s)', name, count)
            if not count:
                LOG.info('Filter %s returned 0 hosts', name)
                break
        return FilterResult(total, steps, mask, on_stretch, passed=count)


def _stretch_before(filter_obj, host_table, mask, count, spec):
    """The stretch ``(lo, hi)`` of ``host_table`` that ``filter_obj`` may
    run on, given the hosts left (``mask``, ``count`` of them): the one
    they lie in, or the one outside which the filter passes none (its
    ``passing_rows``: the rows of a zone); None if neither is half the
    table at most, or the table is small."""
    size = len(mask)
    if size < STRETCH_MIN_ROWS:
        return None
    if count * 2 <= size:
        found = stretch_of(mask)
        if found is not None:
            return found
    passing = getattr(filter_obj, 'passing_rows', None)
    found = None if passing is None else passing(host_table, spec)
    if found is not None and (found[1] - found[0]) * 2 <= size:
        return found
    return None


def _reads_stretches(filter_obj):
    return host_cache.reads_stretches(filter_obj, BaseHostFilter,
                                      ('filter_all',))


def _filtered(filter_obj, mask, host_table, spec):
    """The mask ``filter_obj`` passes of ``mask``: its batch path."""
    if isinstance(filter_obj, BaseHostFilter):
        return filter_obj.filter_all(host_table, mask, spec)
    return host_passes_each(filter_obj, host_table, mask, spec)


def reads_group(plugin):
    """Whether a filter's or weigher's answer may follow the request's
    server group or the instance being placed (``reads_group``; one that
    does not say may)."""
    return getattr(plugin, 'reads_group', True) is not False


def _runs_for(filter_obj, index, rebuild):
    if rebuild and not getattr(filter_obj, 'RUN_ON_REBUILD', False):
        return False
    if getattr(filter_obj, 'run_filter_once_per_request', False) and index:
        return False
    return True
