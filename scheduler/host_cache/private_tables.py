"""Private tables: a request's own copy of the shared host table, kept.

A request for several instances accounts for its earlier instances as it
places them. One that claims finds each claim's reservation in the
shared table, which the HostManager writes in place, and ranks there
(see ``filter_scheduler``). One that claims nothing (or that must put a
state itself, or whose shared table was replaced mid-request) puts the
room its instances take in a table of its own: for it alone, since
requests running meanwhile read the shared table, and out of reach of
the shared table's writes while it runs. A copy of every column gives
both, at the cost of every host (``HostTable.detached``); building a new
table per instance placed costs as much again.

:class:`PrivateTables` keeps such copies between requests instead. A copy
taken again is brought up to date with the rows the shared table wrote
since it was last taken (its write log: ``HostTable.written_since``) and
the rows its last request changed, their values copied from the shared
table's (``HostTable.copy_rows_from``); the request then writes its own
rows in place (``HostTable.update_in_place``). Both cost the rows
changed, not the hosts. A new copy is made (``detached``) only the first
time, when the shared table was replaced by another, or when it no
longer remembers all its writes since::

    tables = PrivateTables()
    private = tables.take(manager.snapshot())
    try:
        private.put({row: private.table.states[row].consumed(resources)})
        ...                      # filter and weigh private.table
    finally:
        tables.give_back(private)
"""

import threading

from scheduler.host_cache import host_table
from scheduler.host_cache import table_columns

# Private tables kept while no request uses them (one per request that
# ran at the same time as others, up to this many).
_KEPT = 4


class PrivateTable:
    """A copy of ``shared`` that one request at a time owns: its
    :attr:`table` is a HostTable that the shared one's writes do not
    reach, and that the request changes with :meth:`put`."""

    def __init__(self, shared):
        self.shared = shared
        # The shared table's write count the copy holds every write of.
        self.seen = shared.writes
        self.table = shared.detached()
        # Rows the request changed: put back from the shared table when
        # the copy is taken again.
        self.changed = set()
        # Whether the request changed the claims' columns only (see
        # HostTable.update_in_place's ``claim_only``).
        self.claims_only = True
        # False once the table was rebuilt (a state changed its identity):
        # no longer a copy to keep.
        self.reusable = True

    def put(self, new_states, claim_only=False):
        """Write ``{row: HostState}`` into the private table only;
        ``claim_only`` as for ``HostTable.update_in_place``."""
        self.changed.update(new_states)
        self.claims_only = self.claims_only and claim_only
        if not self.table.update_in_place(new_states, claim_only):
            self.table = self.table.replace(new_states)
            self.reusable = False

    def catch_up(self):
        """Bring the copy back to what the shared table holds; False
        (nothing changed) when the shared table no longer remembers the
        rows it wrote since the copy was made or last caught up."""
        # The count first: a write that ends meanwhile is found next time.
        writes = self.shared.writes
        # As far back as the table remembers: catching up with the rows
        # of many writes (claims go to few hosts) costs less than a copy.
        written = self.shared.written_since(self.seen,
                                            host_table.WRITE_LOG_KEPT)
        if written is None:
            return False
        rows, names = written
        rows = sorted(self.changed.union(int(row) for row in rows))
        # The shared table's values of those rows, copied: what its own
        # writes computed from the same states. Claims alone (the usual
        # case) differ in their claims' columns only.
        claims = self.claims_only and names <= table_columns.CLAIM_COLUMNS
        if not self.table.copy_rows_from(
                self.shared, rows,
                table_columns.CLAIM_COLUMNS if claims else None):
            return False
        self.seen = writes
        self.changed = set()
        self.claims_only = True
        return True


class PrivateTables:
    """The private tables of one driver, kept between its requests."""

    def __init__(self):
        self._lock = threading.Lock()
        self._idle = []

    def take(self, shared):
        """A :class:`PrivateTable` of ``shared`` (a HostTable) holding
        what it holds now, for the caller alone until
        :meth:`give_back`."""
        with self._lock:
            private = None
            while self._idle and private is None:
                candidate = self._idle.pop()
                if candidate.shared is shared:
                    private = candidate
        if private is not None and private.catch_up():
            return private
        return PrivateTable(shared)

    def give_back(self, private):
        """``private`` may be taken again (by the next request)."""
        if not private.reusable:
            return
        with self._lock:
            # Copies of a table the HostManager replaced are dropped.
            self._idle = [kept for kept in self._idle
                          if kept.shared is private.shared]
            if len(self._idle) < _KEPT:
                self._idle.append(private)
