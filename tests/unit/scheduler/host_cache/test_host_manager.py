import datetime
import os
import threading
import time

import numpy as np
import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes
from scheduler.db import models
from scheduler.db import services as db_services
from scheduler.host_cache import host_reads
from scheduler.host_cache import host_table
from scheduler.host_cache import refresh_changes
from scheduler.sim import cloud as sim_cloud

_NODE = models.ComputeNode.__table__


def _report(cloud, nodename, **inventory):
    row = cloud.node_row(nodename)
    with db_api.writer() as session:
        compute_nodes.report_inventory(session, row.uuid, row.host,
                                       nodename, inventory)


def _state(table, nodename):
    return table.states[int(table.rows_by_nodename[nodename][0])]


def _wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def _hosts_read_by_written_since(monkeypatch):
    """A list that gets, at each incremental refresh, the hosts whose
    full rows its read returned: compute_nodes.written_since, or on
    psycopg2 host_reads.read_cell_changes (the real ones run)."""
    read = []
    written_since = compute_nodes.written_since
    read_cell_changes = host_reads.read_cell_changes

    def spy(session, since, **kwargs):
        rows = written_since(session, since, **kwargs)
        read.append(sorted(row.host for row in rows))
        return rows

    def cell_spy(*args, **kwargs):
        nodes, services = read_cell_changes(*args, **kwargs)
        read.append(sorted(row.host for row in nodes))
        return nodes, services

    monkeypatch.setattr(compute_nodes, 'written_since', spy)
    monkeypatch.setattr(host_reads, 'read_cell_changes', cell_spy)
    return read


def test_snapshot_loads_nodes_services_and_mapping(cloud,
                                                   make_host_manager):
    cloud.add_node('a', memory_mb=4096)
    cloud.add_node('b', mapped=False)
    cloud.add_node('c', up=False)
    table = make_host_manager(auto_refresh=False).snapshot()
    assert [s.host for s in table.states] == ['a', 'b', 'c']
    assert list(table.candidates) == [True, False, False]
    a = _state(table, 'a')
    assert a.total_usable_ram_mb == 4096
    assert a.service.binary == 'gantt-compute' and a.service_up()
    # No ratio reported: [DEFAULT] initial_cpu_allocation_ratio.
    assert a.cpu_allocation_ratio == 4.0
    assert _state(table, 'c').service is None


def test_refresh_reads_only_what_changed(cloud, make_host_manager):
    for name in 'abcd':
        cloud.add_node(name, memory_mb=4096)
    manager = make_host_manager(auto_refresh=False)
    old = manager.snapshot().detached()
    assert manager.stats['nodes_read'] == 4
    _report(cloud, 'c', memory_mb=8192)
    new = manager.refresh()
    assert manager.stats['nodes_read'] == 5
    assert _state(new, 'c').total_usable_ram_mb == 8192
    assert _state(old, 'c').total_usable_ram_mb == 4096
    assert new.capacity['memory_mb'][2] == 8192 * 1.0
    # Nothing changed: nothing read, no rebuild.
    builds = manager.stats['full_builds']
    assert manager.refresh() is new
    assert manager.stats['nodes_read'] == 5
    assert manager.stats['full_builds'] == builds


def test_refresh_sees_new_removed_and_mapped_nodes(cloud,
                                                   make_host_manager):
    cloud.add_node('a')
    cloud.add_node('b', mapped=False)
    manager = make_host_manager(auto_refresh=False)
    assert list(manager.snapshot().candidates) == [True, False]
    cloud.add_node('c')
    with db_api.writer() as session:
        compute_nodes.map_unmapped_nodes(session)
        session.execute(sa.delete(_NODE).where(
            _NODE.c.id == cloud.nodes['a']))
    table = manager.refresh()
    # Rows written since the last refresh are read at once; a deleted
    # row is noticed by the full read (every FULL_READ_INTERVAL seconds).
    assert [s.host for s in table.states] == ['a', 'b', 'c']
    assert list(table.candidates) == [True, True, True]
    table = manager.refresh(full=True)
    assert [s.host for s in table.states] == ['b', 'c']
    assert list(table.candidates) == [True, True]


