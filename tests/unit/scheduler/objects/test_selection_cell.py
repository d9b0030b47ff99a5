"""Selection 1.1 carries the host's cell; a 1.0 peer gets none."""

from scheduler.objects import request_spec
from scheduler.objects import selection

CELL = '22222222-2222-2222-2222-222222222222'


def _selection():
    return selection.Selection(
        compute_node_uuid='11111111-1111-1111-1111-111111111111',
        service_host='b1', nodename='b1', cell_uuid=CELL)


def _data(primitive):
    return primitive['gantt_object.data']


def test_cell_uuid_goes_to_a_1_1_peer_and_back():
    primitive = _selection().obj_to_primitive()
    assert _data(primitive)['cell_uuid'] == CELL
    assert selection.Selection.obj_from_primitive(
        primitive).cell_uuid == CELL


def test_a_1_0_peer_gets_no_cell_uuid():
    primitive = _selection().obj_to_primitive(target_version='1.0')
    assert primitive['gantt_object.version'] == '1.0'
    assert 'cell_uuid' not in _data(primitive)
    assert _data(primitive)['service_host'] == 'b1'


def test_a_1_0_destination_names_no_cell():
    destination = request_spec.Destination(
        host='b1', cell=request_spec.CellMapping(uuid=CELL),
        allow_cross_cell_move=True)
    data = _data(destination.obj_to_primitive(target_version='1.0'))
    assert data['host'] == 'b1'
    assert 'cell' not in data and 'allow_cross_cell_move' not in data
