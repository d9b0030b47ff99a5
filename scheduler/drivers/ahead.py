"""Ranking a request's shape ahead of the next request of that shape.

A caller that asks for one instance at a time waits, in every request,
for the filters and weighers to run over the whole host cache: 1-2 ms at
10,000 hosts in a busy daemon, several at 100,000. Most such requests
have the shape of the one before: the same flavor, image, project and
hints, for another instance. So when a request that repeats the shape
of the one before it (:meth:`Ahead.note`: a run of one shape, as a batch
of boots makes, not a mix of flavors where the work would be wasted) has
been answered and the RPC server has nothing else in flight
(:meth:`Ahead.idle`, from the server's ``on_idle``), the thread that
sent the reply filters and weighs that shape again on the cache as it is
now (the request's claim included), and keeps the ranking with what it
depends on:

* the request spec, but for its instance uuid (field by field);
* the host table: the same object, written no more times since
  (:attr:`scheduler.host_cache.host_table.HostTable.writes`): a lost claim,
  another request's reservation or a refresh that changed a row ends it;
* the time: until the first compute service's heartbeat leaves the
  ``service_down_time`` window or enters it
  (:meth:`~scheduler.host_cache.host_table.HostTable.liveness_changes_at`), the
  one input of a filter that changes by itself;
* the filters and weighers loaded, and the size of the ranking (the best
  ``host_subset_size`` plus the alternates).

When the table was written since, and a ranking is to be made for the
same shape again, the one held is patched if it can be (``patch``: the
filter scheduler filters and weighs again only the rows written since,
see ``filter_scheduler.FilterScheduler._patch_shape``): after a
request's own claim, the cost of one row, not of all the hosts.

The next request of that shape that arrives while all of these hold
takes the ranking (:meth:`Ahead.take`) instead of filtering and weighing,
and still draws its pick among the best in its own turn, as it would
have: its answer is the one it would have computed. Anything else ranks
on arrival, as before. None is made while requests are in flight (their
claims would make it stale), one under way stops when a request arrives,
and a reload of the filters, weighers or options (SIGHUP) forgets it.

Why after the reply, and in that thread: the ranking used to run in a
thread of its own at the lowest CPU priority, started as the request
reserved its host, to overlap the claim's wait for the database. When
the machine's CPUs were busy with other work, that thread was preempted
while it held the interpreter, and the claim's return waited for it. On
the 2-CPU benchmark machine with one CPU kept busy by another process,
the claim took 0.9-1.6 ms in the scheduler with that thread and
0.53-0.9 ms ranking after the reply (``benchmarks/README.md``, session
20). Ranked after the reply, the ranking's CPU time is off the request's
path in the scheduler; on that machine it still shares the CPUs with
the caller and the broker, which a deployment runs elsewhere.

The driver decides which requests qualify (``[filter_scheduler]
rank_ahead``; one instance, no server group, no partial scoring, plugins
that declare ``pure = True``: see :func:`pure`)::

    ahead = Ahead(host_manager.current_table, rank_shape, busy)
    repeats = ahead.note(shape)             # on arrival
    ranked = ahead.take(shape, table)       # in its turn; None: rank now
    ...
    if repeats:
        ahead.later(shape)  # placed: rank it again at the next idle()
    ...
    ahead.idle()            # answered, nothing in flight: rank it here
"""

import collections
import threading
import weakref

from oslo_log import log as logging
from oslo_service import backend as service_backend
from oslo_versionedobjects import base as ovo_base

from scheduler import host_cache

LOG = logging.getLogger(__name__)


def interruptible():
    """Whether a request that arrives while a ranking is made ahead can
    stop it: with native threads (Gantt's default) the request's thread
    runs beside the ranking, which stops at its next filter or weigher;
    under eventlet (``GANTT_USE_EVENTLET``) the ranking would hold every
    green thread until it is done, and the request would wait for it."""
    return (service_backend.get_backend_type()
            != service_backend.BackendType.EVENTLET)


def pure(plugin):
    """Whether a filter or weigher declares (``pure = True``) that its
    answer depends only on the host table, the request spec and the
    options, so that it may run ahead of a request."""
    return getattr(plugin, 'pure', False) is True


_UNSET = object()


def same_values(first, second, skip=()):
    """Whether two versioned objects hold the same field values (nested
    objects compared the same way), ignoring the fields in ``skip``."""
    if type(first) is not type(second):
        return False
    # oslo.versionedobjects keeps a set field's value in ``_obj_<name>``:
    # read it there rather than through the field's property (this runs
    # on the request's path).
    ours, theirs = first.__dict__, second.__dict__
    for name in first.fields:
        if name in skip:
            continue
        key = '_obj_' + name
        value = ours.get(key, _UNSET)
        other = theirs.get(key, _UNSET)
        if value is _UNSET or other is _UNSET:
            if value is not other:
                return False
        elif not _same(value, other):
            return False
    return True