def test_refresh_reads_the_rows_written_since_the_last(cloud,
                                                         make_host_manager,
                                                         monkeypatch):
    for name in 'abcdef':
        cloud.add_node(name)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    # Rows written long ago are not read again, even the ones whose
    # generation changed behind the cache's back (only a full read, or a
    # write that sets updated_at, shows them).
    old = models.utcnow() - datetime.timedelta(hours=1)
    with db_api.writer() as session:
        session.execute(sa.update(_NODE).values(updated_at=old))
        session.execute(sa.update(_NODE).where(
            _NODE.c.host == 'e').values(generation=_NODE.c.generation + 5,
                                        updated_at=old))
    manager.refresh(full=True)
    read = _hosts_read_by_written_since(monkeypatch)
    _report(cloud, 'b', memory_mb=1234)
    with db_api.writer() as session:
        session.execute(sa.update(_NODE).where(
            _NODE.c.host == 'f').values(vcpus=99, updated_at=old,
                                        generation=_NODE.c.generation + 1))
    table = manager.refresh()
    assert read == [['b']]
    assert _state(table, 'b').total_usable_ram_mb == 1234
    assert _state(table, 'f').vcpus_total != 99
    manager.refresh(full=True)
    assert _state(manager.snapshot(), 'f').vcpus_total == 99


def test_refresh_fetches_a_changed_row_once_within_the_slack(
        cloud, make_host_manager, monkeypatch):
    """Each refresh reads the last WRITE_SLACK seconds again (late
    commits); the rows it already holds at their generation come back
    as ids only, not as full rows."""
    for name in 'abc':
        cloud.add_node(name)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    # (On PostgreSQL the rows written in the slack before the first load
    # are read once more.)
    manager.refresh()
    fetched = _hosts_read_by_written_since(monkeypatch)
    _report(cloud, 'b', memory_mb=1234)
    manager.refresh()
    manager.refresh()
    _report(cloud, 'c', memory_mb=2345)
    table = manager.refresh()
    # 'b' is within the slack at the second and third refresh: fetched
    # once, when it changed.
    assert fetched == [['b'], [], ['c']]
    assert _state(table, 'b').total_usable_ram_mb == 1234
    assert _state(table, 'c').total_usable_ram_mb == 2345


def test_refresh_sees_service_changes(cloud, make_host_manager):
    cloud.add_node('a')
    cloud.add_node('b')
    manager = make_host_manager(auto_refresh=False)
    assert not any(s.service_disabled for s in manager.snapshot().states)
    cloud.disable('b', reason='bad fan')
    table = manager.refresh()
    b = _state(table, 'b')
    assert b.service_disabled and b.disabled_reason == 'bad fan'
    assert list(table.disabled) == [False, True]


def _heard_from(host, seconds_ago):
    """The service's last heartbeat was ``seconds_ago``; its updated_at
    does not move (as with a heartbeat)."""
    services = models.Service.__table__
    with db_api.writer() as session:
        session.execute(
            sa.update(services).where(services.c.host == host).values(
                last_seen_up=models.utcnow()
                - datetime.timedelta(seconds=seconds_ago),
                updated_at=services.c.updated_at))


def test_the_simulators_heartbeats_are_not_read_again(
        cloud, make_host_manager, config, monkeypatch):
    # The simulator's and the benchmarks' computes heartbeat all at once
    # (sim_cloud.heartbeat_all); like real heartbeats, they move no row's
    # updated_at, so a refresh within WRITE_SLACK of them reads none
    # again (at 100,000 hosts, 100,000 rows read over a second or two).
    config.config(service_down_time=60)
    for host in ('a', 'b', 'c'):
        cloud.add_node(host)
    _heard_from('b', 61)
    manager = make_host_manager(auto_refresh=False)
    assert list(manager.snapshot().service_up()) == [True, False, True]
    # No slack from here: only what the heartbeats wrote could be read.
    monkeypatch.setattr(refresh_changes, 'WRITE_SLACK', 0)
    manager.refresh()
    read = manager.stats['services_read']
    with db_api.reader() as session:
        before = {row.host: row for row in
                  db_services.list_services(session)}
    sim_cloud.heartbeat_all()
    with db_api.reader() as session:
        after = {row.host: row for row in
                 db_services.list_services(session)}
    assert set(after) == {'a', 'b', 'c'}
    for host, row in after.items():
        assert row.updated_at == before[host].updated_at
        assert row.last_seen_up > before[host].last_seen_up
        assert row.report_count == before[host].report_count + 1
    table = manager.refresh()
    # b, dead before, is read again (it came back); the others are not.
    assert manager.stats['services_read'] == read + 1
    assert list(table.service_up()) == [True, True, True]


