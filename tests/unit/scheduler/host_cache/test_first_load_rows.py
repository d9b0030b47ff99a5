"""The first load of the host cache keeps only what it makes of the rows
it reads: at a million hosts, service rows still held while the nodes
are read left a quarter of a GB of holes in the interpreter's memory
among the host states (issue 53)."""

import gc
import sys

from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.host_cache import applying
from scheduler.host_cache import host_reads
from scheduler.host_cache import host_state
from tests.fixtures import statements
from tests.unit.scheduler import fakes

HOSTS = ('a', 'b', 'c', 'd', 'e')


def _live_service_rows():
    return sum(1 for obj in gc.get_objects()
               if isinstance(obj, host_reads.ServiceRow))


def test_no_service_row_is_held_while_the_nodes_are_read(
        any_database, make_host_manager, monkeypatch):
    """Each backend (a server-side cursor on PostgreSQL, the whole
    result elsewhere): by the time the nodes are read, the services were
    compared and their rows dropped; every service is cached, counted
    and judged all the same."""
    monkeypatch.setattr(host_reads.compute_nodes, 'STREAM_BATCH', 2)
    cloud = fakes.Cloud()
    for host in HOSTS:
        cloud.add_node(host)
    cloud.set_last_seen('e', 3600)
    manager = make_host_manager(auto_refresh=False)
    at_nodes = []

    def before(statement):
        if not at_nodes and 'hypervisor_hostname' in statement:
            at_nodes.append(_live_service_rows())
    with statements.each_statement(before):
        table = manager.snapshot()
    assert at_nodes == [0]
    assert sorted(manager._services) == list(HOSTS)
    assert manager.stats['services_read'] == len(HOSTS)
    alive = {state.host: state.service.alive for state in table.states}
    assert alive == {'a': True, 'b': True, 'c': True, 'd': True,
                     'e': False}


def test_a_host_s_name_is_one_string_for_its_node_service_and_aggregates(
        any_database, make_host_manager):
    cloud = fakes.Cloud()
    for host in HOSTS:
        cloud.add_node(host)
    cloud.aggregate('rack', ['b', 'd'])
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    members = {name: name for agg in table.aggregates for name in agg.hosts}
    for state in table.states:
        assert state.host is state.service.host
        assert state.host is sys.intern(state.host)
        assert state.nodename is state.host
        if state.host in members:
            assert members[state.host] is state.host


def test_a_full_read_still_finds_the_services_that_are_gone(
        database, make_host_manager):
    cloud = fakes.Cloud()
    for host in HOSTS:
        cloud.add_node(host)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    with db_api.writer() as session:
        session.execute(host_reads._SERVICE.delete().where(
            host_reads._SERVICE.c.host == 'c'))
    manager.refresh(full=True)
    assert sorted(manager._services) == ['a', 'b', 'd', 'e']
    assert manager.stats['services_read'] == 2 * len(HOSTS) - 1


def test_the_hosts_of_every_aggregate_are_read_a_batch_at_a_time(
        any_database, monkeypatch):
    """Each batch of membership rows is read and dropped before the next
    is made; the aggregates hold every host all the same."""
    monkeypatch.setattr(db_api, 'FETCH_BATCH', 2)
    cloud = fakes.Cloud()
    cloud.aggregate('odd', ['a', 'c', 'e'])
    cloud.aggregate('even', ['b', 'd'])
    sizes = []
    fold = db_aggregates._hosts_by_aggregate

    def counting(batches):
        def each():
            for batch in batches:
                sizes.append(len(batch))
                yield batch
        return fold(each())
    monkeypatch.setattr(db_aggregates, '_hosts_by_aggregate', counting)
    with db_api.reader() as session:
        found = {agg.name: agg.hosts for agg in
                 db_aggregates.get_all(session)}
    assert found == {'odd': frozenset('ace'), 'even': frozenset('bd')}
    assert sizes == [2, 2, 1]


def test_nodes_read_in_another_order_than_services_get_their_own(
        any_database, make_host_manager):
    """The first load finds each node's service by the order the
    services were read, and by name where that order is not the nodes':
    services written in another order, a host of two nodes, a node
    without a service and a service without a node."""
    cloud = fakes.Cloud()
    for host in ('a', 'b', 'c', 'd', 'e'):
        cloud.add_node(host, up=False)
    cloud.add_node('b', nodename='b2', up=False)
    for host in ('c', 'a', 'e', 'b', 'z'):
        cloud.heartbeat(host)
    cloud.set_last_seen('e', 3600)
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    found = {state.nodename: state.service and state.service.host
             for state in table.states}
    assert found == {'a': 'a', 'b': 'b', 'b2': 'b', 'c': 'c', 'd': None,
                     'e': 'e'}
    assert sorted(manager._services) == ['a', 'b', 'c', 'e', 'z']
    assert manager._dead_hosts == {'e'}
    assert not table.states[table.row_by_id[cloud.nodes['e']]].service.alive


class _CountedGets(dict):
    def __init__(self, *args):
        super().__init__(*args)
        self.gets = 0

    def get(self, key, default=None):
        self.gets += 1
        return super().get(key, default)


def test_services_in_the_nodes_order_are_found_without_a_look_up():
    services = _CountedGets(
        (host, host_state.service_info(_service_row(number, host), True))
        for number, host in enumerate(('a', 'b', 'c', 'd')))
    found = applying._InReadOrder(services)
    # d's service is never asked for; b has two nodes; x has no service.
    hosts = ['a', 'b', 'b', 'c', 'x']
    assert [service and service.host for service in map(found.of, hosts)] \
        == ['a', 'b', 'b', 'c', None]
    assert services.gets == 1
    found = applying._InReadOrder(services)
    # Read in reverse: looked up by name, but for a, the first read.
    assert [found.of(host).host for host in ('d', 'c', 'b', 'a')] == [
        'd', 'c', 'b', 'a']
    assert services.gets == 4
    assert applying._InReadOrder({}).of('a') is None


def _service_row(number, host):
    return host_reads.ServiceRow(
        id=number, host=host, binary='gantt-compute', disabled=False,
        disabled_reason=None, forced_down=False, last_seen_up=None,
        created_at=None)
