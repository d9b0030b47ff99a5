"""The host cache reads each node's inventories beyond the classic classes
and its traits with its row: on the first load, on incremental and full
refreshes, on refresh_nodes, over cells (PostgreSQL's multiplexed reads
too), and shows them in HostTable.placement; HostManager.consume with
``extra`` shows the claim's used amounts at once."""

import uuid

import pytest

from scheduler import host_cache
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes
from scheduler.db import inventories as db_inventories
from scheduler.host_cache import node_extras
from scheduler.resources import request as request_mod
from tests.unit.scheduler.host_cache import (
    test_host_manager_cells_refresh as cells_refresh)
from tests.fixtures import databases
from tests.unit.scheduler import fakes

PCPU = {'total': 8, 'reserved': 0, 'min_unit': 1, 'max_unit': 8,
        'step_size': 1, 'allocation_ratio': 1.0}


def report(cloud, host, inventories=None, traits=None, vcpus=16):
    """What the conductor writes of a compute's report."""
    with db_api.writer() as session:
        node_id = compute_nodes.report_inventory(
            session, cloud.node_row(host).uuid, host, host,
            {'vcpus': vcpus, 'memory_mb': 32768, 'local_gb': 1000})
        db_inventories.report(session, node_id, inventories, traits)


def claim(node_id, consumer, **extra):
    with db_api.writer() as session:
        assert claims.claim_resources(session, node_id, consumer,
                                      claims.Resources(1, 0, 0), extra=extra)


def release(consumer):
    with db_api.writer() as session:
        claims.release_resources(session, consumer)


def by_host(table):
    return {state.host: state for state in table.states}


def ask(**resources):
    return request_mod.ResourceRequest(groups=(request_mod.RequestGroup(
        resources=resources),))


@pytest.fixture
def two_nodes(any_database):
    cloud = fakes.Cloud()
    cloud.add_node('a')
    cloud.add_node('b')
    report(cloud, 'a', {'PCPU': PCPU}, ['HW_CPU_X86_AVX2', 'CUSTOM_GOLD'])
    return cloud


def test_the_first_load_reads_them(two_nodes, make_host_manager):
    table = make_host_manager(auto_refresh=False).snapshot()
    a, b = by_host(table)['a'], by_host(table)['b']
    assert a.inventories == {'PCPU': host_cache.ClassInventory(
        8, 0, 1, 8, 1, 1.0, 0)}
    assert a.traits == {'HW_CPU_X86_AVX2', 'CUSTOM_GOLD'}
    assert b.inventories == {} and b.traits == frozenset()
    placement = table.placement
    assert placement.accepted_root_uuids(ask(PCPU=8)) == [a.uuid]


def test_a_refresh_reads_them_for_the_nodes_it_reads(two_nodes,
                                                     make_host_manager):
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    # A new trait, a changed inventory.
    report(two_nodes, 'b', traits=['CUSTOM_SILVER'])
    report(two_nodes, 'a', {'PCPU': dict(PCPU, total=12)},
           ['HW_CPU_X86_AVX2'])
    table = manager.refresh()
    a, b = by_host(table)['a'], by_host(table)['b']
    assert b.traits == {'CUSTOM_SILVER'}
    assert a.inventories['PCPU'].total == 12
    assert a.traits == {'HW_CPU_X86_AVX2'}
    # A claim's used amount, and its release.
    claim(a.id, 'vm-1', PCPU=5)
    a = by_host(manager.refresh())['a']
    assert a.inventories['PCPU'].used == 5
    assert not manager.snapshot().placement.acceptable_roots(
        ask(PCPU=8)).any()
    release('vm-1')
    assert by_host(manager.refresh())['a'].inventories['PCPU'].used == 0
    # A full read, and refresh_nodes, read them too.
    claim(a.id, 'vm-2', PCPU=2)
    table = manager.refresh(full=True)
    assert by_host(table)['a'].inventories['PCPU'].used == 2
    release('vm-2')
    assert manager.refresh_nodes([a.id])[a.id].inventories['PCPU'].used == 0
    assert by_host(manager.snapshot())['a'].traits == {'HW_CPU_X86_AVX2'}