def test_refresh_reads_liveness_transitions_not_heartbeats(
        cloud, make_host_manager, config, monkeypatch):
    config.config(service_down_time=60)
    # No slack for the writes of clocks that lag: the registrations
    # below are not read again.
    monkeypatch.setattr(refresh_changes, 'WRITE_SLACK', 0)
    for host in ('a', 'b', 'c'):
        cloud.add_node(host)
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    assert list(table.service_up()) == [True, True, True]
    manager.refresh()
    # Heartbeats of live services are not read, and change nothing.
    before = list(manager.snapshot().states)
    read = manager.stats['services_read']
    for host in ('a', 'b', 'c'):
        cloud.heartbeat(host)
    table = manager.refresh()
    assert manager.stats['services_read'] == read
    assert list(table.states) == before
    # b stops heartbeating: once its last heartbeat is older than
    # service_down_time, the next refresh takes it out.
    _heard_from('b', 59)
    assert list(manager.refresh().service_up()) == [True, True, True]
    _heard_from('b', 61)
    table = manager.refresh()
    assert list(table.service_up()) == [True, False, True]
    assert not _state(table, 'b').service_up()
    # While it stays dead each refresh reads its row (one per dead
    # service) and changes nothing.
    read = manager.stats['services_read']
    dead = _state(table, 'b')
    table = manager.refresh()
    assert manager.stats['services_read'] == read + 1
    assert _state(table, 'b') is dead
    # It heartbeats again: up at the next refresh.
    cloud.heartbeat('b')
    table = manager.refresh()
    assert list(table.service_up()) == [True, True, True]
    assert _state(table, 'b').service_up()
    # The periodic full read agrees, and restates nothing.
    before = list(table.states)
    assert list(manager.refresh(full=True).states) == before


def _write_lagging(host, **values):
    """Write the host's service with an ``updated_at`` an hour old, as a
    writer whose clock lags: the incremental reads do not see it."""
    services = models.Service.__table__
    with db_api.writer() as session:
        session.execute(sa.update(services).where(
            services.c.host == host).values(
                updated_at=models.utcnow() - datetime.timedelta(hours=1),
                **values))


def test_a_full_read_finds_the_service_changes_incremental_reads_missed(
        cloud, make_host_manager, monkeypatch):
    """The service writes of a clock that lags, deleted services and
    services registered unseen: a full read finds each. While the cache
    and the database agree on which services are unusual (disabled,
    forced down, dead), it reads only those
    (host_reads.read_service_differences); a service gone or added
    unseen, and it reads every one."""
    monkeypatch.setattr(refresh_changes, 'WRITE_SLACK', 0)
    for host in ('a', 'b', 'c', 'd', 'e'):
        cloud.add_node(host)
    cloud.disable('b', 'bad fan')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    manager.refresh()
    _write_lagging('a', disabled=True, disabled_reason='psu')
    _write_lagging('b', disabled=False, disabled_reason=None)
    _write_lagging('c', forced_down=True)
    table = manager.refresh()
    assert [state.service_disabled for state in table.states] == [
        False, True, False, False, False]
    read = manager.stats['services_read']
    table = manager.refresh(full=True)
    # a, b and c: the rows that differ, not the five.
    assert manager.stats['services_read'] == read + 3
    assert [state.service_disabled for state in table.states] == [
        True, False, False, False, False]
    assert _state(table, 'a').disabled_reason == 'psu'
    assert list(table.service_up()) == [True, True, False, True, True]
    # A row deleted: every row is read, and d has no service.
    services = models.Service.__table__
    with db_api.writer() as session:
        session.execute(sa.delete(services).where(services.c.host == 'd'))
    read = manager.stats['services_read']
    table = manager.refresh(full=True)
    assert manager.stats['services_read'] == read + 4
    assert _state(table, 'd').service is None
    assert list(table.service_up()) == [True, True, False, False, True]
    # A service registered with a lagging clock: every row again.
    with db_api.writer() as session:
        db_services.report_alive(session, 'd', 'gantt-compute', 'compute')
    _write_lagging('d')
    read = manager.stats['services_read']
    table = manager.refresh(full=True)
    assert manager.stats['services_read'] == read + 5
    assert list(table.service_up()) == [True, True, False, True, True]
    # Agreed again: only the unusual ones (a disabled, c forced down).
    read = manager.stats['services_read']
    before = list(table.states)
    assert list(manager.refresh(full=True).states) == before
    assert manager.stats['services_read'] == read + 2


