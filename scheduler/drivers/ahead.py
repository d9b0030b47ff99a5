"""Ranking a request's shape ahead of the next request of that shape.

A caller that asks for one instance at a time waits, in every request,
for the filters and weighers to run over the whole host cache: 1-2 ms at
10,000 hosts in a busy daemon, several at 100,000. Most such requests
have the shape of the one before: the same flavor, image, project and
hints, for another instance. So once a request that repeats the shape
of the one before it (:meth:`Ahead.note`: a run of one shape, as a batch
of boots makes, not a mix of flavors where the work would be wasted) has
reserved its host in the host cache, while its claim waits for the
database, a thread of the driver filters and weighs that shape again on
the cache as it is now (the reservation included), and keeps the ranking
with what it depends on:

* the request spec, but for its instance uuid (field by field);
* the host table: the same object, written no more times since
  (:attr:`scheduler.host_table.HostTable.writes`): a lost claim, another
  request's reservation or a refresh that changed a row ends it;
* the time: until the first compute service's heartbeat leaves the
  ``service_down_time`` window or enters it
  (:meth:`~scheduler.host_table.HostTable.liveness_changes_at`), the one
  input of a filter that changes by itself;
* the filters and weighers loaded, and the size of the ranking (the best
  ``host_subset_size`` plus the alternates).

The next request of that shape that arrives while all of these hold
takes the ranking (:meth:`Ahead.take`) instead of filtering and weighing,
and still draws its pick among the best in its own turn, as it would
have: its answer is the one it would have computed. Anything else ranks
on arrival, as before. When the RPC server has answered its last request
the ranking is made again if the cache changed meanwhile; none is made
while other requests are in flight (their claims would make it stale),
and a reload of the filters, weighers or options (SIGHUP) forgets it.

The thread runs at the lowest CPU priority (on Linux, where a thread has
its own nice value): a ranking ahead is worth the CPU time nobody else
wants, not the time of the claim it overlaps, of the database or of the
broker. On the 2-CPU benchmark machine, six latency runs
(``benchmarks/rpc.py``) each beside one at the normal priority gave
2.05-2.65x the echo's p50 (nice 10, then 19) against 2.35-2.71x, the
lower priority ahead in every pair.

The driver decides which requests qualify (``[filter_scheduler]
rank_ahead``; one instance, no server group, no partial scoring, plugins
that declare ``pure = True``: see :func:`pure`)::

    ahead = Ahead(host_manager.current_table, rank_shape, busy)
    repeats = ahead.note(shape)             # on arrival
    ranked = ahead.take(shape, table)       # in its turn; None: rank now
    ...
    if repeats:
        ahead.soon(shape)   # host reserved: rank it again, in the thread
"""

import collections
import os
import sys
import threading
import weakref

from oslo_log import log as logging
from oslo_service import backend as service_backend
from oslo_versionedobjects import base as ovo_base

from scheduler import host_table as host_table_mod

LOG = logging.getLogger(__name__)


def overlaps_io():
    """Whether a ranking thread can run while a request waits for the
    database: with native threads (Gantt's default), yes; under eventlet
    (``GANTT_USE_EVENTLET``) the database driver blocks every green
    thread, so a ranking would only run at the request's next pause and
    delay its reply."""
    return (service_backend.get_backend_type()
            != service_backend.BackendType.EVENTLET)


def pure(plugin):
    """Whether a filter or weigher declares (``pure = True``) that its
    answer depends only on the host table, the request spec and the
    options, so that it may run ahead of a request."""
    return getattr(plugin, 'pure', False) is True


_UNSET = object()
# The nice value of the ranking thread: the lowest priority.
RANK_NICE = 19


def lower_priority():
    """Run the calling thread at :data:`RANK_NICE` (Linux, where the
    nice value is a thread's own); True if it does."""
    if not sys.platform.startswith('linux'):
        return False
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(),
                       RANK_NICE)
    except OSError as error:
        LOG.debug('Ranking ahead at the normal priority: %s', error)
        return False
    return True


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

    __slots__ = ('spec', 'alternates', 'need', 'plugins', 'down_time')

    def __init__(self, spec, alternates, need, plugins, down_time):
        self.spec = spec
        self.alternates = alternates
        self.need = need
        self.plugins = plugins
        self.down_time = down_time

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
    """One ranking made ahead of time, the shape to make it for, and the
    thread that makes it (started when first needed, in each process)."""

    def __init__(self, snapshot, rank_shape, busy=None, on_ranked=None):
        """``snapshot()``: the current host table (None: not loaded);
        ``rank_shape(shape, table)``: the ranking (None: not this shape
        any more); ``busy()``: True while requests are in flight that
        would make a ranking stale before it is used (default: never);
        ``on_ranked()``: called for each ranking kept."""
        self._snapshot = snapshot
        self._rank_shape = rank_shape
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
        self._wake = threading.Event()
        self._thread = None
        self._pid = None
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

    def soon(self, shape=None):
        """Rank ``shape`` (None: the last one given) in the background,
        unless it is ranked on the current table already."""
        if shape is not None:
            self._next = shape
        if self._next is None or self._stopped:
            return
        if self._pid != os.getpid():
            # First use, or a forked worker (the parent's thread is not
            # in the child).
            self._pid = os.getpid()
            self._thread = threading.Thread(
                target=self._run, name='rank-ahead', daemon=True)
            self._thread.start()
        self._wake.set()

    def start(self):
        """Rank ahead again after :meth:`stop` (a service restarted in
        the same process): the next :meth:`soon` starts a thread."""
        self._stopped = False
        self._pid = None
        self._wake.clear()

    def stop(self):
        """End the thread (after the ranking under way, if any)."""
        self._stopped = True
        self._wake.set()
        thread = self._thread
        if (thread is not None and self._pid == os.getpid()
                and thread is not threading.current_thread()):
            thread.join(timeout=10)

    def holds(self, table):
        """Whether a ranking is held for ``table`` as it is now."""
        return self._held_for(table) is not None

    def _held_for(self, table):
        held = self._held
        if (held is None or held.table() is not table
                or held.writes != table.writes):
            return None
        return held

    def _run(self):
        lower_priority()
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopped:
                return
            if self.rank() and self._on_ranked is not None:
                self._on_ranked()

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
                now_us = host_table_mod.now_us_utc()
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
            if held is not None and held.shape.matches(shape):
                return False
            until = table.liveness_changes_at(shape.down_time,
                                              host_table_mod.now_us_utc())
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
