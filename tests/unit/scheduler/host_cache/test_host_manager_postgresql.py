"""The host cache on PostgreSQL through psycopg2, where an incremental
refresh is one prepared statement that leaves out the rows the cache
holds (HostManager._read_changes_at_once), then the aggregates'
fingerprint: the refresh tests of test_host_manager run again here, and
the ones of what the statement leaves out."""

import contextlib
import datetime
import random
import time
import uuid

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import models
from scheduler.host_cache import host_reads
from scheduler.host_cache import refreshing
from tests.fixtures import databases
# Run again on PostgreSQL (the module's `database` below).
from tests.unit.scheduler.host_cache.test_host_manager import (  # noqa: F401
    _claim_and_settle, _hosts_read_by_written_since, _report, _state,
    test_a_full_read_finds_the_service_changes_incremental_reads_missed,
    test_a_lost_claim_in_flight_is_rolled_back_by_its_reread,
    test_a_node_written_before_the_claim_is_read_again,
    test_a_service_that_never_heartbeated_counts_from_created_at,
    test_an_own_claim_is_taken_as_read,
    test_claims_in_flight_together_on_a_node_are_read_again,
    test_consume_updates_the_cache_at_once,
    test_refresh_before_the_claim_commits_keeps_the_reservation,
    test_refresh_fetches_a_changed_row_once_within_the_slack,
    test_refresh_nodes_rereads_at_once,
    test_refresh_reads_liveness_transitions_not_heartbeats,
    test_refresh_reads_only_what_changed,
    test_refresh_reads_the_rows_written_since_the_last,
    test_refresh_sees_aggregate_changes,
    test_refresh_sees_new_removed_and_mapped_nodes,
    test_refresh_sees_service_changes)


@pytest.fixture
def database(config):
    """A fresh PostgreSQL database with Gantt's schema (psycopg2)."""
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(
                databases.migrated_database('postgresql', config))
        except databases.ServerDown as error:
            pytest.fail(str(error), pytrace=False)
        assert db_api.get_engine().dialect.driver == 'psycopg2'
        yield url


def _known_sent(monkeypatch):
    """A list that gets the ``known`` pairs each incremental read sent,
    as ``{node id: generation}``."""
    sent = []
    real = host_reads.read_cell_changes

    def spy(*args, known=None, **kwargs):
        sent.append(dict(zip(*known)) if known is not None else None)
        return real(*args, known=known, **kwargs)

    monkeypatch.setattr(host_reads, 'read_cell_changes', spy)
    return sent


def test_the_read_leaves_out_the_rows_the_cache_holds(cloud,
                                                      make_host_manager,
                                                      monkeypatch):
    for name in 'abc':
        cloud.add_node(name)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    sent = _known_sent(monkeypatch)
    read = _hosts_read_by_written_since(monkeypatch)
    # Written in the slack before the first load: read once more, then
    # held.
    manager.refresh()
    assert read[-1] == ['a', 'b', 'c']
    assert sent[-1] == {}
    _report(cloud, 'a', memory_mb=1000)
    _report(cloud, 'b', memory_mb=2000)
    manager.refresh()
    assert read[-1] == ['a', 'b']
    # Within the slack, a and b come no more: the cache holds them at
    # the generation they have.
    manager.refresh()
    assert read[-1] == []
    # (c was read by the first refresh: held too.)
    assert sent[-1] == {cloud.nodes[name]: cloud.node_row(name).generation
                        for name in 'abc'}
    # Written again (a new generation): read, whatever the cache held.
    _report(cloud, 'a', memory_mb=3000)
    table = manager.refresh()
    assert read[-1] == ['a']
    assert _state(table, 'a').total_usable_ram_mb == 3000
    # A row written without a new generation but read again on purpose
    # (a lost claim marks it): the reread ids always come.
    manager.settle(cloud.nodes['b'])
    manager.refresh()
    assert read[-1] == ['b']


def test_a_node_learned_long_ago_is_sent_no_more(cloud, make_host_manager,
                                                  monkeypatch):
    """The pairs sent are those the cache took within twice the slack
    before the last refresh began: the statement stays small however
    long the cache runs."""
    for name in 'ab':
        cloud.add_node(name)
    clock = _Clock()
    monkeypatch.setattr(refreshing, 'time', clock)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    sent = _known_sent(monkeypatch)
    start = clock.now
    manager.refresh()                       # a and b taken at start
    _report(cloud, 'a', memory_mb=1000)
    manager.refresh()                       # a taken again at start
    clock.now = start + 3
    _report(cloud, 'b', memory_mb=1000)
    manager.refresh()                       # b taken at start + 3
    clock.now = start + 5
    manager.refresh()
    assert set(sent[-1]) == {cloud.nodes['a'], cloud.nodes['b']}
    # The last refresh began at start + 5: the horizon is start + 1.
    read = _hosts_read_by_written_since(monkeypatch)
    clock.now = start + 6
    manager.refresh()
    assert set(sent[-1]) == {cloud.nodes['b']}
    # By the database's clock (the test moves only the cache's) 'a' is
    # still within the slack: read once more, and held again.
    assert read[-1] == ['a']
    # Both leave the slack: once the horizon passes them, none is sent.
    long_ago = models.utcnow() - datetime.timedelta(hours=1)
    with db_api.writer() as session:
        session.execute(sa.update(models.ComputeNode.__table__)
                        .values(updated_at=long_ago))
    clock.now = start + 20
    manager.refresh()
    manager.refresh()
    assert sent[-1] == {}
    assert read[-2:] == [[], []]