def test_a_service_that_never_heartbeated_counts_from_created_at(
        cloud, make_host_manager):
    """As Nova's DB servicegroup driver: a service with no last_seen_up is
    up while its created_at is within service_down_time. The incremental
    refresh re-reads such rows, so it notices when created_at ages out
    although nothing wrote the row."""
    cloud.add_node('a')
    cloud.add_node('b')
    services = models.Service.__table__
    with db_api.writer() as session:
        session.execute(sa.update(services).where(services.c.host == 'b')
                        .values(last_seen_up=None))
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    assert list(table.service_up()) == [True, True]
    assert [state.service_up() for state in table.states] == [True, True]
    # Ten minutes ago, and not written since the last refresh.
    long_ago = models.utcnow() - datetime.timedelta(minutes=10)
    with db_api.writer() as session:
        session.execute(sa.update(services).where(services.c.host == 'b')
                        .values(created_at=long_ago, updated_at=long_ago))
    table = manager.refresh()
    assert list(table.service_up()) == [True, False]
    assert [state.service_up() for state in table.states] == [True, False]
    cloud.heartbeat('b')
    assert list(manager.refresh().service_up()) == [True, True]


def test_refresh_sees_aggregate_changes(cloud, make_host_manager):
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    assert _state(manager.snapshot(), 'a').availability_zone == 'nova'
    cloud.aggregate('rack', ['a'], availability_zone='az9')
    table = manager.refresh()
    assert _state(table, 'a').availability_zone == 'az9'
    assert list(table.in_zone('az9')) == [True]


def test_consume_updates_the_cache_at_once(cloud, make_host_manager):
    node_id = cloud.add_node('a', vcpus=4)
    cloud.add_node('b', vcpus=4)
    manager = make_host_manager(auto_refresh=False)
    before = manager.snapshot()
    detached = before.detached()
    resources = claims.Resources(2, 1024, 10)
    cloud.take('a', resources)
    manager.consume(node_id, resources, 'inst-1')
    after = manager.snapshot()
    # In place: the table requests are reading takes the claim at once
    # (no copy of every host's columns); a detached copy does not.
    assert after is before
    assert _state(after, 'a').vcpus_used == 2
    assert 'inst-1' in _state(after, 'a').instances
    assert after.vcpus_free[0] == 4 * 4.0 - 2
    assert after.instance_counts(['inst-1']).tolist() == [1, 0]
    assert _state(detached, 'a').vcpus_used == 0
    assert detached.vcpus_used.tolist() == [0, 0]
    assert detached.vcpus_free[0] == 4 * 4.0
    # Every column, derived column and per-state value equals a build.
    fresh = host_table.HostTable.build(after.states)
    for name in fresh.columns:
        assert np.array_equal(after.columns[name], fresh.columns[name]), name
    for name in fresh.derived:
        assert np.array_equal(after.derived[name], fresh.derived[name]), name
    # The refresh reads the claimed row and does not count it twice.
    refreshed = manager.refresh()
    assert _state(refreshed, 'a').vcpus_used == 2
    assert _state(refreshed, 'a').memory_mb_used == 1024


