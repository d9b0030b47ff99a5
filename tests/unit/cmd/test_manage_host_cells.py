"""``gantt-manage host list`` with cells: a Cell column, and exit 1 (the
other cells still listed) when a cell's database cannot be read."""

from scheduler import cells
from scheduler.db import api as db_api
from scheduler.db import mappings
from tests.fixtures import databases
from tests.unit.cmd import output
from tests.unit.scheduler import fakes

CELL1 = '11111111-1111-1111-1111-111111111111'
CELL2 = '22222222-2222-2222-2222-222222222222'
GONE = 'postgresql+psycopg2://gantt@127.0.0.1:1/gone'


def _map_cell(uuid, name, url):
    with db_api.api_writer() as session:
        mappings.create_cell(session, uuid, name, None, url)
    cells.clear_cache()


def test_host_list_has_a_cell_column_and_exit_1_for_a_cell_not_read(
        api_database, database, run):
    with databases.cell_database('sqlite') as second:
        _map_cell(CELL1, 'cell1', database)
        _map_cell(CELL2, 'cell2', second)
        fakes.Cloud().add_node('a1')
        with db_api.target_cell(second):
            fakes.Cloud().add_node('b1')

        result = run('host', 'list')
        assert result.code == 0, result.err
        rows = output.table(result.out)
        assert [row[:3] for row in rows] == [['a1', 'a1', 'cell1'],
                                             ['b1', 'b1', 'cell2']]

        _map_cell('33333333-3333-3333-3333-333333333333', 'cell3', GONE)
        result = run('host', 'list')
    assert result.code == 1
    assert [row[:3] for row in output.table(result.out)] == [
        ['a1', 'a1', 'cell1'], ['b1', 'b1', 'cell2']]
    assert 'cell cell3 was skipped' in result.err
