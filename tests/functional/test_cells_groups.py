"""Aggregates and server groups with cells, end to end: they live in the
API database (PostgreSQL), the members land in cell1 (MariaDB) and
cell2 (PostgreSQL).

Real daemons, laid out as in tests/functional/test_cells.py (whose
:class:`Cells` builds the databases, vhosts and mappings): a scheduler
and a super-conductor on the top broker, a conductor and one compute
per cell. ``gantt-manage`` makes the group and a zone aggregate in the
API database; the anti-affinity group's members go one per cell and a
third one gets no host; the zone, read by the scheduler from the API
database, sends a server to the other cell's host.
"""

import contextlib

import pytest

from tests.functional import test_cells

pytestmark = pytest.mark.functional


def _create(deployment, *extra):
    result = deployment.cluster.manage(
        'server', 'create', '--vcpus', '1', '--ram', '512', '--disk', '1',
        '--wait', '--timeout', '60', *extra, check=False)
    assert 'Traceback' not in result.stderr, result.stderr
    found = [line.split()[0] for line in result.stdout.splitlines()
             if line[:36].count('-') == 4 and len(line.split()[0]) == 36]
    return list(dict.fromkeys(found))


def _count(url, sql):
    return test_cells.count(url, sql)


def test_groups_and_zones_live_in_the_api_database(tmp_path):
    with contextlib.ExitStack() as stack:
        deployment = test_cells.Cells(stack, tmp_path,
                                      ['mariadb', 'postgresql'])
        deployment.start_cell(0, ['c1a'])
        deployment.start_cell(1, ['c2a'])
        deployment.start_top()
        manage = deployment.cluster.manage
        created = manage('server-group', 'create', 'web', 'anti-affinity')
        group = next(line.split()[-1] for line in
                     created.stdout.splitlines()
                     if line.startswith('uuid'))

        members = _create(deployment, '--count', '2', '--hint',
                          'group=' + group)
        assert sorted(deployment.mapped_cell(uuid) for uuid in members) == \
            ['cell1', 'cell2']
        [third] = _create(deployment, '--hint', 'group=' + group)
        state, fault = deployment.states(deployment.cell0_url)[third]
        assert state == 'error'
        assert 'ServerGroupAntiAffinityFilter' in fault

        shown = manage('server-group', 'show', 'web').stdout
        assert 'c1a, c2a' in shown
        assert _count(deployment.api_url, 'SELECT count(*) FROM '
                      'instance_group_members') == 3
        for url in deployment.cell_urls:
            assert _count(url, 'SELECT count(*) FROM '
                          'instance_group_members') == 0

        # A zone for cell2's host: the scheduler reads it from the API
        # database (the fanout tells it at once).
        manage('aggregate', 'create', 'z2', '--availability-zone', 'az2')
        manage('aggregate', 'add-host', 'z2', 'c2a')
        [zoned] = _create(deployment, '--az', 'az2')
        assert deployment.mapped_cell(zoned) == 'cell2'
        assert _count(deployment.cell_urls[0],
                      'SELECT count(*) FROM aggregates') == 0