def test_consume_puts_the_instance_on_every_node_of_its_host(
        cloud, make_host_manager):
    # A host of several nodes (baremetal): the claimed node takes the
    # resources, all of the host's nodes hold its instance.
    first = cloud.add_node('bm', nodename='bm-1', vcpus=4)
    cloud.add_node('bm', nodename='bm-2', vcpus=4)
    cloud.add_node('other', vcpus=4)
    manager = make_host_manager(auto_refresh=False)
    before = manager.snapshot()
    originals = {state.nodename: state for state in before.states}
    resources = claims.Resources(2, 1024, 10)
    cloud.take('bm-1', resources)
    manager.consume(first, resources, 'inst-1')
    after = manager.snapshot()
    assert _state(after, 'bm-1').vcpus_used == 2
    assert _state(after, 'bm-2').vcpus_used == 0
    assert 'inst-1' in _state(after, 'bm-1').instances
    assert 'inst-1' in _state(after, 'bm-2').instances
    assert 'inst-1' not in _state(after, 'other').instances
    # The states before the claim are untouched (requests may hold them).
    for name, state in originals.items():
        assert state.vcpus_used == 0 and 'inst-1' not in state.instances
    assert after.instance_counts(['inst-1']).tolist() == [1, 1, 0]
    fresh = host_table.HostTable.build(after.states)
    for name in fresh.columns:
        assert np.array_equal(after.columns[name], fresh.columns[name]), name


@pytest.mark.parametrize('reader,full', [('changed_since', True),
                                         ('written_since', False)])
def test_claim_during_a_refresh_is_not_lost(cloud, make_host_manager,
                                            monkeypatch, reader, full):
    node_id = cloud.add_node('a', vcpus=4)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    _report(cloud, 'a', vcpus=8)
    real_reader = getattr(compute_nodes, reader)

    def read_then_a_claim(*args, **kwargs):
        rows = real_reader(*args, **kwargs)
        # Another request claims and records it while this refresh holds
        # rows read before the claim.
        cloud.take('a', claims.Resources(3, 0, 0))
        manager.consume(node_id, claims.Resources(3, 0, 0))
        return rows

    monkeypatch.setattr(compute_nodes, reader, read_then_a_claim)
    assert _state(manager.refresh(full=full), 'a').vcpus_used == 3
    monkeypatch.setattr(compute_nodes, reader, real_reader)
    table = manager.refresh(full=full)
    assert _state(table, 'a').vcpus_used == 3
    assert _state(table, 'a').vcpus_total == 8


@pytest.mark.parametrize('full', [True, False])
def test_refresh_before_the_claim_commits_keeps_the_reservation(
        cloud, make_host_manager, full):
    node_id = cloud.add_node('a', vcpus=4)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    resources = claims.Resources(3, 0, 0)
    # The request reserves, then a refresh reads the node before the SQL
    # claim is made: what it read does not hold the claim.
    manager.consume(node_id, resources, 'inst-1', in_flight=True)
    _report(cloud, 'a', vcpus=8)
    table = manager.refresh(full=full)
    assert _state(table, 'a').vcpus_used == 3
    assert 'inst-1' in _state(table, 'a').instances
    assert manager.refresh_nodes([node_id]) == {}
    assert _state(manager.snapshot(), 'a').vcpus_used == 3
    # The claim commits and returns: the next refresh reads the node,
    # the claim and the new inventory with it.
    cloud.take('a', resources)
    manager.settle(node_id)
    table = manager.refresh(full=full)
    assert _state(table, 'a').vcpus_used == 3
    assert _state(table, 'a').vcpus_total == 8


