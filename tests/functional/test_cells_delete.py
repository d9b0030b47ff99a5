"""Deleting servers through the super-conductor (cells v2), real daemons.

A cell has a broker of its own (its vhost), as in
:mod:`tests.functional.test_cells`: the super-conductor finds the
server's cell through its mapping, tells the compute over that cell's
broker, and marks the server deleted in the cell's database, releasing
its claims. ``gantt-manage server delete`` is what an operator runs
against the super-conductor; a build buried in cell0 has no compute and
is deleted in cell0's database.
"""

import contextlib

import pytest

from tests.functional import test_cells

pytestmark = pytest.mark.functional


def _instance(url, uuid):
    return test_cells.count(
        url, "SELECT vm_state || '/' || coalesce(task_state, '-') || '/' "
        "|| deleted FROM instances WHERE uuid = :u", u=uuid)


def _claims(url, uuid):
    return test_cells.count(url, 'SELECT count(*) FROM allocations WHERE '
                            'consumer_uuid = :u', u=uuid)


def test_delete_through_the_super_conductor(tmp_path):
    with contextlib.ExitStack() as stack:
        # cell1 on PostgreSQL: the checks below concatenate text.
        deployment = test_cells.Cells(stack, tmp_path, ['postgresql'])
        deployment.start_cell(0, ['c1a'])
        deployment.start_top()
        cell1 = deployment.cell_urls[0]
        [built] = deployment.create(vcpus=1, count_=1)
        assert _claims(cell1, built) == 1
        [buried] = deployment.create(vcpus=64, count_=1)
        deployment.cluster.wait_until(
            lambda: deployment.mapped_cell(buried) == 'cell0', 10,
            'the mapping of %s to cell0' % buried)

        result = deployment.cluster.manage('server', 'delete', built,
                                           buried, check=False)

        assert result.returncode == 0, result.stderr
        assert 'Traceback' not in result.stderr
        assert built in result.stdout and buried in result.stdout
        assert _instance(cell1, built).startswith('deleted/-/')
        assert _instance(cell1, built) != 'deleted/-/0'
        assert _claims(cell1, built) == 0
        assert _instance(deployment.cell0_url, buried).startswith(
            'deleted/-/')
        # The compute heard of it over its cell's broker.
        compute = deployment.process('c1a')
        deployment.cluster.wait_until(
            lambda: built in compute.log(), 10, 'the compute to hear of it')
        again = deployment.cluster.manage('server', 'delete', built,
                                          check=False)
        assert again.returncode == 0, again.stderr
