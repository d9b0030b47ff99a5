"""Host discovery across cells: every host mapped once, whatever runs at
the same time or stops half-way."""

import concurrent.futures
import uuid

import pytest

from scheduler import cells
from scheduler.cells import discovery
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import mappings
from scheduler import exception
from scheduler import manager
from tests.fixtures import databases

CELL1 = '11111111-1111-1111-1111-111111111111'
CELL2 = '22222222-2222-2222-2222-222222222222'


@pytest.fixture
def two_cells(api_database, database):
    """Cell1 on [database], cell2 on a database of its own, and cell0."""
    with databases.cell_database('sqlite') as second:
        with db_api.api_writer() as session:
            ids = {uuid: mappings.create_cell(session, uuid, name, None, url)
                   for uuid, name, url in ((CELL1, 'cell1', database),
                                           (CELL2, 'cell2', second))}
            mappings.create_cell(session, cells.CELL0_UUID, 'cell0',
                                 'none:///', 'sqlite:///nowhere_cell0')
        yield {CELL1: database, CELL2: second, 'ids': ids}


def add_nodes(url, hosts):
    with db_api.target_cell(url):
        with db_api.writer() as session:
            for host in hosts:
                db_compute_nodes.report_inventory(
                    session, str(uuid.uuid4()), host, host,
                    dict(vcpus=1, memory_mb=512, local_gb=1))


def mapped_hosts(url):
    with db_api.target_cell(url):
        with db_api.reader() as session:
            return sorted(node.host for node in db_compute_nodes.get_nodes(
                session, mapped_only=True))


def host_mappings():
    with db_api.api_reader() as session:
        return {row.host: row.cell_uuid
                for row in mappings.list_host_mappings(session)}


def test_the_schedulers_periodic_discovery_maps_every_cell(two_cells):
    add_nodes(two_cells[CELL1], ['a1', 'a2'])
    add_nodes(two_cells[CELL2], ['b1'])

    mapped = manager.discover_hosts()

    assert sorted(node.host for node in mapped) == ['a1', 'a2', 'b1']
    assert host_mappings() == {'a1': CELL1, 'a2': CELL1, 'b1': CELL2}
    assert mapped_hosts(two_cells[CELL2]) == ['b1']
    assert manager.discover_hosts() == []


def test_concurrent_discoveries_map_each_host_once(two_cells):
    hosts_1 = ['a%02d' % index for index in range(30)]
    hosts_2 = ['b%02d' % index for index in range(30)]
    add_nodes(two_cells[CELL1], hosts_1)
    add_nodes(two_cells[CELL2], hosts_2)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: discovery.discover_hosts(),
                                range(4)))

    assert all(not result.failed and not result.conflicts
               for result in results)
    created = [host for result in results
               for _, host in result.host_mappings]
    assert sorted(created) == sorted(hosts_1 + hosts_2)
    nodes = [node.host for result in results for _, node in result.nodes]
    assert sorted(nodes) == sorted(hosts_1 + hosts_2)
    assert mapped_hosts(two_cells[CELL1]) == hosts_1
    assert mapped_hosts(two_cells[CELL2]) == hosts_2


def test_a_discovery_cut_short_is_finished_by_the_next(two_cells):
    # The host mapping was written, then the cell database went away
    # before the node was marked mapped.
    add_nodes(two_cells[CELL2], ['b1'])
    with db_api.api_writer() as session:
        mappings.create_host_mapping(session, 'b1', two_cells['ids'][CELL2])

    result = discovery.discover_hosts()

    assert result.host_mappings == []
    assert [node.host for _, node in result.nodes] == ['b1']
    assert mapped_hosts(two_cells[CELL2]) == ['b1']
    assert host_mappings() == {'b1': CELL2}


def test_a_down_api_database_maps_nothing(two_cells, config):
    add_nodes(two_cells[CELL1], ['a1'])
    config.config(connection='postgresql+psycopg2://g:pw@127.0.0.1:1/api',
                  group='api_database')
    db_api.dispose_engine()

    with pytest.raises(exception.ApiDatabaseUnavailable):
        discovery.discover_hosts()

    assert mapped_hosts(two_cells[CELL1]) == []


def test_one_cell_discovery_is_unchanged(database):
    add_nodes(None, ['h1', 'h2'])

    result = discovery.discover_hosts()

    assert [(cell, node.host) for cell, node in result.nodes] == [
        (cells.LOCAL, 'h1'), (cells.LOCAL, 'h2')]
    assert result.host_mappings == []
    assert mapped_hosts(None) == ['h1', 'h2']


def test_sighup_makes_the_scheduler_read_the_cells_again(two_cells):
    mgr = manager.SchedulerManager()
    assert len(cells.get_cells()) == 3
    with db_api.api_writer() as session:
        mappings.create_cell(session, str(uuid.uuid4()), 'cell3', None,
                             None)
    assert len(cells.get_cells()) == 3

    mgr.reset()

    assert [cell.name for cell in cells.get_cells()] == [
        'cell0', 'cell1', 'cell2', 'cell3']