def test_consume_with_extra_shows_in_the_shared_placement(
        two_nodes, make_host_manager):
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    a = by_host(table)['a']
    assert table.placement.accepted_root_uuids(ask(PCPU=8)) == [a.uuid]
    manager.consume(a.id, claims.Resources(1, 0, 0), extra={'PCPU': 3})
    shared = manager.snapshot()
    assert by_host(shared)['a'].inventories['PCPU'].used == 3
    assert shared.placement.columns.used_of(a.uuid, 'PCPU') == 3
    assert shared.placement.accepted_root_uuids(ask(PCPU=5)) == [a.uuid]
    assert not shared.placement.acceptable_roots(ask(PCPU=6)).any()
    # A class the cached row does not know is left out (the claim in SQL
    # decides), the rest recorded.
    manager.consume(a.id, claims.Resources(1, 0, 0),
                    extra={'CUSTOM_NEW': 1})
    assert by_host(manager.snapshot())['a'].vcpus_used == 2


def test_a_disabled_service_gives_compute_status_disabled(
        two_nodes, make_host_manager):
    two_nodes.disable('b')
    table = make_host_manager(auto_refresh=False).snapshot()
    disabled = request_mod.ResourceRequest(groups=(request_mod.RequestGroup(
        resources={'VCPU': 1}, required_traits=frozenset(
            [host_cache.COMPUTE_STATUS_DISABLED])),))
    assert table.placement.accepted_root_uuids(disabled) == [
        by_host(table)['b'].uuid]


def test_nodes_without_rows_cost_one_statement_and_none_without_nodes(
        any_database):
    with db_api.reader() as session:
        assert node_extras.read(session, []) == node_extras.none()
        assert node_extras.read(session, [1, 2]) == node_extras.none()
        assert node_extras.read(session) == node_extras.none()


def test_reads_by_ids_in_chunks_and_all_above_the_limit(
        two_nodes, monkeypatch):
    a = two_nodes.nodes['a']
    with db_api.reader() as session:
        everything = node_extras.read(session)
        monkeypatch.setattr(node_extras, 'ID_CHUNK', 1)
        assert node_extras.read(session, [a, two_nodes.nodes['b']]) == \
            everything
        monkeypatch.setattr(node_extras, 'ALL_ABOVE', 1)
        assert node_extras.read(session, [a, 999], offset=10) == \
            node_extras.read(session, [a], offset=10)
    assert set(everything.inventories) == {a}
    assert everything.of(a)[1] == {'HW_CPU_X86_AVX2', 'CUSTOM_GOLD'}


# -- over cells ---------------------------------------------------------------

CELL1, CELL2 = cells_refresh.CELL1, cells_refresh.CELL2
in_cell = cells_refresh.in_cell


@pytest.fixture(params=databases.BACKENDS)
def own_cells(request, api_database, database):
    with cells_refresh.cells_of_their_own(request.param) as urls:
        yield urls


def test_cells_read_them_whole_and_incrementally(own_cells,
                                                 make_host_manager):
    cloud = fakes.Cloud()
    in_cell(own_cells[CELL1], cloud.add_node, 'a1')
    in_cell(own_cells[CELL2], cloud.add_node, 'b1')
    in_cell(own_cells[CELL2], report, cloud, 'b1', {'PCPU': PCPU},
            ['CUSTOM_GOLD'])
    manager = make_host_manager(auto_refresh=False)
    b1 = by_host(manager.snapshot())['b1']
    assert b1.inventories['PCPU'].total == 8
    assert b1.traits == {'CUSTOM_GOLD'}
    assert by_host(manager.snapshot())['a1'].traits == frozenset()
    manager.refresh()
    # Incremental (on PostgreSQL, the multiplexed reads).
    in_cell(own_cells[CELL2], report, cloud, 'b1', {'PCPU': PCPU},
            ['CUSTOM_SILVER'])
    in_cell(own_cells[CELL1], report, cloud, 'a1', traits=['CUSTOM_A'])
    node = host_cache.node_id(b1.id)
    in_cell(own_cells[CELL2], claim, node, str(uuid.uuid4()), PCPU=3)
    with cells_refresh.statements_per_cell(
            own_cells) as counts:
        table = manager.refresh()
    assert counts == {CELL1: 2, CELL2: 2}
    b1, a1 = by_host(table)['b1'], by_host(table)['a1']
    assert b1.traits == {'CUSTOM_SILVER'}
    assert b1.inventories['PCPU'].used == 3
    assert a1.traits == {'CUSTOM_A'}
    # Nothing new: the nodes read again within the slack take no extras.
    with cells_refresh.statements_per_cell(
            own_cells) as counts:
        table = manager.refresh()
    assert counts == {CELL1: 1, CELL2: 1}
    assert by_host(table)['b1'].inventories['PCPU'].used == 3
    assert table.placement.accepted_root_uuids(ask(PCPU=5)) == [b1.uuid]
