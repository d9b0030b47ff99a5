import pytest

from scheduler.objects import request_spec
from scheduler.weights import cross_cell
from scheduler.weights import ram
from tests.unit.scheduler import fakes

CELL1 = '11111111-1111-1111-1111-111111111111'
CELL2 = '22222222-2222-2222-2222-222222222222'


def _hosts():
    states = []
    for name, cell, memory_mb in (('a', CELL1, 1024), ('b', CELL2, 65536),
                                  ('c', CELL1, 2048), ('d', None, 32768)):
        state = fakes.host_state(name, memory_mb=memory_mb)
        state.cell_uuid = cell
        states.append(state)
    return states


def _move(cell_uuid, allowed=True):
    return fakes.spec(requested_destination=request_spec.Destination(
        cell=request_spec.CellMapping(uuid=cell_uuid),
        allow_cross_cell_move=allowed))


@pytest.mark.parametrize('cell_uuid, expected', [
    (CELL1, [1.0, 0.0, 1.0, 0.0]), (CELL2, [0.0, 1.0, 0.0, 0.0])])
def test_batch_and_per_host_paths_weigh_the_source_cell_alike(
        cell_uuid, expected):
    # raw_weights asserts that weigh_all equals _weigh_object host by host.
    assert fakes.raw_weights(cross_cell.CrossCellWeigher(), _hosts(),
                             _move(cell_uuid)) == expected


def test_the_source_cell_wins_over_more_free_ram():
    weighers = [cross_cell.CrossCellWeigher(), ram.RAMWeigher()]
    totals = fakes.weigh(weighers, _hosts(), _move(CELL1))
    order = sorted(range(4), key=lambda index: -totals[index])
    assert [_hosts()[index].host for index in order] == ['c', 'a', 'b', 'd']


def test_a_request_naming_no_cell_weighs_every_host_zero():
    assert fakes.raw_weights(cross_cell.CrossCellWeigher(), _hosts()) == [
        0.0] * 4