def _same(first, second):
    if isinstance(first, ovo_base.VersionedObject):
        return same_values(first, second)
    if isinstance(first, (list, tuple)):
        return (type(first) is type(second) and len(first) == len(second)
                and all(_same(a, b) for a, b in zip(first, second)))
    if isinstance(first, dict):
        return (isinstance(second, dict) and first.keys() == second.keys()
                and all(_same(value, second[key])
                        for key, value in first.items()))
    return type(first) is type(second) and first == second


class Shape:
    """What a request's ranking depends on, besides the host table and
    the time: its spec (less the instance uuid), whether it asked for
    alternates and how many hosts its ranking sorts, the plugins loaded
    (one object per load) and ``service_down_time``."""

    __slots__ = ('spec', 'alternates', 'need', 'plugins', 'down_time',
                 'plan')

    def __init__(self, spec, alternates, need, plugins, down_time):
        self.spec = spec
        self.alternates = alternates
        self.need = need
        self.plugins = plugins
        self.down_time = down_time
        # The driver's reading of the spec (its placement stage's plan),
        # kept with what it was read against; see
        # FilterScheduler._shape_plan.
        self.plan = None

    def matches(self, other):
        return (self.need == other.need
                and self.alternates == other.alternates
                and self.plugins is other.plugins
                and self.down_time == other.down_time
                and same_values(self.spec, other.spec,
                                skip=('instance_uuid',)))


# ``table``: a weak reference, so that a ranking held after the host
# cache was rebuilt (a full read every 300 s) does not keep the old table.
_Held = collections.namedtuple('_Held', 'shape table writes until ranked')


class Superseded(Exception):
    """Raised by a ranking made ahead that a request overtook: that
    request ranks itself, and the two would share the CPU for nothing."""