def test_a_lost_claim_in_flight_is_rolled_back_by_its_reread(
        cloud, make_host_manager):
    node_id = cloud.add_node('a', vcpus=4)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    # Two claims in flight on one node; one settles (it lost), the
    # other still holds the row.
    manager.consume(node_id, claims.Resources(1, 0, 0), in_flight=True)
    manager.consume(node_id, claims.Resources(2, 0, 0), in_flight=True)
    manager.settle(node_id)
    assert manager.refresh_nodes([node_id]) == {}
    assert _state(manager.snapshot(), 'a').vcpus_used == 3
    cloud.take('a', claims.Resources(2, 0, 0))
    manager.settle(node_id)
    assert manager.refresh_nodes([node_id])[node_id].vcpus_used == 2
    assert _state(manager.snapshot(), 'a').vcpus_used == 2


def _claim_and_settle(cloud, manager, name, resources, others=None):
    """This process's claim on ``name``: reserved, made in SQL, settled
    with the generation it left (as the one-trip claim reports it);
    ``others()`` runs between the reservation and the SQL claim."""
    node_id = cloud.nodes[name]
    manager.consume(node_id, resources, 'inst-%s' % name, in_flight=True)
    if others is not None:
        others()
    cloud.take(name, resources)
    manager.settle(node_id, generation=cloud.node_row(name).generation)


def test_an_own_claim_is_taken_as_read(cloud, make_host_manager,
                                        monkeypatch):
    """The claim left the generation after the one the cached row was
    read at: nothing else wrote the node, the cached row is what SQL
    holds, and the next refresh does not read it again; a later write by
    someone else (the compute's report) is read as usual."""
    cloud.add_node('a', vcpus=8)
    cloud.add_node('b', vcpus=8)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    manager.refresh()       # (see test_refresh_fetches_a_changed_row...)
    read = _hosts_read_by_written_since(monkeypatch)
    _claim_and_settle(cloud, manager, 'a', claims.Resources(3, 512, 10))
    assert manager.stats['claims_taken_as_read'] == 1
    table = manager.refresh()
    assert read[-1] == []
    state = _state(table, 'a')
    row = cloud.node_row('a')
    assert (state.vcpus_used, state.memory_mb_used, state.local_gb_used) \
        == (row.vcpus_used, row.memory_mb_used, row.local_gb_used) \
        == (3, 512, 10)
    # A second claim chains on the generation the first one left.
    _claim_and_settle(cloud, manager, 'a', claims.Resources(1, 0, 0))
    assert manager.stats['claims_taken_as_read'] == 2
    manager.refresh()
    assert read[-1] == []
    _report(cloud, 'a', vcpus=16)
    table = manager.refresh()
    assert read[-1] == ['a']
    assert _state(table, 'a').vcpus_total == 16
    assert _state(table, 'a').vcpus_used == 4


def test_a_node_written_before_the_claim_is_read_again(cloud,
                                                       make_host_manager,
                                                       monkeypatch):
    """Another scheduler claimed on the node after this cache read it:
    the generation skips one, and the refresh reads both claims."""
    cloud.add_node('a', vcpus=8)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    read = _hosts_read_by_written_since(monkeypatch)
    _claim_and_settle(cloud, manager, 'a', claims.Resources(1, 0, 0),
                      others=lambda: cloud.take('a', (2, 0, 0)))
    assert manager.stats['claims_taken_as_read'] == 0
    table = manager.refresh()
    assert read[-1] == ['a']
    assert _state(table, 'a').vcpus_used == 3


def test_claims_in_flight_together_on_a_node_are_read_again(
        cloud, make_host_manager, monkeypatch):
    cloud.add_node('a', vcpus=8)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    read = _hosts_read_by_written_since(monkeypatch)
    node_id = cloud.nodes['a']
    one = claims.Resources(1, 0, 0)
    manager.consume(node_id, one, 'inst-1', in_flight=True)
    manager.consume(node_id, one, 'inst-2', in_flight=True)
    cloud.take('a', one)
    manager.settle(node_id, generation=cloud.node_row('a').generation)
    cloud.take('a', one)
    manager.settle(node_id, generation=cloud.node_row('a').generation)
    assert manager.stats['claims_taken_as_read'] == 0
    table = manager.refresh()
    assert read[-1] == ['a']
    assert _state(table, 'a').vcpus_used == 2