class _Clock:
    """host_manager's ``time`` with a monotonic clock the test moves."""

    def __init__(self):
        self.now = time.monotonic()
        self.perf_counter = time.perf_counter
        self.time = time.time

    def monotonic(self):
        return self.now


def test_an_unchanged_fingerprint_reads_no_aggregates(cloud,
                                                      make_host_manager,
                                                      monkeypatch):
    cloud.add_node('a')
    cloud.aggregate('rack', ['a'], availability_zone='az1')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    reads = []
    real = db_aggregates.get_all

    def spy(session):
        reads.append(1)
        return real(session)

    monkeypatch.setattr(db_aggregates, 'get_all', spy)
    manager.refresh()
    manager.refresh()
    # The fingerprint the first load read (through SQLAlchemy) equals
    # the one of the prepared statement: nothing read again.
    assert reads == []
    cloud.aggregate('row', ['a'], availability_zone='az1')
    manager.refresh()
    assert len(reads) == 1
    manager.refresh()
    assert len(reads) == 1


def test_refreshes_among_concurrent_writers_match_a_fresh_load(
        cloud, make_host_manager):
    """Claims taken as read, claims of other schedulers, reports and
    lost claims, with refreshes in between: after each refresh, every
    node's usage in the cache is what a new cache loads."""
    rng = random.Random(7)
    names = ['n%d' % number for number in range(12)]
    for name in names:
        cloud.add_node(name, vcpus=64, memory_mb=262144)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    for step in range(60):
        name = rng.choice(names)
        what = rng.random()
        one = claims.Resources(1, 256, 1)
        if what < 0.4:
            _claim_and_settle(cloud, manager, name, one)
        elif what < 0.6:
            cloud.take(name, one)             # another scheduler
        elif what < 0.7:
            _report(cloud, name, vcpus=64 + rng.randrange(8))
        elif what < 0.8:
            # Reserved, then lost: the claim did not happen.
            node_id = cloud.nodes[name]
            manager.consume(node_id, one, str(uuid.uuid4()),
                            in_flight=True)
            manager.settle(node_id)
            manager.refresh_nodes([node_id])
        if rng.random() < 0.4:
            table = manager.refresh()
            fresh = make_host_manager(auto_refresh=False).snapshot()
            for other in names:
                got, want = _state(table, other), _state(fresh, other)
                assert (got.vcpus_used, got.memory_mb_used,
                        got.local_gb_used, got.vcpus_total) == (
                    want.vcpus_used, want.memory_mb_used,
                    want.local_gb_used, want.vcpus_total), (step, other)


def test_a_refresh_whose_session_ended_is_an_outage_then_reads(
        database, cloud, make_host_manager):
    """The server ended the pooled sessions (a restart): the refresh on
    the prepared statement fails as a lost connection (the refresh loop
    logs an outage and keeps the cache), and the next one prepares its
    statements on a new connection and reads what changed meanwhile."""
    cloud.add_node('a', memory_mb=4096)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    manager.refresh()
    _report(cloud, 'a', memory_mb=8192)
    databases.end_sessions(database)
    with pytest.raises(db_exc.DBConnectionError):
        manager.refresh()
    assert _state(manager.snapshot(), 'a').total_usable_ram_mb == 4096
    table = manager.refresh()
    assert _state(table, 'a').total_usable_ram_mb == 8192


def test_at_most_the_newest_known_pairs_are_sent(cloud, make_host_manager,
                                                 monkeypatch):
    monkeypatch.setattr(refreshing, 'MAX_KNOWN_PAIRS', 2)
    for name in 'abc':
        cloud.add_node(name)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    manager.refresh()
    sent = _known_sent(monkeypatch)
    read = _hosts_read_by_written_since(monkeypatch)
    for name in 'cab':
        _report(cloud, name, memory_mb=1000)
        manager.refresh()
    table = manager.refresh()
    # Two of the three, the newest taken; the one left out comes again
    # (it is in the slack), and the cache holds it as it is.
    assert len(sent[-1]) == 2
    names = {node_id: name for name, node_id in cloud.nodes.items()}
    assert read[-1] == sorted(set('abc') - {names[node_id]
                                            for node_id in sent[-1]})
    for name in 'abc':
        assert _state(table, name).total_usable_ram_mb == 1000