class Ahead:
    """One ranking made ahead of time and the shape to make it for. It
    has no thread of its own: :meth:`idle` ranks in the caller's."""

    def __init__(self, snapshot, rank_shape, busy=None, on_ranked=None,
                 patch=None):
        """``snapshot()``: the current host table (None: not loaded);
        ``rank_shape(shape, table)``: the ranking (None: not this shape
        any more); ``busy()``: True while requests are in flight that
        would make a ranking stale before it is used (default: never);
        ``on_ranked()``: called for each ranking kept; ``patch(shape,
        table, ranked, writes)``: the ranking ``ranked``, made for
        ``shape`` on ``table`` when its write count was ``writes`` (no
        host's liveness changed since), brought up to the table as it
        is now, the ranking ``rank_shape`` would make, or None
        (``rank_shape`` then ranks; default: it always does); it may
        reuse what ``ranked`` holds, which is no longer held once given
        to it."""
        self._snapshot = snapshot
        self._rank_shape = rank_shape
        self._patch = patch
        self._busy = busy or (lambda: False)
        self._on_ranked = on_ranked
        self._next = None
        self._held = None
        # The shape of the last request noted (see note()), and the pair
        # (earlier shape, that one) when note() found they match: take()
        # then need not compare them again.
        self._last = None
        self._repeated = None
        # One ranking at a time.
        self._ranking = threading.Lock()
        self._stopped = False

    def note(self, shape):
        """A request of ``shape`` arrived: True if the request before it
        had the same shape. Only then is it worth ranking ahead for the
        next one (a run of one flavor, as a batch of boots makes); a
        shape that does not repeat the last one drops the shape to rank
        when idle."""
        last, self._last = self._last, shape
        repeats = last is not None and last.matches(shape)
        self._repeated = (last, shape) if repeats else None
        if not repeats:
            self._next = None
        return repeats

    def later(self, shape):
        """Rank ``shape`` at the next :meth:`idle` (a request of that
        shape was placed)."""
        self._next = shape

    def idle(self):
        """The server answered its last request and has none in flight:
        rank the last shape given (:meth:`later`) here, in the calling
        thread, unless it is ranked on the current table already or
        :meth:`stop` was called. True if a ranking was made and kept."""
        if self._stopped or not self.rank():
            return False
        if self._on_ranked is not None:
            self._on_ranked()
        return True

    def start(self):
        """Rank ahead again after :meth:`stop` (a service restarted in
        the same process)."""
        self._stopped = False

    def stop(self):
        """Make no more rankings at :meth:`idle` (one under way in
        another thread ends as it would)."""
        self._stopped = True

    def holds(self, table):
        """Whether a ranking is held for ``table`` as it is now."""
        return self._held_for(table) is not None

    def _held_for(self, table):
        held = self._held
        if (held is None or held.table() is not table
                or held.writes != table.writes):
            return None
        return held

    def forget(self):
        """Drop the shape and the ranking (the plugins or options were
        reloaded), after any ranking under way."""
        with self._ranking:
            self._next = self._held = None

    def take(self, shape, table, now_us=None):
        """The ranking made for ``shape`` on ``table`` if it still holds,
        else None."""
        held = self._held_for(table)
        if held is None:
            return None
        if held.until is not None:
            if now_us is None:
                now_us = host_cache.now_us_utc()
            if now_us >= held.until:
                return None
        if not self._same_shape(held.shape, shape):
            return None
        return held.ranked

    def _same_shape(self, first, second):
        if first is second:
            return True
        repeated = self._repeated
        if (repeated is not None and repeated[0] is first
                and repeated[1] is second):
            # note() compared these two shapes already.
            return True
        return first.matches(second)

    def _patched(self, shape, table, now_us, in_place=True):
        """The ranking held, patched (see ``patch``), if it was made for
        ``shape`` on ``table``, which was written since, and no host's
        liveness changed since; else None. ``in_place=False``: the
        ranking held is left as it is (a request may still read it),
        the patch is a copy."""
        held = self._held
        if (self._patch is None or held is None
                or held.table() is not table
                or (held.until is not None and now_us >= held.until)
                or not self._same_shape(held.shape, shape)):
            return None
        # The patch may write what the ranking holds (its weights): it is
        # no longer held, whatever comes of it.
        self._held = None
        try:
            if in_place:
                return self._patch(shape, table, held.ranked, held.writes)
            return self._patch(shape, table, held.ranked, held.writes,
                               in_place=False)
        except Exception:
            # Patching is an optimisation: rank from scratch (the ranking
            # was dropped above: nothing is patched until one made so is
            # held).
            LOG.exception('Could not patch the ranking made ahead; '
                          'ranking again')
            return None

    # -- under load: each request leaves its ranking to the next ---------

    def mark(self, shape, table):
        """Before a request ranks ``shape`` on ``table`` in its turn:
        what :meth:`keep` needs to hold that ranking after (the table's
        write count and the next liveness change, read before ranking)."""
        now_us = host_cache.now_us_utc()
        return (shape, weakref.ref(table), table.writes,
                table.liveness_changes_at(shape.down_time, now_us))

    def keep(self, mark, ranked):
        """Hold ``ranked``, which a request made in its turn since
        ``mark``, for the next request of its shape to patch
        (:meth:`reuse`). Skipped while a ranking is made ahead."""
        if not self._ranking.acquire(blocking=False):
            return
        try:
            shape, table, writes, until = mark
            self._held = _Held(shape, table, writes, until, ranked)
        finally:
            self._ranking.release()

    def reuse(self, shape, table):
        """In a request's turn, when requests of one shape come while
        others are in flight (no ranking is made ahead then): the
        ranking the request before it left (:meth:`keep`), patched for
        the rows written since (its reservation, mostly: see ``patch``),
        a copy, held in turn for the next request; None when there is
        none to patch or it cannot be patched (the request ranks, and
        keeps its ranking)."""
        if not self._ranking.acquire(blocking=False):
            return None
        try:
            now_us = host_cache.now_us_utc()
            writes = table.writes
            until = table.liveness_changes_at(shape.down_time, now_us)
            ranked = self._patched(shape, table, now_us, in_place=False)
            if ranked is None:
                return None
            self._held = _Held(shape, weakref.ref(table), writes, until,
                               ranked)
            return ranked
        finally:
            self._ranking.release()

    def rank(self):
        """Rank the last shape given on the current host table, unless
        it is ranked there already or requests are busy; skipped while
        another thread ranks. True if a ranking was made and kept."""
        shape = self._next
        if (shape is None or self._busy()
                or not self._ranking.acquire(blocking=False)):
            return False
        try:
            table = self._snapshot()
            if table is None:
                return False
            writes = table.writes
            held = self._held_for(table)
            if held is not None and self._same_shape(held.shape, shape):
                return False
            now_us = host_cache.now_us_utc()
            until = table.liveness_changes_at(shape.down_time, now_us)
            ranked = self._patched(shape, table, now_us)
            if ranked is None:
                ranked = self._rank_shape(shape, table)
            if ranked is None:
                return False
            if table.writes != writes:
                # Written meanwhile: the ranking may mix rows from before
                # and after.
                return False
            self._held = _Held(shape, weakref.ref(table), writes, until,
                               ranked)
            return True
        except Superseded:
            return False
        except Exception:
            # Ranking ahead is an optimisation: the request ranks itself.
            LOG.exception('Could not rank the last request ahead')
            return False
        finally:
            self._ranking.release()
