"""Server groups with cells: the groups and their members are in the API
database, the members' instances and claims in their cells.

The in-process tests run the real super-conductor, scheduler and
computes over ``fake://`` (API database, cell1 as ``[database]`` and
cell0 on SQLite files); the others call the conductor's group code with
two cells, one of them unreachable in one test.
"""

import logging

import pytest
import sqlalchemy as sa

from conductor.tasks import build
from scheduler import cells
from scheduler.db import api as db_api
from scheduler.db import api_models
from scheduler.db import instance_groups
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler.db import models
from tests.unit.conductor import test_cells
from tests.unit.conductor import test_super_build
from tests.unit import inprocess
from tests.unit.scheduler import fakes

HOST = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}
CLOSED_PORT_URL = 'postgresql+psycopg2://gantt@127.0.0.1:1/gone'

supercell = test_super_build.supercell
cell0_url = test_super_build.cell0_url
two_cells = test_cells.two_cells


def api_group(policy='anti-affinity', **kwargs):
    with db_api.api_writer() as session:
        return instance_groups.create(session, 'web', policy, **kwargs)


def cell_group_rows(url):
    """Rows of the cell schema's own group tables at ``url``."""
    with db_api.target_cell(url), db_api.reader() as session:
        return session.scalar(sa.select(sa.func.count()).select_from(
            models.InstanceGroupMember))


def test_a_group_boots_through_the_super_conductor(supercell, database,
                                                   cell0_url):
    """Anti-affinity over two hosts: two members land apart in cell1; a
    third, asked for later, gets no host and is buried in cell0; the
    members are recorded in the API database only."""
    test_super_build.map_cell0(cell0_url)
    group = api_group()
    hint = {'group': [group.uuid]}
    with inprocess.Cluster({'h1': HOST, 'h2': HOST}) as cluster:
        first = cluster.boot(vcpus=1, memory_mb=512, root_gb=1, count=2,
                             scheduler_hints=hint)
        placed = cluster.wait_built(first)
        [third] = cluster.boot(vcpus=1, memory_mb=512, root_gb=1,
                               scheduler_hints=hint)
        cluster.wait_until(lambda: third in test_super_build.rows_in(
            cell0_url), 15, 'the third member to be buried in cell0')
    assert sorted(row.host for row in placed.values()) == ['h1', 'h2']
    assert {row.vm_state for row in placed.values()} == {'active'}
    buried = test_super_build.rows_in(cell0_url)[third]
    assert buried.vm_state == db_instances.ERROR
    assert 'ServerGroupAntiAffinityFilter' in buried.fault
    with db_api.api_reader() as session:
        assert sorted(instance_groups.get(session, group.uuid).members) == \
            sorted(first + [third])
    assert cell_group_rows(database) == 0


def test_a_group_only_in_the_cell_database_is_unknown(supercell, database,
                                                      cell0_url):
    """A group left in [database]'s own tables is not read with cells:
    the build is refused, in cell0, as for any unknown group."""
    test_super_build.map_cell0(cell0_url)
    with db_api.writer() as session:
        stale = instance_groups.create(session, 'old', 'affinity')
    with inprocess.Cluster({'h1': HOST}) as cluster:
        [uuid] = cluster.boot(vcpus=1, memory_mb=512, root_gb=1,
                              scheduler_hints={'group': [stale.uuid]})
        cluster.wait_until(lambda: uuid in test_super_build.rows_in(
            cell0_url), 15, 'the build to be buried in cell0')
    row = test_super_build.rows_in(cell0_url)[uuid]
    assert row.vm_state == db_instances.ERROR
    assert 'could not be found' in row.fault


def _instance_on(url, uuid, host):
    with db_api.target_cell(url), db_api.writer() as session:
        db_instances.create(session, uuid, {'vcpus': 1}, {})
        db_instances.update(session, uuid, host=host)


def _members_in_both_cells(two_cells):
    """An affinity group with a member on a1 (cell1), one on b1
    (cell2), one in cell0 and one not placed yet; their uuids."""
    on_a1, on_b1, buried, unplaced = fakes.uuids(4)
    _instance_on(two_cells[test_cells.CELL1], on_a1, 'a1')
    _instance_on(two_cells[test_cells.CELL2], on_b1, 'b1')
    with db_api.api_writer() as session:
        mappings.create_cell(session, cells.CELL0_UUID, 'cell0', None,
                             'sqlite:///nowhere_cell0')
        for uuid, cell in ((on_a1, test_cells.CELL1),
                           (on_b1, test_cells.CELL2),
                           (buried, cells.CELL0_UUID), (unplaced, None)):
            cell_id = None if cell is None else mappings.get_cell(
                session, cell).id
            mappings.create_instance_mapping(session, uuid, 'p',
                                             cell_id=cell_id)
    return on_a1, on_b1, buried, unplaced


def test_joining_finds_each_members_host_in_its_cell(two_cells):
    members = _members_in_both_cells(two_cells)
    group = api_group('soft-affinity')
    with db_api.api_writer() as session:
        instance_groups.add_members(session, group.id, members)
    new = fakes.uuids(1)
    spec = fakes.spec(scheduler_hints={'group': [group.uuid]})

    assert build.join_group(new, spec).uuid == group.uuid

    assert spec.instance_group.members == list(members) + new
    assert spec.instance_group.hosts == ['a1', 'b1']
    with db_api.api_reader() as session:
        assert instance_groups.get(session, group.uuid).members == \
            tuple(members) + tuple(new)
    assert instance_groups.find_member_hosts(members) == {
        members[0]: 'a1', members[1]: 'b1'}


def test_joining_with_a_cell_away_knows_the_other_cells_hosts(two_cells,
                                                              caplog):
    members = _members_in_both_cells(two_cells)
    group = api_group('affinity')
    with db_api.api_writer() as session:
        instance_groups.add_members(session, group.id, members)
    table = api_models.CellMapping.__table__
    with db_api.api_writer() as session:
        session.execute(table.update().where(
            table.c.uuid == test_cells.CELL2).values(
            database_connection=CLOSED_PORT_URL))
    spec = fakes.spec(scheduler_hints={'group': [group.uuid]})

    with caplog.at_level(logging.WARNING):
        build.join_group(fakes.uuids(1), spec)

    assert spec.instance_group.hosts == ['a1']
    assert 'The hosts of 1 server group member(s) in cell cell-b1 are ' \
        'unknown' in caplog.text
    assert 'port 1 failed' in caplog.text


def test_an_unknown_group_is_refused_from_the_api_database(two_cells):
    spec = fakes.spec(scheduler_hints={'group': ['no-such-group']})
    with pytest.raises(instance_groups.InstanceGroupNotFound):
        build.join_group(fakes.uuids(1), spec)
