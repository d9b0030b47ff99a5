"""FilterScheduler: filters, weighers, then a claim in SQL.

For each instance of a request, over the cached host table:

1. candidates: mapped compute nodes with a compute service;
2. ``requested_destination`` (host and/or node) restricts them, then
   ``ignore_hosts`` removes hosts, then ``force_hosts``/``force_nodes``
   restrict them; if forcing leaves hosts, the filters are skipped (unless
   the ``_nova_check_type`` hint asks for them), as in Nova;
3. the enabled filters run in order (``[filter_scheduler]
   enabled_filters``, or ``baremetal_enabled_filters`` when the ironic host
   manager is asked to use them), on whole columns;
4. the weighers rank what is left; one host is picked at random among the
   best ``host_subset_size`` (after shuffling the equally best ones if
   ``shuffle_best_same_weighed_hosts``);
5. the pick is claimed in SQL; a lost race moves on to the next ranked
   host. The claim is recorded in the cache, and the next instance of the
   request sees it: the resources taken and, for a request with a server
   group, the instance on its host and the host among the group's hosts
   (Nova's ``instance_group.hosts``/``members``), so that the affinity
   filters and weighers place the next instance accordingly.

If an instance cannot be placed, the claims already made for the request
are released and NoValidHost says which step removed the last hosts.

:meth:`FilterScheduler.explain` runs the same steps without claiming and
reports, per instance, the hosts each filter removed and why, and each
weigher's part in the ranking (``gantt-manage explain``)::

    driver = filter_scheduler.FilterScheduler()
    try:
        selections = driver.select_destinations(ctxt, spec, [uuid],
                                                return_alternates=True)
    except exception.NoValidHost as error:
        print(error)  # ... 0/50 hosts available: ..., RamFilter 48 -> 0
    print(driver.last_timings, driver.stats['claim_retries'])
"""

import contextlib
import itertools
import math
import operator
import threading
import time

from oslo_log import log as logging
from oslo_utils import uuidutils
import numpy as np

from scheduler import conf
from scheduler.conf import cached
from scheduler.db import claims
from scheduler.drivers import ahead as ahead_mod
from scheduler.drivers import base
from scheduler.drivers import explain as explain_mod
from scheduler.drivers import later_instances
from scheduler.drivers import placement_stage
from scheduler.drivers import ranking as ranking_mod
from scheduler import exception
from scheduler import filters
from scheduler.filters import retry_filter
from scheduler import hardware
from scheduler import host_cache
from scheduler import loadables
from scheduler import placement_types
from scheduler import prometheus
from scheduler import weights

CONF = conf.CONF
LOG = logging.getLogger(__name__)

CHECK_TYPE_HINT = placement_types.CHECK_TYPE_HINT
# The first step NoValidHost names for the 2nd..nth instance of a request.
EARLIER_INSTANCES = 'earlier instances of the request'
# A ranking made ahead is patched for at most one row written since it was
# made per this many hosts in the table, and at least one (see
# FilterScheduler._patch_shape); more rank again. On the 2-CPU development
# machine, in process, the benchmark's request (benchmarks/README.md,
# session 30): a patch costs about 95 us plus 18 us a row (each filter
# and weigher asked host by host), ranking every host about 150 us plus
# 0.008 us a host; so 2 rows at 5,000 hosts, 4 at 10,000, and at 100,000
# as many as the table's log of writes remembers (32), where a patch
# costs well under a ranking made anew.
PATCH_HOSTS_PER_ROW = 2500
# A ranking made ahead heads with this many hosts more than its requests
# need: after a claim its host (now weighing less) usually leaves the
# head, and the patch takes the next from those kept instead of looking
# through every host again (ranking.Ranking.patched), until the head is
# down to what a request needs.
AHEAD_DEPTH = 32


