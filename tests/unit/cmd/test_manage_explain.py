"""gantt-manage explain, in-process against real SQLite."""

import pytest
import sqlalchemy as sa

from scheduler import cells
from scheduler.db import api as db_api
from scheduler.db import instance_groups
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler.db import models
from tests.fixtures import databases
from tests.unit.cmd import output
from tests.unit.scheduler import fakes

REQUEST = ('explain', '--vcpus', '1', '--ram', '2048', '--disk', '1')


FILTERS = ('[filter_scheduler]\n'
           'enabled_filters = AvailabilityZoneFilter,ComputeFilter,RamFilter,'
           'ServerGroupAntiAffinityFilter\n'
           'weight_classes = RAMWeigher,ServerGroupSoftAntiAffinityWeigher\n'
           'ram_allocation_ratio = 1.0\n')


@pytest.fixture
def cloud(database, conf_file):
    conf_file.write_text(FILTERS)
    cloud = fakes.Cloud()
    cloud.add_node('big', memory_mb=16384)
    cloud.add_node('mid', memory_mb=8192)
    cloud.add_node('tiny', memory_mb=1024)
    cloud.add_node('off', memory_mb=16384)
    cloud.disable('off', reason='swap')
    return cloud


def _allocations():
    with db_api.reader() as session:
        return session.execute(sa.select(
            sa.func.count()).select_from(models.Allocation)).scalar_one()


def test_explain_lists_removed_hosts_and_the_ranking(cloud, run):
    result = run(*REQUEST)
    assert result.code == 0, result.err
    assert result.out.startswith('4 candidate host(s)')
    steps = output.table(result.out)
    assert steps == [['AvailabilityZoneFilter', '4', '4'],
                     ['ComputeFilter', '4', '3'], ['RamFilter', '3', '2'],
                     ['ServerGroupAntiAffinityFilter', '2', '2']]
    removed = result.out.split('Removed:\n', 1)[1]
    rows = output.table(removed)
    assert [row[:3] for row in rows] == [['ComputeFilter', 'off', 'off'],
                                         ['RamFilter', 'tiny', 'tiny']]
    assert 'is disabled, reason: swap' in rows[0][3]
    ranking = output.table(result.out.split('Ranking', 1)[1])
    assert [row[:3] for row in ranking] == [['1', 'big', 'big'],
                                            ['2', 'mid', 'mid']]
    for row in ranking:
        # The weight is the RAM weigher's part; soft anti-affinity adds 0.
        assert row[3] == row[4] and row[5] == '0.0000'
    assert ranking[0][3] == '1.0000'
    assert 'RAMWeigher  ServerGroupSoftAntiAffinityWeigher' in result.out
    assert 'Chosen: big (node big)' in result.out
    assert _allocations() == 0


def test_explain_with_a_group_and_several_instances(cloud, run):
    with db_api.writer() as session:
        group = instance_groups.create(session, 'web', 'anti-affinity')
        [member] = fakes.uuids(1)
        db_instances.create(session, member, {'name': 'f'}, {})
        db_instances.update(session, member, host='big')
        instance_groups.add_members(session, group.id, [member])
    result = run(*REQUEST, '--count', '2', '--hint', 'group=%s' % group.uuid)
    assert result.code == 1
    assert 'Instance 1 of 2' in result.out and 'Instance 2 of 2' in result.out
    assert 'runs 1 member(s) of server group %s' % group.uuid in result.out
    assert 'Chosen: mid (node mid)' in result.out
    assert result.out.rstrip().endswith(
        'No valid host was found. Instance 2 of 2: There are not enough '
        'hosts available. 0/4 hosts available: earlier instances of the '
        'request 4 -> 1, RamFilter 1 -> 1, ServerGroupAntiAffinityFilter '
        '1 -> 0 (removed the last 1)')
    # Explaining joined nobody to the group.
    with db_api.reader() as session:
        assert instance_groups.get(session, 'web').members == (member,)


def test_explain_an_unknown_group(cloud, run):
    missing = '00000000-0000-4000-8000-000000000000'
    result = run(*REQUEST, '--hint', 'group=%s' % missing)
    assert result.code == 1
    assert result.err == ('gantt-manage: error: Server group %s could not '
                          'be found.\n' % missing)


@pytest.fixture
def two_cells(api_database, database, conf_file):
    """cell1 (``[database]``): big and tiny; cell2: mid and small."""
    conf_file.write_text(FILTERS)
    with databases.cell_database('sqlite') as second:
        with db_api.api_writer() as session:
            mappings.create_cell(session, '1' * 32, 'cell1', None, database)
            mappings.create_cell(session, '2' * 32, 'cell2', None, second)
        cells.clear_cache()
        fakes.Cloud().add_node('big', memory_mb=16384)
        fakes.Cloud().add_node('tiny', memory_mb=1024)
        with db_api.target_cell(second):
            fakes.Cloud().add_node('mid', memory_mb=8192)
            fakes.Cloud().add_node('small', memory_mb=1024)
        yield


def test_explain_with_cells_names_each_hosts_cell_and_counts_per_cell(
        two_cells, run):
    result = run(*REQUEST)
    assert result.code == 0, result.err
    removed = output.table(result.out.split('Removed:\n', 1)[1])
    assert sorted(row[:4] for row in removed) == [
        ['RamFilter', 'small', 'small', 'cell2'],
        ['RamFilter', 'tiny', 'tiny', 'cell1']]
    ranking = result.out.split('Ranking', 1)[1]
    assert 'Rank  Host  Node  Cell   Weight' in ranking
    assert [row[:4] for row in output.table(ranking)] == [
        ['1', 'big', 'big', 'cell1'], ['2', 'mid', 'mid', 'cell2']]
    assert 'Passing hosts per cell: cell1 1, cell2 1\n' in result.out

    # A cell none of whose hosts pass is counted too.
    result = run('explain', '--vcpus', '1', '--ram', '10000', '--disk', '1')
    assert 'Passing hosts per cell: cell1 1, cell2 0\n' in result.out
    result = run('explain', '--vcpus', '1', '--ram', '65536', '--disk', '1')
    assert result.code == 1
    assert 'Passing hosts per cell: cell1 0, cell2 0\n' in result.out


def test_explain_without_cells_has_no_cell_column_or_count(cloud, run):
    result = run(*REQUEST)
    assert 'Cell' not in result.out
    assert 'Passing hosts per cell' not in result.out
