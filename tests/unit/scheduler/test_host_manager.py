import os
import threading
import time

import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes
from scheduler.db import models
from scheduler import host_manager

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
    assert a.cpu_allocation_ratio == 16.0
    assert _state(table, 'c').service is None


def test_refresh_reads_only_what_changed(cloud, make_host_manager):
    for name in 'abcd':
        cloud.add_node(name, memory_mb=4096)
    manager = make_host_manager(auto_refresh=False)
    old = manager.snapshot()
    assert manager.stats['nodes_read'] == 4
    _report(cloud, 'c', memory_mb=8192)
    new = manager.refresh()
    assert manager.stats['nodes_read'] == 5
    assert _state(new, 'c').total_usable_ram_mb == 8192
    assert _state(old, 'c').total_usable_ram_mb == 4096
    assert new.capacity['memory_mb'][2] == 8192 * 1.5
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
    assert [s.host for s in table.states] == ['b', 'c']
    assert list(table.candidates) == [True, True]


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
    manager = make_host_manager(auto_refresh=False)
    before = manager.snapshot()
    resources = claims.Resources(2, 1024, 10)
    cloud.take('a', resources)
    manager.consume(node_id, resources)
    after = manager.snapshot()
    assert _state(before, 'a').vcpus_used == 0
    assert _state(after, 'a').vcpus_used == 2
    # The refresh reads the claimed row and does not count it twice.
    refreshed = manager.refresh()
    assert _state(refreshed, 'a').vcpus_used == 2
    assert _state(refreshed, 'a').memory_mb_used == 1024


def test_claim_during_a_refresh_is_not_lost(cloud, make_host_manager,
                                            monkeypatch):
    node_id = cloud.add_node('a', vcpus=4)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    _report(cloud, 'a', vcpus=8)
    real_changed_since = compute_nodes.changed_since

    def changed_since_then_a_claim(session, known):
        rows = real_changed_since(session, known)
        # Another request claims and records it while this refresh holds
        # rows read before the claim.
        cloud.take('a', claims.Resources(3, 0, 0))
        manager.consume(node_id, claims.Resources(3, 0, 0))
        return rows

    monkeypatch.setattr(compute_nodes, 'changed_since',
                        changed_since_then_a_claim)
    assert _state(manager.refresh(), 'a').vcpus_used == 3
    monkeypatch.setattr(compute_nodes, 'changed_since', real_changed_since)
    table = manager.refresh()
    assert _state(table, 'a').vcpus_used == 3
    assert _state(table, 'a').vcpus_total == 8


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
    assert host_manager.COMPUTE_BINARY == 'gantt-compute'
