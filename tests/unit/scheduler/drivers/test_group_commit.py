"""Group commit of a process's concurrent claims (PostgreSQL, psycopg2):
claims that arrive while one is under way go together, each with its own
outcome; a batch that fails is made again claim by claim."""

import threading
import time
import uuid

import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.drivers import base
from scheduler.drivers import filter_scheduler
from scheduler.drivers import group_commit
from tests.unit.db import test_claims
from tests.unit.scheduler import fakes

R = claims.Resources


class _Slow:
    """Every statement takes 20 ms more, so that claims overlap; with
    ``fail_batches``, the first batch's query fails before it is sent."""

    def __init__(self, engine, fail_batches=0):
        self.engine = engine
        self.fail_batches = fail_batches
        self.lock = threading.Lock()

    def __call__(self, conn, cursor, statement, *args):
        time.sleep(0.02)
        if 'pg_current_xact_id' in statement:
            with self.lock:
                if self.fail_batches:
                    self.fail_batches -= 1
                    raise RuntimeError('injected: the batch is lost')

    def __enter__(self):
        sa.event.listen(self.engine, 'before_cursor_execute', self)
        return self

    def __exit__(self, *exc_info):
        sa.event.remove(self.engine, 'before_cursor_execute', self)


def _claim_together(group, targets):
    """Claim ``[(node, resources)]`` from as many threads at once:
    ``[(consumer, outcome, report)]`` in order."""
    results = [None] * len(targets)
    start = threading.Barrier(len(targets))

    def claim(index, node, resources):
        consumer, report = str(uuid.uuid4()), {}
        start.wait()
        try:
            won = claims.claim_in_sql(node, consumer, resources,
                                      refuse_settled=True, report=report,
                                      batch=group)
        except Exception as error:
            won = error
        results[index] = (consumer, won, report)

    threads = [threading.Thread(target=claim, args=(index,) + target)
               for index, target in enumerate(targets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def _allocated():
    with db_api.reader() as session:
        return dict(session.execute(sa.text(
            'SELECT consumer_uuid, compute_node_id FROM allocations')).all())


def test_concurrent_claims_go_together_each_with_its_outcome(
        postgresql_database):
    assert group_commit.supported()
    full_soon = test_claims.make_node('small', vcpus=4)
    roomy = test_claims.make_node('big', vcpus=64)
    group = group_commit.GroupCommit(base.ClaimSlots(2))
    targets = [(full_soon, R(1, 256, 1))] * 8 + [(roomy, R(1, 256, 1))] * 4

    with _Slow(db_api.get_engine()):
        results = _claim_together(group, targets)

    outcomes = [won for _consumer, won, _report in results]
    assert all(won in (True, False) for won in outcomes), outcomes
    # Room for four on the small node, whichever four; every claim on the
    # big one made.
    assert outcomes[:8].count(True) == 4
    assert outcomes[8:] == [True] * 4
    made = {consumer for consumer, won, _report in results if won}
    assert set(_allocated()) == made
    assert test_claims.used_vcpus(full_soon) == 4
    assert test_claims.used_vcpus(roomy) == 4
    # Claims that arrived while one was under way were sent together.
    assert group.stats['claims'] >= 12
    assert group.stats['batched'] > 0
    assert group.stats['batches'] < group.stats['claims']
    # A made claim reports its node's generation after its batch.
    for consumer, won, report in results:
        if won:
            assert report['generation'] >= 2
    assert test_claims.inconsistencies() == []


def test_a_failed_batch_is_made_again_claim_by_claim(postgresql_database):
    node = test_claims.make_node(vcpus=64)
    group = group_commit.GroupCommit(base.ClaimSlots(2))

    with _Slow(db_api.get_engine(), fail_batches=1) as slow:
        results = _claim_together(group, [(node, R(1, 256, 1))] * 8)

    assert slow.fail_batches == 0, 'no batch was sent'
    assert group.stats['batches_failed'] == 1
    assert [won for _consumer, won, _report in results] == [True] * 8
    assert set(_allocated()) == {consumer for consumer, _, _ in results}
    assert test_claims.used_vcpus(node) == 8
    assert test_claims.inconsistencies() == []


def test_a_claim_alone_is_sent_at_once(postgresql_database):
    node = test_claims.make_node()
    group = group_commit.GroupCommit(base.ClaimSlots(2))
    report = {}
    before = test_claims.node_state(node)['generation']

    assert claims.claim_in_sql(node, str(uuid.uuid4()), R(1, 512, 5),
                               report=report, batch=group) is True
    assert claims.claim_in_sql(node, str(uuid.uuid4()), R(9, 512, 5),
                               batch=group) is False

    assert report == {'generation': before + 1}
    assert group.stats['batches'] == 2
    assert group.stats['batched'] == 0


def test_a_driver_groups_its_concurrent_claims(postgresql_database, config,
                                               make_driver):
    # (Off by default: see [filter_scheduler] claim_group_commit.)
    config.config(host_state_refresh_interval=3600, group='scheduler')
    config.config(claim_group_commit=True, group='filter_scheduler')
    cloud = fakes.Cloud()
    for number in range(3):
        cloud.add_node('host%d' % number, vcpus=64, memory_mb=65536)
    driver = make_driver(filter_scheduler.FilterScheduler)
    driver.start()
    uuids = fakes.uuids(12)
    placed, errors = fakes.place_together(driver, uuids,
                                          _Slow(db_api.get_engine()))
    driver.stop()

    assert not errors
    assert len(placed) == len(uuids)
    assert sorted(_allocated()) == sorted(uuids)
    stats = driver.claimer.group_stats()
    assert stats['batched'] > 0
    assert test_claims.inconsistencies() == []


def test_claims_are_not_grouped_by_default(postgresql_database, config,
                                           make_driver):
    config.config(host_state_refresh_interval=3600, group='scheduler')
    cloud = fakes.Cloud()
    cloud.add_node('host0', vcpus=64, memory_mb=65536)
    driver = make_driver(filter_scheduler.FilterScheduler)
    driver.start()
    driver.select_destinations(None, fakes.spec(vcpus=1, memory_mb=512),
                               fakes.uuids(1), False)
    driver.stop()
    assert driver.claimer.group_stats() == {}
