"""The cyclic garbage collector around the host cache's full reads.

In the ``gantt-scheduler`` daemon (:func:`freeze_collector`, called by
its ``main``; not where a HostManager is a library in someone else's
process), each full read (the first load, then every
``FULL_READ_INTERVAL`` seconds), and each refresh that built a new
table (most services' liveness changed at once), freezes the objects
there are
(``gc.freeze``), out of the cyclic garbage collector's later passes;
a full read after the process grew by a quarter first passes the
collector over everything, counted in that refresh's time; the first
load passes it before it reads, while the process is still small (at a
million hosts, a pass after the load walked its tens of millions of
objects for about a second of the cold start).
Without it the collector's oldest generation holds the host cache, and
each of its passes, every few thousand requests, stopped the process for
90-140 ms at 10,000 hosts (4.5-11 ms frozen; ``benchmarks/README.md``,
session 22). What is frozen is thawed and collected once the process
grew by a quarter, so garbage cycles among frozen objects cost at most
that much memory (a pass at every full read stalled requests: issue 53).
In every process, the collector is paused while a full read builds the
cache, or a refresh builds a new table (as when most services changed
liveness at once), for :data:`PAUSE_LIMIT` seconds at most
(:func:`paused`).

A full read in the daemon also ends by giving the C heap's free pages
back to the system (glibc's ``malloc_trim``, where the C library has
it): the read's rows and the lists and arrays the table was built from
are freed by then, and what they took in the middle of the heap would
otherwise stay in the process's resident memory (at a million hosts,
43-65 MB, for 3 ms).

Both are the HostManager's (:mod:`scheduler.host_cache.refreshing`): a
full read runs under :func:`paused` and ends with
:func:`after_full_read`::

    collect = collector.before_full_read()
    with collector.paused():
        read_everything()
        collector.after_full_read(collect)
"""

import contextlib
import ctypes
import functools
import gc
import sys
import threading
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# Whether full reads freeze what the garbage collector keeps (see
# freeze_collector).
_freezing = False


def freeze_collector():
    """From now on, in this process and the workers it forks, each
    full read of a host cache ends with :func:`_collect_and_freeze`
    (see the module's doc): for the scheduler daemon, whose process is
    its own."""
    global _freezing
    _freezing = True


# How much the allocated blocks may grow past those left by the last
# collection before a full read thaws and collects again (see
# after_full_read): CPython's own rule for its oldest generation.
GROWTH_BEFORE_COLLECT = 0.25
# The blocks allocated after the last collection (None: none yet).
_blocks_after_collect = None


def grown():
    """Whether the process's allocated blocks grew by a quarter since the
    last collection (cyclic garbage among frozen objects, or a cache
    grown), or none was made yet: asked as a full read begins, before
    the rows it reads and the table it builds (hundreds of thousands of
    blocks, most of them gone once the refresh ends) count."""
    return (_blocks_after_collect is None or sys.getallocatedblocks()
            > _blocks_after_collect * (1 + GROWTH_BEFORE_COLLECT))


def before_full_read():
    """Whether the full read about to begin should collect as it ends
    (:func:`grown`). The first one in a process that asked for it
    (:func:`freeze_collector`) collects and freezes now instead, before
    it reads: nothing it reads is garbage yet, and a pass over what the
    process holds before a cold start is short (a pass after it is not);
    :func:`after_full_read` counts the blocks then."""
    if _freezing and _blocks_after_collect is None:
        _collect_and_freeze()
        return False
    return grown()


def after_full_read(collect=False):
    """The end of a full read, or of any refresh that built a new table
    (most services changed liveness at once), in a process that asked
    for it (:func:`freeze_collector`), the collector still paused:
    freeze what is new, out of the collector's passes (``gc.freeze``
    moves lists: no pass over the objects); and only when ``collect``
    (:func:`grown`, asked as the read began), thaw, collect and freeze
    again. That collection walks every object holding the interpreter
    (150-240 ms at 100,000 hosts, issue 53): done at every full read, it
    stalled the requests running then; and asked at the end of the
    read, the growth counted the read's own passing rows, which made it
    every full read again."""
    global _blocks_after_collect
    if not _freezing:
        return
    if collect:
        _collect_and_freeze()
        _blocks_after_collect = sys.getallocatedblocks()
    else:
        gc.freeze()
        if _blocks_after_collect is None:
            # The first load, collected before it read (before_full_read).
            _blocks_after_collect = sys.getallocatedblocks()
    trim_heap()


def trim_heap():
    """Give the free pages of the C heap back to the system (see the
    module's doc); nothing where the C library has no ``malloc_trim``.
    """
    trim = _malloc_trim()
    if trim is not None:
        # (A foreign call: the interpreter is released meanwhile.)
        trim(0)


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    """glibc's ``malloc_trim``, or None."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


# The longest a full read keeps the collector paused: a read held up by
# a database that stopped answering must not leave the process's garbage
# uncollected until it ends (a cold start at 100,000 hosts takes 2-4 s).
PAUSE_LIMIT = 60.0

# Full reads under way that paused the cyclic collector, whether it ran
# before the first of them, and the timer of the pause's limit (see
# paused).
_pause_lock = threading.Lock()
_pauses = 0
_was_enabled = False
_pause_timer = None


@contextlib.contextmanager
def paused():
    """Pause the cyclic garbage collector while a full read builds the
    cache: its hundreds of thousands of new objects would make the
    collector walk the growing cache again and again (a fifth of a cold
    start at 100,000 hosts), to find nothing, since they are all kept.
    What other threads make meanwhile waits until the read ends, or
    :data:`PAUSE_LIMIT` seconds at most; nested and concurrent pauses
    (several caches) resume it once, and only if it ran before."""
    global _pauses, _was_enabled, _pause_timer
    with _pause_lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
            if _was_enabled:
                _pause_timer = threading.Timer(PAUSE_LIMIT, _pause_too_long)
                _pause_timer.daemon = True
                _pause_timer.start()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0:
                if _pause_timer is not None:
                    _pause_timer.cancel()
                    _pause_timer = None
                if _was_enabled:
                    gc.enable()


def _pause_too_long():
    """In the pause's timer: the pause outlasted :data:`PAUSE_LIMIT`:
    resume the collector (the reads under way go on without the pause).
    A timer whose pause ended meanwhile, its own or a later one's, finds
    another timer, or none, in ``_pause_timer`` and does nothing."""
    with _pause_lock:
        if (_pause_timer is not threading.current_thread()
                or gc.isenabled()):
            return
        gc.enable()
    LOG.warning('A full read of the host cache has run for more than %d '
                's; the garbage collector runs again meanwhile',
                PAUSE_LIMIT)


def _collect_and_freeze():
    """Thaw what an earlier call froze, collect every generation, and
    freeze what is left: the collector's later passes skip it."""
    started = time.perf_counter()
    gc.unfreeze()
    found = gc.collect()
    gc.freeze()
    LOG.debug('Collected %d unreachable object(s) and froze the rest in '
              '%.3fs', found, time.perf_counter() - started)
