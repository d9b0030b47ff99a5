"""The conductor's claims and moves with two cells: an alternate is
claimed in its own cell's database, and every move (migrate, live
migration, evacuation, unshelve) stays in the instance's cell."""

import json
import types

import pytest

from conductor.tasks import build
from conductor.tasks import common
from conductor.tasks import live_migrate
from conductor.tasks import rebuild
from scheduler import cells
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes
from scheduler.db import mappings
from scheduler import exception
from scheduler.objects import selection as selection_obj
from tests.fixtures import databases
from tests.unit.scheduler import fakes

CELL1 = '11111111-1111-1111-1111-111111111111'
CELL2 = '22222222-2222-2222-2222-222222222222'
WANTED = claims.Resources(1, 512, 0)


@pytest.fixture
def two_cells(api_database, database):
    """cell1 on [database] with host a1, cell2 on its own with b1."""
    with databases.cell_database('sqlite') as second:
        urls = {CELL1: database, CELL2: second}
        with db_api.api_writer() as session:
            for uuid, host in ((CELL1, 'a1'), (CELL2, 'b1')):
                mappings.create_cell(session, uuid, 'cell-' + host, None,
                                     urls[uuid])
                mappings.create_host_mapping(
                    session, host, mappings.get_cell(session, uuid).id)
        cells.clear_cache()
        for uuid, host in ((CELL1, 'a1'), (CELL2, 'b1')):
            with db_api.target_cell(urls[uuid]):
                fakes.Cloud().add_node(host)
        yield urls
        cells.clear_cache()


def _in_cell(url, read):
    with db_api.target_cell(url), db_api.reader() as session:
        return read(session)


def allocations(url, uuid):
    return _in_cell(url, lambda session: claims.get_allocations(session,
                                                                uuid))


def selection_of(url, host, cell_uuid):
    node = _in_cell(url, lambda session: compute_nodes.get_node_by_name(
        session, host, host))
    return selection_obj.Selection(
        compute_node_uuid=node.uuid, service_host=host, nodename=host,
        allocation_request=json.dumps(dict(WANTED._asdict())),
        cell_uuid=cell_uuid), node.id


def test_an_alternate_is_claimed_in_its_cells_database_only(two_cells):
    selection, node_id = selection_of(two_cells[CELL2], 'b1', CELL2)
    [uuid] = fakes.uuids(1)

    assert build.BuildTask._claim_alternate(uuid, selection)

    assert allocations(two_cells[CELL2], uuid) == [(node_id, WANTED)]
    assert allocations(two_cells[CELL1], uuid) == []


class _SchedulerInCell2:
    """A scheduler that claims b1 (cell2) whatever it is asked."""

    def __init__(self, urls):
        self.urls, self.specs = urls, []
        self.client = types.SimpleNamespace(can_send_version=lambda v: True)

    def select_destinations(self, ctxt, spec, uuids, **kwargs):
        self.specs.append(spec)
        selection, node_id = selection_of(self.urls[CELL2], 'b1', CELL2)
        with db_api.target_cell(self.urls[CELL2]):
            assert claims.claim_in_sql(node_id, uuids[0], WANTED)
        return [[selection]]


def _evacuate(task, row, spec):
    return task._schedule(None, row, spec, None)


def _live_migrate(task, row, spec):
    return task._schedule(None, row, spec, None, [row.host])


@pytest.mark.parametrize('move, task_class', [
    (_evacuate, rebuild.RebuildTask),
    (_live_migrate, live_migrate.LiveMigrateTask)])
def test_a_move_the_scheduler_sends_to_another_cell_is_refused(
        two_cells, move, task_class):
    scheduler = _SchedulerInCell2(two_cells)
    task = task_class(scheduler, None)
    [uuid] = fakes.uuids(1)
    row = types.SimpleNamespace(uuid=uuid, host='a1')

    with pytest.raises(exception.CrossCellMoveNotSupported) as raised:
        move(task, row, fakes.spec())

    assert str(raised.value) == (
        'Instance %s cannot move to host b1: the instance is in cell '
        'cell-a1 and the host in cell cell-b1; moving a server to another '
        'cell is not supported.' % uuid)
    # The scheduler's claim in cell2 is given back.
    assert allocations(two_cells[CELL2], uuid) == []
    # And the scheduler was asked to stay in cell1.
    destination = scheduler.specs[0].requested_destination
    assert (destination.cell.uuid, destination.allow_cross_cell_move) == (
        CELL1, False)


def test_a_forced_destination_in_another_cell_is_refused(two_cells):
    row = types.SimpleNamespace(uuid=fakes.uuids(1)[0], host='a1')

    with pytest.raises(exception.CrossCellMoveNotSupported,
                       match='the instance is in cell cell-a1 and the host '
                             'in cell cell-b1'):
        common.refuse_forced_cross_cell(row, 'b1')
    assert common.refuse_forced_cross_cell(row, 'a1').uuid == CELL1


def test_an_older_scheduler_s_host_in_another_cell_is_refused(two_cells):
    """A Selection without its cell (Selection 1.0): the node is not in
    the instance's cell database; its host mapping says which cell it
    is in, and the claim there is given back."""
    selection, node_id = selection_of(two_cells[CELL2], 'b1', None)
    [uuid] = fakes.uuids(1)
    with db_api.target_cell(two_cells[CELL2]):
        assert claims.claim_in_sql(node_id, uuid, WANTED)
    spec = fakes.spec()
    common.keep_in_cell(spec, types.SimpleNamespace(uuid=uuid, host='a1'))

    with db_api.target_cell(two_cells[CELL1]), pytest.raises(
            exception.CrossCellMoveNotSupported,
            match='the instance is in cell cell-a1 and the host in cell '
                  'cell-b1'):
        common.refuse_other_cell(uuid, spec, selection)
    assert allocations(two_cells[CELL2], uuid) == []


def test_an_offloaded_instance_is_kept_in_its_mapped_cell(two_cells):
    [uuid] = fakes.uuids(1)
    with db_api.api_writer() as session:
        mappings.create_instance_mapping(
            session, uuid, 'project', mappings.get_cell(session, CELL2).id)
    row = types.SimpleNamespace(uuid=uuid, host=None)
    spec = fakes.spec()

    assert common.keep_in_cell(spec, row) == CELL2
    assert spec.requested_destination.cell.uuid == CELL2
    # Unmapped: nothing to keep it in.
    assert common.keep_in_cell(fakes.spec(), types.SimpleNamespace(
        uuid=fakes.uuids(1)[0], host=None)) is None