def patch_rows(hosts):
    """How many rows written since a ranking was made it may be patched
    for, on a table of ``hosts`` rows."""
    return max(1, hosts // PATCH_HOSTS_PER_ROW)


def restrict_candidates(table, spec, plan=None, explain=False):
    """Apply requested_destination, ignore_hosts and force_hosts/nodes,
    then the placement stage (``plan``, a
    :class:`placement_stage.Plan`: resource classes, traits, aggregates;
    forcing a host does not skip it, as in Nova).

    Returns ``(mask, steps, skip_filters)``: the hosts left, the
    :class:`filters.Step` of each restriction that applied, and whether
    forcing means the filters must not run.
    """
    mask = table.candidates
    steps = []

    def narrow(name, allowed):
        nonlocal mask
        before = int(np.count_nonzero(mask))
        mask = mask & allowed
        steps.append(filters.Step(name, before,
                                  int(np.count_nonzero(mask))))

    dest = spec.obj_get('requested_destination')
    if dest is not None and (dest.obj_get('host') or dest.obj_get('node')):
        allowed = np.ones(len(table), dtype=np.bool_)
        if dest.obj_get('host'):
            allowed &= table.hosts_mask([dest.host], ignore_case=False)
        if dest.obj_get('node'):
            allowed &= table.nodes_mask([dest.node])
        narrow('requested_destination', allowed)
        LOG.debug('Host filter only checking host %s and node %s',
                  dest.obj_get('host'), dest.obj_get('node'))
    cell = None if dest is None else dest.obj_get('cell')
    if cell is not None and not dest.obj_get('allow_cross_cell_move'):
        # Nova: a move that may not leave its cell sees only that cell.
        # The rows grouped by cell (kept with the table): no pass over
        # every host per request.
        codes, keys = table.grouped('cell_uuid',
                                    operator.attrgetter('cell_uuid'))
        narrow('requested_destination.cell', np.isin(
            codes, [code for code, key in enumerate(keys)
                    if key == cell.uuid]))
        LOG.debug('Host filter only checking hosts of cell %s', cell.uuid)
    ignore_hosts = spec.obj_get('ignore_hosts') or []
    force_hosts = spec.obj_get('force_hosts') or []
    force_nodes = spec.obj_get('force_nodes') or []
    if ignore_hosts:
        narrow('ignore_hosts', ~table.hosts_mask(ignore_hosts))
        LOG.info('Host filter ignoring hosts: %s', ', '.join(ignore_hosts))
    if force_hosts:
        narrow('force_hosts', table.hosts_mask(force_hosts))
        LOG.info('Host filter forcing available hosts to %s',
                 ', '.join(force_hosts))
    if force_nodes:
        narrow('force_nodes', table.nodes_mask(force_nodes))
        LOG.info('Host filter forcing available nodes to %s',
                 ', '.join(force_nodes))
    check_type = spec.get_scheduler_hint(CHECK_TYPE_HINT)
    skip_filters = bool(force_hosts or force_nodes) and not check_type
    if plan is not None and plan.needed:
        mask, steps = plan.cut(table, mask, steps, explain=explain)
    return mask, steps, skip_filters


def hosts_to_score(candidates, need):
    """How many hosts must pass the filters before a request may stop
    filtering (``[filter_scheduler] hosts_to_score_percent``), or None to
    filter every candidate."""
    percent = cached.group('filter_scheduler').hosts_to_score_percent
    if not percent:
        return None
    return max(need, math.ceil(candidates * percent / 100.0))


def _later(make_rows):
    """Yield the rows ``make_rows()`` returns, calling it only if asked."""
    yield from make_rows()


def _last_filter(result, claims_failed):
    """The step that removed the last host ("claims" when hosts passed
    but none could be claimed; "none" when there was no host at all)."""
    if claims_failed:
        return 'claims'
    for step in reversed(result.steps):
        if step.after == 0 and step.before > 0:
            return step.name
    return 'none'


class _Timer:
    def __init__(self):
        # filter_weigh: filter, weigh and rank, and what restricts the
        # candidates first; filter and weigh are parts of it.
        self.totals = {'filter_weigh': 0.0, 'claim': 0.0, 'filter': 0.0,
                       'weigh': 0.0}

    def add(self, name, started):
        self.totals[name] += time.perf_counter() - started


class FilterScheduler(base.Scheduler):
    """Filters, weighers and claims over the cached host table."""

    def __init__(self, host_manager=None, tie_breaks=None):
        """``tie_breaks``: a :class:`random.Random` for the order among
        equal hosts and the ``host_subset_size`` pick (see
        :mod:`scheduler.drivers.ranking`); None: seeded per process."""
        super().__init__(host_manager)
        self.tie_breaks = ranking_mod.TieBreaks(tie_breaks)
        # Unknown filters or weighers stop start-up with PluginNotFound
        # (the host manager says which filter list applies; building it
        # starts nothing).
        self._plugins = self._load_plugins()
        self.filter_handler = filters.HostFilterHandler()
        self.weight_handler = weights.HostWeightHandler()
        # The step that removed the last host in the latest NoValidHost.
        self.last_no_valid_host = None
        # The last request's shape, ranked again once it is answered and
        # nothing else is in flight (see scheduler.drivers.ahead).
        self.ahead = ahead_mod.Ahead(self.host_manager.current_table,
                                     self._rank_shape, self._busy,
                                     lambda: self.count('ranked_ahead'),
                                     patch=self._patch_shape)
        self._active = 0
        self._arrivals = 0
        self._active_lock = threading.Lock()
        self._purity = None
        # Tables of requests for several instances (see _Request).
        self.private_tables = host_cache.PrivateTables()

    @property
    def enabled_filters(self):
        return self._plugins[0]

    @property
    def weighers(self):
        return self._plugins[1]

    def _load_plugins(self):
        options = cached.group('filter_scheduler')
        option, names = self.host_manager.filter_names()
        try:
            filter_classes = loadables.load_filter_classes(
                options.available_filters, names)
        except exception.PluginNotFound as error:
            raise exception.PluginNotFound(
                '%s (in [filter_scheduler] %s)' % (error, option),
                **error.kwargs)
        weigher_classes = loadables.load_weigher_classes(
            options.weight_classes)
        return ([cls() for cls in filter_classes],
                [cls() for cls in weigher_classes])

    def reload_plugins(self):
        """Re-read ``enabled_filters`` (or ``baremetal_enabled_filters``,
        see the host manager's ``filter_names``) and ``weight_classes``
        (SIGHUP).

        Multipliers and ``host_subset_size`` are read per request. If a
        name is unknown or broken, the error is logged and the previous
        filters and weighers stay. Either way the ranking made ahead is
        dropped: the options it was made with may have changed.
        """
        self.ahead.forget()
        try:
            plugins = self._load_plugins()
        except (exception.PluginNotFound, exception.PluginLoadFailed) as e:
            LOG.error('Keeping the previous filters and weighers: %s', e)
            return False
        self._plugins = plugins
        LOG.info('Filters: %s; weighers: %s',
                 ', '.join(type(f).__name__ for f in plugins[0]),
                 ', '.join(type(w).__name__ for w in plugins[1]))
        return True

    def _host_table(self, context):
        return self.host_manager.request_snapshot()

    def idle(self):
        """No request is in flight and the last one was answered: rank
        its shape again, in the calling thread, if the host cache changed
        since it was ranked (see :mod:`scheduler.drivers.ahead`)."""
        self.ahead.idle()

    def start(self):
        self.ahead.start()
        super().start()

    def stop(self):
        self.ahead.stop()
        super().stop()

    def all_pure(self, plugins):
        """Whether every filter and weigher of ``plugins`` (a
        ``(filters, weighers)`` load) is pure (see ahead.pure)."""
        known = self._purity
        if known is None or known[0] is not plugins:
            known = self._purity = (plugins, all(map(
                ahead_mod.pure, itertools.chain(*plugins))))
        return known[1]

    def _busy(self):
        # A ranking made while other requests are in flight would be
        # stale when used: their claims write the host cache.
        return self._active > 1

    def _rank_shape(self, shape, table):
        request = _Request(self, shape.spec, None, shape.alternates, table,
                           plan=self._shape_plan(shape, table))
        if (request.need != shape.need
                or request.plugins is not shape.plugins):
            # The options or plugins changed since: not this shape.
            return None
        arrivals = self._arrivals

        def overtaken(*_args):
            if self._arrivals != arrivals:
                raise ahead_mod.Superseded()
        request.between_steps = overtaken
        request.keep_weighed = True
        return request.rank_first()

    @staticmethod
    def _shape_plan(shape, table):
        """The placement plan of ``shape``'s spec, read once for the
        rankings made ahead and their patches, and kept while the
        table's aggregates (what Nova's request filters read) are the
        ones it was read against. A copy of the request's own plan (see
        :meth:`placement_stage.Plan.copy`): a request claims by the rows
        its own plan cut."""
        held = shape.plan
        if held is None or held[0] is not table.aggregates:
            held = shape.plan = (table.aggregates, placement_stage.plan_for(
                shape.spec, table.aggregates))
        return held[1]

    def _patch_shape(self, shape, table, ranked, writes, in_place=True):
        """``ranked``, made by :meth:`_rank_shape` for ``shape`` on
        ``table`` when its write count was ``writes``, brought up to the
        table as it is now: :meth:`_Request.rank_first`'s answer, or None
        when it cannot be had that way (the shape is then ranked again).

        Filters and weighers judge a host by its own row (Nova's
        ``host_passes`` and ``_weigh_object``), and no host's liveness
        changed since (see :meth:`ahead_mod.Ahead.rank`): their answers
        for the rows not written since stand. When the few rows written
        since (a claim's reservation, the refresh's changes) passed the
        filters then and pass them now, the filter result is the same,
        and only those rows are weighed again
        (:meth:`weights.HostWeightHandler.reweighed`): the ranking a
        full run would make, for the cost of those rows. Anything else
        (a row that no longer passes or did not, a weigher that starts
        or stops counting, more rows than :func:`patch_rows` allows,
        where ranking anew costs less, writes the table no longer
        remembers, other plugins or options) ranks again.
        """
        result, ranking = ranked
        weighed = ranking.weighed
        if (weighed is None or shape.plugins is not self._plugins
                or shape.need != ranking_need(shape.alternates)):
            return None
        changed = table.rows_written_since(writes)
        if changed is None:
            return None
        # A row written more than once costs one row. (A few rows: Python's
        # set, not NumPy's sort.)
        changed = (np.unique(changed) if len(changed) > 8 else
                   np.array(sorted(set(changed.tolist())), dtype=np.intp))
        if len(changed) > patch_rows(len(table)):
            return None
        rows = weighed.rows
        positions = np.searchsorted(rows, changed)
        # (Python's comparisons: NumPy's cost more on a few values.)
        count, pairs = len(rows), list(zip(positions.tolist(),
                                           changed.tolist()))
        if any(position >= count or rows.item(position) != row
               for position, row in pairs):
            return None
        spec = shape.spec
        mask, _steps, skip_filters = restrict_candidates(
            table, spec, self._shape_plan(shape, table))
        if not all(mask.item(row) for _position, row in pairs):
            return None
        # The capacity filters and weighers each ask the spec's resources
        # (read from its flavor, extra specs and image at each call).
        with spec.resources_held():
            if not skip_filters and not self.filter_handler.all_pass(
                    self._plugins[0], table, changed, spec):
                return None
            # In place: Ahead dropped the ranking before asking for its
            # patch (unless a request may still read it: a copy then).
            weighed = self.weight_handler.reweighed(
                weighed, table, positions, spec, in_place=in_place)
        if weighed is None:
            return None
        if not weighed.resummed:
            # Only the totals at ``positions`` changed.
            patched = ranking.patched(weighed.totals, positions,
                                     shape.need)
        else:
            patched = ranking_mod.Ranking(rows, weighed.totals, ranking.need,
                                          table.ids, self.tie_breaks)
        patched.weighed = weighed
        self.count('ranked_ahead_patched')
        return result, patched

    def explain(self, context, spec):
        """How ``spec`` would be placed now, claiming nothing: an
        :class:`scheduler.drivers.explain.Explanation`."""
        spec.validate()
        recorder = explain_mod.Recorder(self.weight_handler)
        request = _Request(self, spec, None, False, self._host_table(context),
                           observer=recorder)
        try:
            request.run()
        except exception.NoValidHost as error:
            return recorder.explanation(request.total, error)
        return recorder.explanation(request.total)

    def select_destinations(self, context, spec, instance_uuids=None,
                            return_alternates=False, validated=False):
        started = time.perf_counter()
        if not validated:
            spec.validate()
        self.count('requests')
        self._warn_if_retries_unfiltered(spec)
        with self._counted(), spec.resources_held():
            request = _Request(self, spec, instance_uuids, return_alternates,
                               self._host_table(context),
                               owner=base.consumer_owner(context, spec))
            try:
                return request.run()
            except exception.NoValidHost:
                self.last_no_valid_host = request.last_filter
                self.count('no_valid_host')
                prometheus.no_valid_host(request.last_filter)
                raise
            finally:
                self._timed(request, started)

    @contextlib.contextmanager
    def _counted(self):
        with self._active_lock:
            self._active += 1
            self._arrivals += 1
        try:
            yield
        finally:
            with self._active_lock:
                self._active -= 1

    def _timed(self, request, started):
        totals = request.timer.totals
        self.last_timings = dict(totals)
        prometheus.request_timed(
            {phase: totals[phase] for phase in ('filter', 'weigh',
                                                 'claim')},
            time.perf_counter() - started)
        if request.claim_retries:
            LOG.info('Request for instance(s) %s retried %d lost '
                     'claim(s)', ', '.join(request.uuids),
                     request.claim_retries)

    def _warn_if_retries_unfiltered(self, spec):
        """A reschedule names the hosts it tried; without RetryFilter they
        may be chosen again."""
        tried = retry_filter.tried(spec)
        if not tried or any(isinstance(f, retry_filter.RetryFilter)
                            for f in self.enabled_filters):
            return
        LOG.warning('Request for %s was already tried on %s, but RetryFilter '
                    'is not enabled: those hosts may be chosen again. Add '
                    'RetryFilter to [filter_scheduler] enabled_filters to '
                    'keep them out.', spec.obj_get('instance_uuid') or
                    'an instance', ', '.join(sorted(
                        '/'.join(pair) for pair in tried)))


class _Turn:
    """Holds ``lock`` (if any) from ``with`` until :meth:`release` or the
    end of the block, whichever comes first."""

    def __init__(self, lock):
        self._lock = lock
        self._held = False

    def __enter__(self):
        if self._lock is not None:
            self._lock.acquire()
            self._held = True
        return self

    def release(self):
        if self._held:
            self._held = False
            self._lock.release()

    def __exit__(self, *exc_info):
        self.release()


def ranking_need(return_alternates):
    """How many of the best hosts a request's ranking sorts up front: the
    ``host_subset_size`` to pick from, and the alternates."""
    alternates = (cached.group('scheduler').max_attempts - 1
                  if return_alternates
                  else 0)
    return cached.group('filter_scheduler').host_subset_size + \
        alternates + 1


class _Request:
    """The work of one select_destinations call."""

    def __init__(self, driver, spec, instance_uuids, return_alternates,
                 table, observer=None, plan=None, owner=None):
        self.driver = driver
        # (project_id, user_id) the claims are recorded under.
        self.owner = owner
        # Told of each filter's effect and of each ranking (explain).
        self.observer = observer
        self.spec = spec
        self.uuids = list(instance_uuids or [])
        self.count = len(self.uuids) or spec.num_instances
        self.claiming = bool(self.uuids) and not spec.obj_get('is_rebuild')
        self.resources = spec.resources()
        # Resource classes, traits, aggregates: the placement stage.
        self.plan = (plan if plan is not None
                     else placement_stage.plan_for(spec, table.aggregates))
        # NUMA cells, pinned CPUs, pages, PCI devices: None for most.
        self.hardware = hardware.Request.from_spec(spec)
        image = spec.obj_get('image')
        self.instance_info = host_cache.info_from_flavor_and_image(
            spec.flavor, image.obj_get('properties') if image else None)
        self.return_alternates = return_alternates
        self.num_alts = (cached.group('scheduler').max_attempts - 1
                         if return_alternates else 0)
        self.need = ranking_need(return_alternates)
        self.plugins = driver._plugins
        self.filters, self.weighers = self.plugins
        # The request's shape if it may take a ranking made ahead and
        # leave one for the next request (see run), and whether it has
        # the shape of the request before it.
        self.shape = None
        self.repeats = False
        # Called between filters and between weighers (a ranking made
        # ahead stops when a request arrives).
        self.between_steps = None
        # Keep each weigher's weights with the ranking, and head it with
        # AHEAD_DEPTH hosts more (one made ahead, to be patched after the
        # next claim: see FilterScheduler._patch_shape).
        self.keep_weighed = False
        # A request for several instances sees the room its earlier
        # instances took. One that claims reads the shared table, where
        # each claim's reservation lands (HostManager.consume), its later
        # instances ranked again on the rows the table's write log names
        # since (its own claims, and those of requests that ran meanwhile:
        # see _follow_shared). Anything else (a request that claims
        # nothing, an explanation, a table the host manager replaced
        # mid-request, a state the request must put itself) accounts for
        # its instances on a table of its own that only it writes, kept
        # by the driver between requests so that it costs the rows
        # changed since, not a copy of every host (see
        # host_cache.PrivateTables). None for a single instance.
        self.shared = False
        self.private = None
        if self.count > 1:
            if self.claiming and observer is None:
                self.shared = True
            else:
                self.private = driver.private_tables.take(table)
                table = self.private.table
        # The shared table's write count when the last ranking began.
        self.ranked_at = None
        self.table = table
        # What the last instance's ranking leaves for the next (see
        # later_instances): a request for several keeps its weights.
        self.kept = None
        # Later instances ranked from what the one before kept, counted
        # in the driver's stats once the request ends (a counter's lock
        # and Prometheus's cost a few microseconds an instance).
        self.ranked_again = 0
        self.total = int(np.count_nonzero(table.candidates))
        self.timer = _Timer()
        self.claimed = []
        # Rows whose claim was lost to a concurrent request.
        self.failed = set()
        self.claim_retries = 0
        # What removed the last host when NoValidHost is raised.
        self.last_filter = None
        # A server group grows as the request's instances are placed: the
        # request works on a copy of the spec and of its group, whose
        # instance_uuid, hosts and members it sets anew (never writing
        # inside them; the other nested objects are shared, not copied).
        # Instances without a UUID (nothing claimed) are tracked under
        # made-up ones.
        self.group = spec.obj_get('instance_group')
        if self.group is not None:
            self.spec = spec.obj_shallow_copy()
            self.group = self.group.obj_shallow_copy()
            self.spec.instance_group = self.group
            self.placed_uuids = self.uuids or [
                uuidutils.generate_uuid() for _ in range(self.count)]

    def ahead_shape(self):
        """This request's :class:`ahead_mod.Shape` if it may take (and
        leave for the next) a ranking made ahead, else None."""
        options = cached.group('filter_scheduler')
        if (not options.rank_ahead or self.count != 1
                or self.group is not None or self.observer is not None
                or options.hosts_to_score_percent
                or not self.driver.all_pure(self.plugins)
                or not ahead_mod.interruptible()):
            return None
        return ahead_mod.Shape(self.spec, self.return_alternates, self.need,
                               self.plugins,
                               cached.group(None).service_down_time)

    def depth(self, index):
        """How many of the best hosts instance ``index``'s ranking sorts
        up front: :attr:`need`, and one more for each instance after it,
        whose rankings carry its head over (each takes the host the one
        before claimed out of it, at most: see
        :func:`later_instances.rank_again`), as long as the best are
        found a few at a time (``ranking.FEW_BEST``): a later instance
        that runs the head down ranks every host again."""
        return max(self.need, min(self.need + self.count - 1 - index,
                                  ranking_mod.FEW_BEST))

    def rank_first(self):
        """Filter and rank for the first instance, claiming nothing:
        ``(result, ranking)``."""
        mask, steps, skip_filters = restrict_candidates(
            self.table, self.spec, self.plan)
        return self._filter_and_rank(0, mask, steps, skip_filters)

    def run(self):
        started = time.perf_counter()
        self.shape = self.ahead_shape()
        if self.shape is not None:
            self.shape.plan = (self.table.aggregates, self.plan.copy())
            self.repeats = self.driver.ahead.note(self.shape)
        mask, steps, skip_filters = restrict_candidates(
            self.table, self.spec, self.plan,
            explain=self.observer is not None)
        self.timer.add('filter_weigh', started)
        try:
            return self._place_all(mask, steps, skip_filters)
        finally:
            if self.ranked_again:
                self.driver.count('later_instances_ranked_again',
                                  self.ranked_again)
            if self.private is not None and self.observer is None:
                # (An explanation keeps the tables it was shown.)
                self.driver.private_tables.give_back(self.private)

    def _place_all(self, mask, steps, skip_filters):
        chosen, order = [], []
        try:
            for index in range(self.count):
                result, order, row = self._place_one(index, mask, steps,
                                                     skip_filters)
                chosen.append(row)
                # The next instance starts from the hosts this one left
                # (the mask of the whole table is made only then, when
                # the filters ended on a stretch).
                steps = [filters.Step(EARLIER_INSTANCES, self.total,
                                      result.passed)]
                if self.count > 1:
                    mask = result.mask
        except Exception:
            self.driver.release(self.claimed)
            raise
        self.driver.count('instances', self.count)
        started = time.perf_counter()
        alternates = self._alternates(mask, chosen, order, skip_filters)
        self.timer.add('filter_weigh', started)
        return [[self._selection(row, self.claiming)]
                + [self._selection(alt, False) for alt in alternates[row]]
                for row in chosen]

    def _put(self, new_states, claim_only=False):
        """The request's table with ``{row: HostState}``: written into
        its private table when it has one (``claim_only``: the states
        differ in what a reservation changes at most, see
        HostTable.update_in_place), else a new table."""
        if self.shared:
            # The shared table is the host manager's to write.
            self._go_private()
        if self.kept is not None:
            self.kept.written.update(new_states)
        if self.private is not None:
            self.private.put(new_states, claim_only)
            self.table = self.private.table
        else:
            self.table = self.table.replace(new_states)

    def _selection(self, row, claimed):
        resources, extra = self._amounts(row)
        return base.make_selection(self.table.states[row], resources,
                                   claimed, extra=extra)

    def _amounts(self, row):
        """``(resources, extra)`` a claim on ``row`` takes: the flavor's
        sizes, or what the placement stage's request asks there."""
        if not self.plan.needed:
            return self.resources, None
        return self.plan.amounts(self.table, row)

    def _filter_and_rank(self, index, mask, steps, skip_filters):
        if index == 0 and self.shape is not None:
            # In the request's turn (see _place_one): a ranking made
            # before an earlier request's reservation no longer holds.
            ranked = self.driver.ahead.take(self.shape, self.table)
            if ranked is not None:
                self.driver.count('ranked_ahead_used')
                return ranked
            if self.repeats and self.claiming and self.driver._busy():
                # Under load (other requests in flight: none is ranked
                # ahead): the ranking the request before this one left,
                # patched (see ahead.Ahead.reuse); else rank, and leave
                # this one to the next.
                ranked = self.driver.ahead.reuse(self.shape, self.table)
                if ranked is not None:
                    self.driver.count('rankings_reused')
                    return ranked
                keep = self.driver.ahead.mark(self.shape, self.table)
                self.keep_weighed = True
                ranked = self._rank_all(index, mask, steps, skip_filters)
                self.keep_weighed = False
                self.driver.ahead.keep(keep, ranked)
                return ranked
        if index and self.shared:
            self._follow_shared()
        self.ranked_at = self.table.writes
        if index:
            # A later instance: from the ranking of the one before.
            ranked = later_instances.rank_again(self, self.kept, index, mask,
                                                steps, skip_filters)
            if ranked is not None:
                self.ranked_again += 1
                self._keep(*ranked)
                return ranked
        return self._rank_all(index, mask, steps, skip_filters)

    def _keep(self, result, ranking):
        """Keep what the next instance's :func:`later_instances.rank_again`
        starts from (a request for several)."""
        self.kept = later_instances.Kept(self.table, result.mask,
                                         ranking.weighed, set(),
                                         self.ranked_at, ranking,
                                         result.passed)

    def _follow_shared(self):
        """Before a later instance ranks on the shared table: the rows
        its write log names since the last ranking began (this request's
        claims, those of requests that ran meanwhile, nodes read again)
        are to be filtered and weighed again; a log that no longer
        reaches back so far leaves nothing kept (every host is ranked).
        When the host manager replaced its table meanwhile (a full read,
        a state that changed identity), the request goes on with a copy
        of the one it ranked on (see _go_private)."""
        if self.driver.host_manager.current_table() is not self.table:
            self._go_private()
            return
        kept = self.kept
        if kept is None or kept.table is not self.table:
            return
        rows = self.table.rows_written_since(kept.writes)
        if rows is None:
            self.kept = None
        else:
            kept.written.update(int(row) for row in rows)

    def _go_private(self):
        """From now on, account for this request's instances on a private
        copy of the table it ranked on (whose rows the request's masks,
        choices and failed hosts are numbered in), as a request that
        claims nothing does. The copy takes the host manager's current
        states of the nodes the request claimed on or failed to: a table
        that replaced this one holds their claims and the rows read
        again, which this one may not."""
        held = self.table
        self.shared = False
        self.kept = None
        self.driver.count('later_instances_gone_private')
        self.private = self.driver.private_tables.take(held)
        self.table = self.private.table
        current = self.driver.host_manager.current_table()
        if current is None or current is held:
            return
        nodes = {node_id for _uuid, node_id in self.claimed}
        nodes.update(held.states[row].id for row in self.failed)
        puts = {}
        for node_id in nodes:
            row = held.row_by_id.get(node_id)
            at = current.row_by_id.get(node_id)
            if row is not None and at is not None:
                puts[row] = current.states[at]
        if puts:
            self.private.put(puts)
            self.table = self.private.table

    def _rank_all(self, index, mask, steps, skip_filters):
        """Filter every candidate and weigh those that pass: ``(result,
        ranking)``."""
        started = time.perf_counter()
        need = self.need
        if skip_filters:
            result = filters.FilterResult(self.total, steps, mask)
        else:
            # Partial scoring picks the sample for the first instance; the
            # others choose among what it found.
            wanted = (hosts_to_score(int(np.count_nonzero(mask)),
                                     need + self.count - 1)
                      if index == 0 and self.observer is None else None)
            result = self.driver.filter_handler.run_filters(
                self.filters, self.table, mask, self.spec, index=index,
                steps=steps, total=self.total,
                on_filter=(self.observer and self.observer.filtered
                           or self.between_steps),
                wanted=wanted, stretch=self.observer is None)
        self.timer.add('filter', started)
        started = time.perf_counter()
        # The weighers read the stretch the filters ended on, if any (the
        # table's rows of a zone), with its row numbers.
        table = self.table
        if result.stretch is not None and all(
                map(weights.reads_stretches, self.weighers)):
            table = result.stretch
            weighed_rows = np.flatnonzero(result.stretch_mask)
            rows = weighed_rows + table.lo
        else:
            rows = weighed_rows = result.rows()
        if self.keep_weighed or self.count > 1:
            weighed = self.driver.weight_handler.weighed(
                self.weighers, table, weighed_rows, self.spec,
                between=self.between_steps)
            # Kept in the table's rows (reweighed later on the table).
            weighed.rows = rows
            host_weights = weighed.totals
        else:
            weighed = None
            host_weights = self.driver.weight_handler.weigh(
                self.weighers, table, weighed_rows, self.spec,
                between=self.between_steps)
        ranking = ranking_mod.Ranking(
            rows, host_weights, need + AHEAD_DEPTH if self.keep_weighed
            else self.depth(index), self.table.ids, self.driver.tie_breaks)
        ranking.weighed = weighed
        if self.count > 1:
            self._keep(result, ranking)
        self.timer.add('weigh', started)
        if self.observer is not None:
            self.observer.ranked(index, self.weighers, self.table, self.spec,
                                 result, ranking)
        return result, ranking

    def _place_one(self, index, mask, steps, skip_filters):
        """Choose (and claim) a host for instance ``index``."""
        started = time.perf_counter()
        if self.group is not None and self.uuids:
            # The instance being placed (a move may stay on its host).
            self.spec.instance_uuid = self.uuids[index]
        if index and self.plan.needed:
            # The earlier instances took room of the classes asked.
            mask, _steps = self.plan.cut(self.table, mask)
        # A claiming request ranks and reserves its host in its turn: two
        # requests of this process never rank on the same rows before
        # either reserved (see Scheduler.placement_lock).
        with _Turn(self.driver.placement_lock if self.claiming
                   else None) as turn:
            result, ranking = self._filter_and_rank(index, mask, steps,
                                                    skip_filters)
            options = cached.group('filter_scheduler')
            order = ranking.pick_order(
                options.host_subset_size,
                options.shuffle_best_same_weighed_hosts)
            self.timer.add('filter_weigh', started)
            if not result.passed:
                raise exception.NoValidHost(reason=self._reason(index,
                                                                result))

            row = self._claim_first(index, order, ranking, turn.release)
        self._rank_next()
        if row is None:
            raise exception.NoValidHost(reason=self._reason(
                index, result, claims_failed=True))
        if self.observer is not None:
            self.observer.placed(index, self.table.states[row])
        if self.count > 1 and not self.shared:
            # Later instances, and the re-ranking for alternates, see the
            # room this one took (on the shared table, its claim's
            # reservation). (A single instance skips it.)
            resources, extra = self._amounts(row)
            state, record = self.table.states[row].reserved(
                resources, self.hardware, extra or None)
            # (As HostManager.consume puts a claim in the shared table.)
            self._put({row: state}, claim_only=record is None)
        if self.group is not None:
            self._join_group(index, row)
        return result, order, row

    def _rank_next(self):
        """Rank this request's shape again for the next one, once the
        server is idle, if it repeats the shape of the request before it
        (see scheduler.drivers.ahead)."""
        if self.shape is not None and self.repeats:
            self.driver.ahead.later(self.shape)

    def _join_group(self, index, row):
        """Instance ``index`` is on ``row``'s host, for the instances of
        the request that come after it."""
        uuid = self.placed_uuids[index]
        host = self.table.states[row].host
        if uuid not in self.table.states[row].instances:
            # Instances fill no column.
            self._put(host_cache.states_with_instance(
                self.table, row, uuid, self.instance_info), claim_only=True)
        if host not in self.group.hosts:
            self.group.hosts = list(self.group.hosts) + [host]
        if uuid not in self.group.members:
            self.group.members = list(self.group.members) + [uuid]

    def _claim_first(self, index, order, ranking, on_reserved=None):
        """Claim on the first host of ``order`` (then of the rest of the
        ranking) that still has room; its row, or None.

        With a hard server-group policy the claim checks it in SQL; when
        another member claimed meanwhile where the policy now forbids
        this one, the hosts the policy rules out are skipped without
        asking the database again.
        """
        if not self.claiming:
            return order[0]
        uuid = self.uuids[index]
        group_uuid = claims.hard_group_uuid(self.spec)
        conflict = None
        started = time.perf_counter()
        try:
            for row in itertools.chain(order, _later(ranking.rest)):
                state = self.table.states[row]
                if conflict is not None and not conflict.allows(state.host):
                    self.failed.add(row)
                    continue
                resources, extra = self._amounts(row)
                won = self.driver.claim(state, uuid, resources,
                                        self.instance_info, group_uuid,
                                        on_reserved, self.hardware,
                                        extra=extra, owner=self.owner)
                if won:
                    self.claimed.append((uuid, state.id))
                    return row
                self.failed.add(row)
                self.claim_retries += 1
                if won is False:
                    self._reload_row(row)
                else:
                    conflict = won
            return None
        finally:
            self.timer.add('claim', started)

    def _reload_row(self, row):
        """Take the row the lost claim made the host manager re-read
        (already there on the shared table)."""
        if self.shared:
            return
        node_id = self.table.states[row].id
        shared = self.driver.host_manager.snapshot()
        if node_id in shared.row_by_id:
            fresh = shared.states[shared.row_by_id[node_id]]
            self._put({row: fresh})

    def _alternates(self, mask, chosen, order, skip_filters):
        """``{chosen row: up to num_alts unclaimed next-best hosts}``, as
        in Nova: each instance's alternates are in the cell of its host
        (a reschedule is its cell conductor's, which claims only in its
        own database); without cells, the same next-best hosts for all.
        """
        states = self.table.states
        by_cell = {states[row].cell_uuid: [] for row in chosen}
        if self.num_alts:
            ranking = None
            if self.count > 1:
                # Re-rank: the chosen hosts have consumed resources since.
                _result, ranking = self._filter_and_rank(
                    self.count - 1, mask, [], skip_filters)
                order = [int(row) for row in ranking.head]
            excluded = set(chosen) | self.failed
            rest = _later(ranking.rest) if ranking is not None else ()
            short = len(by_cell)
            for row in itertools.chain(order, rest):
                if not short:
                    break
                if row in excluded:
                    continue
                found = by_cell.get(states[row].cell_uuid)
                if found is not None and len(found) < self.num_alts:
                    found.append(row)
                    short -= len(found) == self.num_alts
        return {row: by_cell[states[row].cell_uuid] for row in chosen}

    def _reason(self, index, result, claims_failed=False):
        self.last_filter = _last_filter(result, claims_failed)
        if claims_failed:
            text = ('%d host(s) passed the filters but none could be '
                    'claimed: concurrent requests took the room (or, for '
                    'a server group, the hosts its policy allowed). %s'
                    % (result.passed, result.explain()))
        else:
            text = 'There are not enough hosts available. %s' % (
                result.explain())
        if self.count > 1:
            text = 'Instance %d of %d: %s' % (index + 1, self.count, text)
        LOG.info('No valid host: %s', text)
        return text
