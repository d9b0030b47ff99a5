"""HostManager: aggregate changes from the fanout casts apply at once."""

from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import claims
from tests.unit.scheduler import fakes


def _zones(table):
    return {state.host: state.availability_zone for state in table.states}


def _in_sql(name, hosts=(), **metadata):
    with db_api.writer() as session:
        agg = db_aggregates.create(session, name, metadata=metadata)
        if hosts:
            agg = db_aggregates.add_hosts(session, agg.id, list(hosts))
    return agg


def test_update_applies_zones_and_multipliers_without_a_refresh(
        cloud, make_host_manager):
    for host in ('a', 'b', 'c'):
        cloud.add_node(host)
    manager = make_host_manager(auto_refresh=False)
    before = manager.snapshot()
    agg = fakes.aggregate('rack1', ['a', 'b'], availability_zone='az1',
                          ram_weight_multiplier='2.5')
    manager.update_aggregates([agg])
    table = manager.snapshot()
    assert _zones(table) == {'a': 'az1', 'b': 'az1', 'c': 'nova'}
    assert list(table.in_zone('az1')) == [True, True, False]
    assert list(table.aggregate_multipliers('ram_weight_multiplier')[:2]) \
        == [2.5, 2.5]
    assert table.states[0].aggregates == (agg,)
    # The snapshot a request already holds does not change under it.
    assert _zones(before) == {'a': 'nova', 'b': 'nova', 'c': 'nova'}
    assert manager.stats['aggregate_updates'] == 1


def test_update_moves_hosts_in_and_out_and_delete_forgets(
        cloud, make_host_manager):
    for host in ('a', 'b'):
        cloud.add_node(host)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    agg = fakes.aggregate('rack1', ['a'], availability_zone='az1')
    manager.update_aggregates([agg])
    moved = db_aggregates.Aggregate(id=agg.id, uuid=agg.uuid, name=agg.name,
                                    hosts=frozenset(['b']),
                                    metadata=dict(agg.metadata))
    manager.update_aggregates([moved])
    assert _zones(manager.snapshot()) == {'a': 'nova', 'b': 'az1'}
    manager.delete_aggregate(moved)
    table = manager.snapshot()
    assert _zones(table) == {'a': 'nova', 'b': 'nova'}
    assert table.aggregates == ()
    assert all(state.aggregates == () for state in table.states)


def test_update_keeps_what_the_cache_consumed(cloud, make_host_manager):
    cloud.add_node('a', memory_mb=4096)
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    manager.consume(table.states[0].id, claims.Resources(1, 1024, 0))
    manager.update_aggregates([fakes.aggregate('r', ['a'],
                                               availability_zone='az1')])
    state = manager.snapshot().states[0]
    assert state.memory_mb_used == 1024
    assert state.availability_zone == 'az1'


def test_refresh_reads_sql_again_after_a_fanout(cloud, make_host_manager):
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    agg = _in_sql('rack1', ['a'], availability_zone='az1')
    manager.update_aggregates([agg])
    # SQL changes again behind the cache's back (no fanout this time).
    with db_api.writer() as session:
        db_aggregates.update_metadata(session, agg.id,
                                      {'availability_zone': 'az2'})
    assert _zones(manager.refresh()) == {'a': 'az2'}


def test_a_refresh_that_read_before_the_fanout_does_not_undo_it(
        cloud, make_host_manager, monkeypatch):
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    agg = _in_sql('rack1', ['a'], availability_zone='az1')
    fanned = db_aggregates.Aggregate(
        id=agg.id, uuid=agg.uuid, name=agg.name, hosts=agg.hosts,
        metadata={'availability_zone': 'az2'})
    read_all = db_aggregates.get_all

    def read_then_fanout_arrives(session):
        found = read_all(session)      # still az1
        with db_api.writer() as writer:
            db_aggregates.update_metadata(writer, agg.id,
                                          {'availability_zone': 'az2'})
        manager.update_aggregates([fanned])
        return found

    monkeypatch.setattr(db_aggregates, 'get_all', read_then_fanout_arrives)
    assert _zones(manager.refresh()) == {'a': 'az2'}
    monkeypatch.setattr(db_aggregates, 'get_all', read_all)
    assert _zones(manager.refresh()) == {'a': 'az2'}


def test_update_before_the_first_load_is_kept(cloud, make_host_manager):
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    manager.update_aggregates([fakes.aggregate('r', ['a'],
                                               availability_zone='az1')])
    # Not in SQL: the first load reads SQL's (empty) aggregates.
    assert _zones(manager.snapshot()) == {'a': 'nova'}