def test_refresh_nodes_rereads_at_once(cloud, make_host_manager):
    node_id = cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    cloud.take('a', (1, 100, 1))
    fresh = manager.refresh_nodes([node_id])
    assert fresh[node_id].vcpus_used == 1
    assert _state(manager.snapshot(), 'a').vcpus_used == 1


def test_background_thread_refreshes_and_stops(cloud, config,
                                               make_host_manager):
    config.config(host_state_refresh_interval=0.05, group='scheduler')
    cloud.add_node('a', memory_mb=1024)
    manager = make_host_manager()
    manager.start()
    _report(cloud, 'a', memory_mb=2048)
    assert _wait_for(lambda: _state(manager.snapshot(), 'a')
                     .total_usable_ram_mb == 2048)
    thread = manager._thread
    assert thread.is_alive()
    manager.stop()
    assert not thread.is_alive()
    # A later snapshot starts it again.
    manager.snapshot()
    assert manager._thread.is_alive()


def test_thread_ends_when_the_database_changes(cloud, config,
                                               make_host_manager):
    config.config(host_state_refresh_interval=0.05, group='scheduler')
    cloud.add_node('a')
    manager = make_host_manager()
    manager.start()
    thread = manager._thread
    config.config(connection='sqlite://', group='database')
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_no_thread_without_auto_refresh(cloud, make_host_manager):
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    assert manager._thread is None


def test_concurrent_consumes_all_count(cloud, make_host_manager):
    node_id = cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    one = claims.Resources(1, 1, 1)

    def consume_many():
        for _ in range(200):
            manager.consume(node_id, one)
            manager.snapshot()

    threads = [threading.Thread(target=consume_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert _state(manager.snapshot(), 'a').vcpus_used == 800


def test_thread_restarts_in_a_forked_child(cloud, config,
                                           make_host_manager):
    config.config(host_state_refresh_interval=0.05, group='scheduler')
    cloud.add_node('a', memory_mb=1024)
    manager = make_host_manager()
    manager.start()
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code
        code = 1
        try:
            _report(cloud, 'a', memory_mb=4096)
            ok = _wait_for(lambda: _state(manager.snapshot(), 'a')
                           .total_usable_ram_mb == 4096, timeout=5)
            code = 0 if ok and manager._thread.is_alive() else 2
        finally:
            os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_compute_binary_is_the_compute_agents():
    assert host_reads.COMPUTE_BINARY == 'gantt-compute'


def test_states_are_restated_without_node_rows(cloud, config,
                                               make_host_manager):
    # The cache keeps no node rows: a service or aggregate change, or a
    # new node, restates the other nodes from their HostStates, with the
    # ratio defaults of now for nodes that report none, their own ratio
    # for the others, and what they consumed kept.
    a_id = cloud.add_node('a', vcpus=4)
    cloud.add_node('b', vcpus=4, cpu_allocation_ratio=3.0)
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    assert _state(table, 'a').cpu_allocation_ratio == 4.0
    assert _state(table, 'b').cpu_allocation_ratio == 3.0
    manager.consume(a_id, claims.Resources(1, 0, 0))
    manager._reread.clear()   # as if the claim's row had been read
    manager._generations[a_id] = cloud.node_row('a').generation
    config.config(cpu_allocation_ratio=2.0)
    cloud.disable('a', reason='maintenance')
    table = manager.refresh()
    a = _state(table, 'a')
    assert a.service_disabled and a.cpu_allocation_ratio == 2.0
    assert a.vcpus_used == 1
    assert table.capacity['vcpus'][0] == 4 * 2.0
    cloud.aggregate('rack', ['b'], availability_zone='az2')
    cloud.add_node('c')
    table = manager.refresh()
    # The rows of each set of zones together, in node order.
    assert [s.host for s in table.states] == ['a', 'c', 'b']
    assert _state(table, 'a').vcpus_used == 1
    assert _state(table, 'b').cpu_allocation_ratio == 3.0
    assert _state(table, 'b').availability_zone == 'az2'
    assert _state(table, 'c').cpu_allocation_ratio == 2.0
    # Hosts in the same zones share one set.
    assert (_state(table, 'a').availability_zones
            is _state(table, 'c').availability_zones)
