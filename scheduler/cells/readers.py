"""Long-lived reading threads: one per cell database, one for the API
database's cell list (see :mod:`scheduler.host_cache.cell_gather`).

A :class:`Reader` runs the reads handed to it one at a time on a thread
of its own, started at the first read and again if it died (after a
fork); a read still running gets no successor. A :class:`Latch` lets the
refresh that handed out several reads wait for them all with one
wake-up::

    reader = Reader('gantt-cell-cell1')
    latch = Latch(1)
    pending = reader.submit(read_cell, latch)    # None while one runs
    latch.done.wait(60)
    pending.outcome        # what read_cell() returned, or its exception
    reader.stop()
"""

import queue
import threading
import time


class Latch:
    """Set once ``count`` reads are done: one wake-up for the refresh
    that waits for them all, not one per cell."""

    def __init__(self, count):
        self._left = count
        self._lock = threading.Lock()
        self.done = threading.Event()
        if count <= 0:
            self.done.set()

    def count_down(self):
        with self._lock:
            self._left -= 1
            if self._left == 0:
                self.done.set()


class Pending:
    """One read handed to a reading thread."""

    def __init__(self, job, latch):
        self.job = job
        self.latch = latch
        self.started = time.monotonic()
        self.done = threading.Event()
        self.outcome = None        # what job() returned, or its exception


class Reader:
    """A long-lived thread that runs the reads handed to it, one at a
    time."""

    def __init__(self, name):
        self.name = name
        self.thread = None
        self.jobs = None           # the thread's queue of Pending
        self.pending = None        # the last Pending handed to it

    def submit(self, job, latch=None):
        """Hand ``job`` to the reading thread (started if it is not
        running); the Pending, or None while the last read runs."""
        alive = self.thread is not None and self.thread.is_alive()
        if alive and self.pending is not None and \
                not self.pending.done.is_set():
            return None
        if not alive:
            self.jobs = queue.Queue()
            self.thread = threading.Thread(
                target=_reading_loop, args=(self.jobs,),
                name=self.name, daemon=True)
            self.thread.start()
        self.pending = Pending(job, latch)
        self.jobs.put(self.pending)
        return self.pending

    def stop(self):
        if self.jobs is not None:
            self.jobs.put(None)
        self.thread = self.jobs = self.pending = None


def _reading_loop(jobs):
    """The body of one reading thread: run the reads handed to it until
    told to stop (None)."""
    while True:
        pending = jobs.get()
        if pending is None:
            return
        try:
            pending.outcome = pending.job()
        except Exception as error:
            pending.outcome = error
        finally:
            # Whatever ended the read (even what ends the thread), its
            # waiter is not left waiting for it.
            pending.done.set()
            if pending.latch is not None:
                pending.latch.count_down()
