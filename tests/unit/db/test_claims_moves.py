"""What move operations need of claims: handing allocations from one
consumer to another, a failed claim that keeps the earlier allocation,
and the stray-allocation report of ``gantt-manage db check``."""

import uuid

import pytest

from scheduler.db import api as db_api
from scheduler.db import claim_checks
from scheduler.db import claims
from scheduler.db import instances as db_instances
from scheduler.db import moves
from scheduler import exception
from tests.unit.db import test_claims as helpers


def _instance(vm_state=None):
    instance_uuid = str(uuid.uuid4())
    with db_api.writer() as session:
        db_instances.create(session, instance_uuid, flavor={'vcpus': 1},
                            request_spec=None)
        if vm_state:
            db_instances.update(session, instance_uuid, vm_state=vm_state,
                                task_state=None)
    return instance_uuid


def test_move_allocations_keeps_usage(any_database):
    node = helpers.make_node()
    instance, migration = str(uuid.uuid4()), str(uuid.uuid4())
    assert helpers.claim(node, (2, 1024, 10), instance)
    before = helpers.node_state(node)
    with db_api.writer() as session:
        assert claims.move_allocations(session, instance, migration) == 1
    assert helpers.allocations(instance) == []
    assert helpers.allocations(migration) == [
        (node, claims.Resources(2, 1024, 10))]
    after = helpers.node_state(node)
    assert {k: after[k] for k in after if k != 'generation'} == \
        {k: before[k] for k in before if k != 'generation'}
    assert helpers.inconsistencies() == []


def test_move_allocations_refuses_a_consumer_that_holds_some(any_database):
    node = helpers.make_node()
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    assert helpers.claim(node, (1, 512, 1), first)
    assert helpers.claim(node, (1, 512, 1), second)
    with pytest.raises(ValueError, match='already holds'):
        with db_api.writer() as session:
            claims.move_allocations(session, first, second)
    assert len(helpers.allocations(first)) == 1
    assert len(helpers.allocations(second)) == 1


def test_failed_claim_keeps_the_earlier_allocation(any_database):
    small = helpers.make_node('small', vcpus=1)
    big = helpers.make_node('big')
    consumer = str(uuid.uuid4())
    assert claims.claim_in_sql(big, consumer, claims.Resources(1, 512, 1))
    # Replacing it with a claim that does not fit writes nothing.
    assert claims.claim_in_sql(small, consumer,
                             claims.Resources(2, 512, 1)) is False
    assert helpers.allocations(consumer) == [
        (big, claims.Resources(1, 512, 1))]
    # One that fits replaces it, in the same transaction.
    assert claims.claim_in_sql(small, consumer,
                             claims.Resources(1, 512, 1)) is True
    assert helpers.allocations(consumer) == [
        (small, claims.Resources(1, 512, 1))]
    assert helpers.node_state(big)['vcpus_used'] == 0
    assert helpers.inconsistencies() == []


def test_stray_allocations_are_reported(any_database):
    node = helpers.make_node()
    active = _instance('active')
    with db_api.writer() as session:
        db_instances.update(session, active, host='host1',
                            node='host1-node')
    failed = _instance('error')
    offloaded = _instance('shelved_offloaded')
    unknown = str(uuid.uuid4())
    with db_api.writer() as session:
        done = moves.create(session, active, moves.MIGRATION,
                            status=moves.CONFIRMED)
        running = moves.create(session, active, moves.MIGRATION,
                               status=moves.FINISHED)
    for consumer in (active, failed, offloaded, unknown, done.uuid,
                     running.uuid):
        assert helpers.claim(node, (0, 1, 0), consumer)
    with db_api.reader() as session:
        stray = claim_checks.find_stray_allocations(session)
    assert sorted((consumer, why) for consumer, _h, _n, why in stray) == \
        sorted([(failed, claim_checks.STRAY_ERROR),
                (offloaded, claim_checks.STRAY_OFFLOADED),
                (unknown, claim_checks.STRAY_UNKNOWN),
                (done.uuid, claim_checks.STRAY_MIGRATION_ENDED)])


@pytest.mark.parametrize('vm_state, task_state, refused', [
    ('active', None, True),
    ('error', None, True),
    ('shelved_offloaded', None, True),
    ('building', 'scheduling', False),
    ('active', 'resize_prep', False),
    ('shelved_offloaded', 'unshelving', False),
])
def test_scheduler_claims_refuse_settled_instances(database, vm_state,
                                                   task_state, refused):
    node = helpers.make_node()
    instance = _instance()
    with db_api.writer() as session:
        db_instances.update(session, instance, vm_state=vm_state,
                            task_state=task_state)
    resources = claims.Resources(1, 512, 1)
    if refused:
        with pytest.raises(exception.InvalidRequest,
                           match='%s is %s with no task' % (instance,
                                                            vm_state)):
            claims.claim_in_sql(node, instance, resources,
                              refuse_settled=True)
        assert helpers.allocations(instance) == []
    else:
        assert claims.claim_in_sql(node, instance, resources,
                                 refuse_settled=True) is True
    # A consumer Gantt has no instance for is never refused.
    other = helpers.make_node('other')
    assert claims.claim_in_sql(other, str(uuid.uuid4()), resources,
                             refuse_settled=True) is True


def test_a_second_copy_of_an_answered_request_cannot_move_the_claim(
        database):
    # The broker delivered select_destinations twice: the first answer
    # was placed (spawning on its host, holding the claim); the copy is
    # refused and the claim stays where the build goes.
    first, second = helpers.make_node('h1'), helpers.make_node('h2')
    instance = _instance()
    resources = claims.Resources(1, 512, 1)
    assert claims.claim_in_sql(first, instance, resources,
                             refuse_settled=True) is True
    with db_api.writer() as session:
        db_instances.update(session, instance, task_state='spawning',
                            host='h1', node='h1')
    with pytest.raises(exception.InvalidRequest,
                       match='placed on h1 already'):
        claims.claim_in_sql(second, instance, resources, refuse_settled=True)
    assert [node for node, _ in helpers.allocations(instance)] == [first]

    # A legacy reschedule released the failed host's claim first: asking
    # the scheduler again is allowed.
    with db_api.writer() as session:
        claims.release_resources(session, instance)
    assert claims.claim_in_sql(second, instance, resources,
                             refuse_settled=True) is True
