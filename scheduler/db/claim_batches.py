"""Several fresh claims in one transaction: the SQL of a group commit.

:func:`claims.claim_in_sql` makes the usual claim (a consumer that holds
nothing yet, no group policy, no NUMA or PCI request, no other classes)
in one round trip of its own: lock the instance, update the node where
the claim fits, insert the allocation, commit. When a scheduler process
has several such claims ready at once (see
:mod:`scheduler.drivers.group_commit`), :func:`claim_fresh_batch` sends
them together: the same statements for each, one after the other, then
one query telling which allocations this transaction inserted, all in
one query string that PostgreSQL runs as one transaction. One round
trip, one commit and one flush of the WAL for the lot::

    outcomes = claim_batches.claim_fresh_batch(
        [(node_id, consumer_uuid, resources, True), ...], kept)
    # [generation after the batch, or None when that claim was not made]

Each claim keeps its own outcome. A claim that does not fit, or whose
consumer already holds allocations or is settled, changes nothing (its
UPDATE matches no row, so its INSERT inserts none) and the others are
made; its caller then takes the full path, which says why, as after a
single fresh claim. A statement that fails (an error, not a refusal)
rolls back the whole batch: nothing of it is written, and the callers
run their claims alone (see ``group_commit``).

The claims are sent in the order of their nodes, so that two batches
(two scheduler processes) that update the same nodes take their locks
in the same order and cannot deadlock on them. A batch must not hold
two claims of one consumer: the second would see the first's
allocation and change nothing, yet the query would report the
allocation (the group commit keeps such a claim for the next batch).

PostgreSQL through psycopg2 only: psycopg2 returns the rows of the last
statement of a query string, which is why the outcomes are read by a
query of their own (the allocations whose row this transaction wrote:
``xmin`` is its id), not from each claim's statement.
"""

import re

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import models

Resources = claims.Resources

_PARAMETER = re.compile(r'%\((\w+)\)s')
# The allocations this transaction inserted, among the batch's consumers,
# and their nodes' generations after it.
_OUTCOMES = (
    'SELECT a.consumer_uuid, n.generation FROM {alloc} a '
    'JOIN {node} n ON n.id = a.compute_node_id '
    'WHERE a.xmin = pg_current_xact_id()::xid AND a.consumer_uuid IN ({in_})'
)


def _numbered(execute, number):
    """The query string ``execute`` with each of its parameters
    ``%(name)s`` renamed ``%(name_<number>)s``."""
    return _PARAMETER.sub(lambda match: '%%(%s_%d)s' % (match.group(1),
                                                       number), execute)


def batch_query(batch, dialect):
    """``(prepares, query string, arguments)`` of ``batch`` (see
    :func:`claim_fresh_batch`), its claims in the order of their nodes."""
    now = models.utcnow()
    prepares, parts, arguments, consumers = {}, [], {}, []
    ordered = sorted(enumerate(batch), key=lambda item: (item[1][0],
                                                         item[0]))
    for number, (_index, (node_id, consumer_uuid, resources,
                          refuse_settled)) in enumerate(ordered):
        checked = tuple(amount > 0 for amount in resources)
        trip = claims.one_trip_sql(checked, refuse_settled, dialect)
        prepares.update(trip.prepares)
        parts.append(_numbered(trip.execute, number))
        given = dict(trip.defaults, node=node_id, consumer=consumer_uuid,
                     now=now)
        for field, amount in zip(Resources._fields, resources):
            given['claim_' + field] = amount
        for name, value in given.items():
            arguments['%s_%d' % (name, number)] = value
        consumers.append('%%(consumer_%d)s' % number)
    parts.append(_OUTCOMES.format(
        alloc=models.Allocation.__tablename__,
        node=models.ComputeNode.__tablename__, in_=', '.join(consumers)))
    return prepares, ';\n'.join(parts), arguments


def claim_fresh_batch(batch, kept=None):
    """Make the fresh claims of ``batch`` in one transaction, on the
    connection ``kept`` keeps (a :class:`db_api.KeptConnection`; None:
    one taken from the pool for it).

    ``batch``: ``[(node_id, consumer_uuid, resources, refuse_settled)]``
    of distinct consumers, whose amounts are none negative (see
    :func:`claims.fresh_claim_possible`). Returns, in the order of
    ``batch``, for each claim the node's generation after the batch when
    it was made, else None. Raises what the database raised (oslo.db's
    exceptions): nothing of the batch was written then.
    """
    consumers = [consumer for _node, consumer, _res, _refuse in batch]
    if len(set(consumers)) != len(consumers):
        raise ValueError('a batch of claims holds one consumer twice')
    engine = db_api.get_engine()
    prepares, query, arguments = batch_query(batch, engine.dialect)
    own = kept is None
    if own:
        kept = db_api.KeptConnection()
    try:
        rows = kept.autocommit_rows(engine, prepares, query, arguments)
    finally:
        if own:
            kept.close()
    made = {consumer: generation for consumer, generation in rows}
    return [made.get(consumer) for consumer in consumers]
