"""Group commit: the fresh claims a process has ready at once, together.

Under load, a scheduler worker's RPC threads reach their claims one
after the other (each ranks and reserves in its turn) while the claims
before them still wait for the database. Each claim alone is a round
trip, a transaction and a flush of the WAL; :class:`GroupCommit` makes
the claims that arrive while one is under way wait for it, then sends
them together, in one transaction and one round trip
(:func:`scheduler.db.claim_batches.claim_fresh_batch`), and gives each
its own outcome::

    group = GroupCommit(claim_slots)
    won = claims.claim_in_sql(node_id, uuid, resources, batch=group, ...)

Who sends: the first claim that finds nothing under way sends at once,
alone, on the connection of a claim slot, exactly as a claim without
group commit (a quiet scheduler's latency does not change). Claims that
arrive meanwhile queue; when the claim under way returns, the first
queued one leads: it sends every claim queued by then (up to
:data:`MAX_BATCH`, one claim per consumer), hands each its outcome, and
passes the lead to the next queued claim, if any. So at most one batch
per process and database is under way, and a batch holds the claims
that arrived during the one before: the more load, the bigger the
batches, with no timer and no claim waiting for others to come.

Outcomes: True, the claim was made (its node's generation after the
batch goes into ``report``, as a single claim's does: the host cache
then keeps its row only if nothing else wrote the node, see
``HostManager.settle``); False, it was not (no room, a consumer that
holds allocations or is settled): the caller takes the full path, which
says why, as after a single fresh claim. When the batch fails (the
database went away, a deadlock, any error), nothing of it was written:
every claim of it is made again alone, on a pooled connection, so that
one claim's error is that claim's only, and what its caller sees is
what a claim without group commit would have seen (the retries of
``claim_in_sql`` included).

PostgreSQL through psycopg2 only (where a claim is one prepared query
string); other drivers claim alone, as before.
"""

import collections
import threading

from oslo_log import log as logging

from scheduler.db import api as db_api
from scheduler.db import claim_batches
from scheduler.db import claims

LOG = logging.getLogger(__name__)

# The most claims in one batch.
MAX_BATCH = 32


def supported(engine=None):
    """Whether claims on ``engine`` (``[database]``'s by default) can be
    sent together."""
    engine = engine if engine is not None else db_api.get_engine()
    return engine.dialect.driver == 'psycopg2'


class _Claim:
    """One claim waiting for its outcome, or for the lead."""

    __slots__ = ('item', 'done', 'lead', 'generation', 'made', 'alone',
                 'error')

    def __init__(self, item):
        self.item = item
        self.done = threading.Event()
        self.lead = False
        self.made = False
        self.alone = False
        self.generation = None
        self.error = None


class GroupCommit:
    """The fresh claims of one process in one database (see the module's
    doc). ``slots``: the :class:`scheduler.drivers.base.ClaimSlots` whose
    kept connections the batches run on; ``count(name, amount)``: told
    of the batches sent (``claim_batches``: batches of two claims or
    more, ``claims_batched``: their claims), as a driver's counters."""

    def __init__(self, slots, max_batch=MAX_BATCH, count=None):
        self._slots = slots
        self._count = count
        self._max = max_batch
        self._lock = threading.Lock()
        self._queue = collections.deque()
        self._busy = False
        self.stats = collections.Counter()

    def uses(self, slots):
        """Whether this group sends on ``slots``."""
        return self._slots is slots

    def claim(self, node_id, consumer_uuid, resources, refuse_settled,
              report=None):
        """Make the fresh claim (as ``claims.claim_fresh``): True if
        made, False if the full path must decide."""
        if not claims.fresh_claim_possible(resources):
            return False
        waiting = _Claim((node_id, consumer_uuid, resources,
                          refuse_settled))
        with self._lock:
            if self._busy:
                self._queue.append(waiting)
            else:
                self._busy = True
                waiting.lead = True
        if not waiting.lead:
            waiting.done.wait()
        if waiting.lead:
            self._lead(waiting)
        if waiting.error is not None:
            raise waiting.error
        if waiting.alone:
            return claims.claim_fresh(node_id, consumer_uuid, resources,
                                      refuse_settled, report)
        if waiting.made and report is not None:
            report['generation'] = waiting.generation
        return waiting.made

    def _lead(self, first):
        """Send ``first`` and what is queued with it; deliver; pass on."""
        batch = [first]
        with self._lock:
            later = []
            consumers = {first.item[1]}
            while self._queue and len(batch) < self._max:
                queued = self._queue.popleft()
                if queued.item[1] in consumers:
                    later.append(queued)
                else:
                    consumers.add(queued.item[1])
                    batch.append(queued)
            self._queue.extendleft(reversed(later))
        try:
            self._send(batch)
        finally:
            for waiting in batch[1:]:
                waiting.done.set()
            with self._lock:
                if self._queue:
                    following = self._queue.popleft()
                    following.lead = True
                    following.done.set()
                else:
                    self._busy = False

    def _send(self, batch):
        self.stats['batches'] += 1
        self.stats['claims'] += len(batch)
        if len(batch) == 1:
            self._send_one(batch[0])
            return
        try:
            with self._slots.slot() as kept:
                outcomes = claim_batches.claim_fresh_batch(
                    [waiting.item for waiting in batch], kept)
        except Exception as error:
            LOG.warning('A group commit of %(count)d claims failed '
                        '(%(error)s); nothing of it was written, each '
                        'claim is made again alone',
                        {'count': len(batch), 'error': error})
            self.stats['batches_failed'] += 1
            for waiting in batch:
                waiting.alone = True
            return
        self.stats['batched'] += len(batch)
        if self._count is not None:
            self._count('claim_batches')
            self._count('claims_batched', len(batch))
        for waiting, generation in zip(batch, outcomes):
            waiting.made = generation is not None
            waiting.generation = generation

    def _send_one(self, waiting):
        """A claim with none queued beside it: the single claim's own
        path, on a slot's connection; its error is its caller's."""
        node_id, consumer_uuid, resources, refuse_settled = waiting.item
        report = {}
        try:
            with self._slots.slot() as kept:
                waiting.made = claims.claim_fresh(
                    node_id, consumer_uuid, resources, refuse_settled,
                    report, kept)
        except Exception as error:
            waiting.error = error
            return
        waiting.generation = report.get('generation')
