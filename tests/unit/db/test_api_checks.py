"""The API database's mappings, build requests and server group members
against the cells' rows (scheduler.db.api_checks), on every backend."""

import datetime
import uuid

import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import api_checks
from scheduler.db import api_models
from scheduler.db import instance_groups
from scheduler.db import mappings
from scheduler.db import models

CELL1 = '11111111-1111-1111-1111-111111111111'
CELL2 = '22222222-2222-2222-2222-222222222222'
DOWN = '33333333-3333-3333-3333-333333333333'
_BUILD = api_models.BuildRequest.__table__
GRACE = datetime.timedelta(seconds=60)


def _new():
    return str(uuid.uuid4())


def _setup(session):
    ids = {cell: mappings.create_cell(session, cell, name, 'none:///',
                                      'sqlite://')
           for cell, name in ((CELL1, 'cell1'), (CELL2, 'cell2'),
                              (DOWN, 'down'))}
    return ids


def _map(session, instance_uuid, cell_id=None, build_request=False,
         renewed=None):
    mappings.create_instance_mapping(session, instance_uuid, 'p1',
                                     cell_id=cell_id)
    if build_request:
        mappings.create_build_request(session, instance_uuid, 'p1', {},
                                      owner='conductor-1')
        if renewed is not None:
            session.execute(sa.update(_BUILD).where(
                _BUILD.c.instance_uuid == instance_uuid).values(
                created_at=renewed, updated_at=renewed))


def test_api_database_against_the_cells(any_api_database):
    now = models.utcnow()
    in_cell1, in_cell2 = _new(), _new()
    missing, misplaced, orphan, in_down = _new(), _new(), _new(), _new()
    building, in_flight, left_behind = _new(), _new(), _new()
    ghost, member_in_down = _new(), _new()
    with db_api.api_writer() as session:
        ids = _setup(session)
        _map(session, in_cell1, ids[CELL1])
        _map(session, in_cell2, ids[CELL2])
        _map(session, missing, ids[CELL1])
        _map(session, misplaced, ids[CELL1])
        _map(session, orphan)
        _map(session, in_down, ids[DOWN])
        _map(session, building, build_request=True)
        # Created in its cell a moment ago, not yet mapped: in flight.
        _map(session, in_flight, build_request=True, renewed=now)
        _map(session, left_behind, build_request=True,
             renewed=now - 2 * GRACE)
        group = instance_groups.create(session, 'web', 'anti-affinity')
        instance_groups.add_members(session, group.id, [
            in_cell1, building, ghost, member_in_down])
        _map(session, member_in_down, ids[DOWN])
        _map(session, ghost, ids[CELL2])
    with db_api.api_reader() as session:
        state = api_checks.read_api(session)
    rows_of = {CELL1: {in_cell1, in_flight, left_behind},
               CELL2: {in_cell2, misplaced}}

    found = api_checks.find_api_problems(state, rows_of, {DOWN},
                                         now - GRACE)

    assert {(row.instance_uuid, row.cell, row.why): row.detail
            for row in found} == {
        (missing, 'cell1', api_checks.MAPPED_NOT_THERE): 'it is in no cell',
        (misplaced, 'cell1', api_checks.MAPPED_NOT_THERE):
            'its row is in cell cell2',
        (orphan, '-', api_checks.UNMAPPED_ORPHAN): 'nothing will place it',
        (left_behind, 'cell1', api_checks.BUILD_REQUEST_LEFT):
            'owner conductor-1, last renewed %s' % (now - 2 * GRACE)
            .isoformat(sep=' ', timespec='seconds'),
        (ghost, 'cell2', api_checks.MAPPED_NOT_THERE): 'it is in no cell',
        (ghost, 'cell2', api_checks.MEMBER_NOWHERE):
            'member of server group web (%s)' % group.uuid,
    }


def test_members_are_not_judged_while_a_cell_is_unread(any_api_database):
    ghost = _new()
    with db_api.api_writer() as session:
        _setup(session)
        group = instance_groups.create(session, 'web', 'affinity')
        instance_groups.add_members(session, group.id, [ghost])
    with db_api.api_reader() as session:
        state = api_checks.read_api(session)
    cutoff = models.utcnow()
    assert api_checks.find_api_problems(state, {}, {DOWN}, cutoff) == []
    [found] = api_checks.find_api_problems(state, {}, set(), cutoff)
    assert (found.instance_uuid, found.why) == (ghost,
                                                api_checks.MEMBER_NOWHERE)
