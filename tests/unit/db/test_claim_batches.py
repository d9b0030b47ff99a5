"""Several fresh claims in one transaction (PostgreSQL, psycopg2): each
claim keeps its own outcome, a refused one leaves the others intact,
and a batch that fails writes nothing."""

import uuid

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claim_batches
from scheduler.db import claims
from scheduler.db import models
from tests.unit.db import test_claims

_ALLOC = models.Allocation.__table__
_INSTANCE = models.Instance.__table__
R = claims.Resources


def consumers(count):
    return [str(uuid.uuid4()) for _ in range(count)]


def allocated():
    with db_api.reader() as session:
        return {row.consumer_uuid: row.compute_node_id
                for row in session.execute(sa.select(
                    _ALLOC.c.consumer_uuid, _ALLOC.c.compute_node_id))}


def used(node):
    state = test_claims.node_state(node)
    return (state['vcpus_used'], state['memory_mb_used'],
            state['local_gb_used'])


def settle_instance(consumer):
    with db_api.writer() as session:
        session.execute(sa.insert(_INSTANCE).values(
            uuid=consumer, vm_state='active', task_state=None, deleted=0))


def test_each_claim_of_a_batch_has_its_own_outcome(postgresql_database):
    big = test_claims.make_node('big')
    small = test_claims.make_node('small', vcpus=2)
    settled = test_claims.make_node('other')
    one, two, too_big, three, refused = consumers(5)
    settle_instance(refused)
    before = test_claims.node_state(big)['generation']

    outcomes = claim_batches.claim_fresh_batch([
        (big, one, R(1, 1024, 10), True),
        (small, too_big, R(3, 1024, 10), True),     # 2 vCPUs there
        (big, two, R(2, 2048, 20), True),
        (small, three, R(2, 512, 5), True),
        (settled, refused, R(1, 512, 5), True),     # a settled instance
    ])

    # The two claims on "big" were made, in the one transaction: each
    # reports the node's generation after the batch.
    assert outcomes[0] == outcomes[2] == before + 2
    assert outcomes[1] is None
    assert outcomes[3] == test_claims.node_state(small)['generation']
    assert outcomes[4] is None
    assert allocated() == {one: big, two: big, three: small}
    assert used(big) == (3, 3072, 30)
    # The refused claims left the others' writes intact, and wrote
    # nothing of their own.
    assert used(small) == (2, 512, 5)
    assert used(settled) == (0, 0, 0)
    assert test_claims.inconsistencies() == []


def test_a_consumer_that_holds_allocations_is_not_reported_made(
        postgresql_database):
    node = test_claims.make_node()
    held, fresh = consumers(2)
    assert test_claims.claim(node, (1, 512, 5), held) is True

    outcomes = claim_batches.claim_fresh_batch([
        (node, held, R(1, 512, 5), True), (node, fresh, R(1, 512, 5), True)])

    # Its allocation is there, but not this batch's: the full path says
    # what to do with it.
    assert outcomes[0] is None
    assert outcomes[1] is not None
    assert used(node) == (2, 1024, 10)


def test_a_batch_that_fails_writes_nothing(postgresql_database):
    node = test_claims.make_node()
    first, broken, last = consumers(3)

    # An amount beyond PostgreSQL's integer: that claim's statement fails,
    # and with it the batch's one transaction.
    with pytest.raises(db_exc.DBError):
        claim_batches.claim_fresh_batch([
            (node, first, R(1, 512, 5), True),
            (node, broken, R(1, 2 ** 40, 5), False),
            (node, last, R(1, 512, 5), True)])

    assert allocated() == {}
    assert used(node) == (0, 0, 0)
    # The connection that failed went back: the next batch runs.
    assert None not in claim_batches.claim_fresh_batch(
        [(node, first, R(1, 512, 5), True), (node, last, R(1, 512, 5), True)])
    assert used(node) == (2, 1024, 10)


def test_a_batch_holds_one_claim_per_consumer(postgresql_database):
    node = test_claims.make_node()
    (consumer,) = consumers(1)
    with pytest.raises(ValueError, match='one consumer twice'):
        claim_batches.claim_fresh_batch([
            (node, consumer, R(1, 512, 5), True),
            (node, consumer, R(1, 512, 5), True)])
    assert allocated() == {}


def test_claims_are_sent_in_the_order_of_their_nodes(postgresql_database):
    # Two batches on the same nodes lock them in one order: no deadlock.
    first, second = test_claims.make_node('a'), test_claims.make_node('b')
    engine = db_api.get_engine()
    _prepares, query, arguments = claim_batches.batch_query(
        [(max(first, second), 'c1', R(1, 1, 1), True),
         (min(first, second), 'c2', R(1, 1, 1), True)], engine.dialect)
    assert arguments['node_0'] < arguments['node_1']
    assert arguments['consumer_0'] == 'c2'
    assert query.rstrip().endswith(')')
