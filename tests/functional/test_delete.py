"""Deleting servers through the real daemons and ``gantt-manage server
delete``: the claims go, the rows stay soft-deleted, ``server list`` hides
them unless ``--deleted``, a repeat answers them again, an unknown UUID is
one error line, and ``gantt-manage db check`` passes throughout."""

import pytest

from tests.functional import boot_scenario
from tests.functional import checks
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

HOSTS = ('cmp1', 'cmp2')
FLAVOR = ('--vcpus', '1', '--ram', '512', '--disk', '1')
UNKNOWN_UUID = '5d0a4c2e-8f1b-4e6a-9c3d-7b2a1f0e9d8d'


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    cluster = cluster_mod.Cluster(tmp_path_factory.mktemp('delete'),
                                  'postgresql')
    cluster.__enter__()
    try:
        cluster.start_conductor()
        for host in HOSTS:
            cluster.start_compute(host, vcpus=4, memory_mb=8192,
                                  local_gb=100)
        cluster.start_scheduler()
        cluster.wait_for_computes(HOSTS)
        cluster.discover_hosts()
        yield cluster
    finally:
        cluster.__exit__(None, None, None)


def _row(cluster, uuid):
    [row] = cluster.query(
        'SELECT id, vm_state, task_state, host, deleted, deleted_at '
        'FROM instances WHERE uuid = :u', u=uuid)
    return row


def test_delete_releases_claims_and_soft_deletes(cluster):
    uuids = [boot_scenario.create(cluster, *FLAVOR)[0] for _ in range(2)]
    assert {row.consumer_uuid for row in cluster.allocations()} >= set(uuids)

    result = cluster.manage('server', 'delete', *uuids, check=False)

    assert result.returncode == 0, result.stderr
    assert result.stderr == ''
    for uuid in uuids:
        assert uuid in result.stdout
        row = _row(cluster, uuid)
        assert (row.vm_state, row.task_state, row.host) == (
            'deleted', None, None)
        assert row.deleted == row.id and row.deleted_at is not None
    assert not {row.consumer_uuid
                for row in cluster.allocations()} & set(uuids)
    checks.assert_db_check_passes(cluster)

    listed = cluster.manage('server', 'list', check=False).stdout
    assert not any(uuid in listed for uuid in uuids)
    listed = cluster.manage('server', 'list', '--deleted', check=False)
    assert all(uuid in listed.stdout for uuid in uuids)
    shown = cluster.manage('server', 'show', uuids[0], check=False)
    assert shown.returncode == 0 and 'deleted' in shown.stdout

    again = cluster.manage('server', 'delete', uuids[0], check=False)
    assert again.returncode == 0, again.stderr
    assert 'deleted' in again.stdout


def test_delete_of_an_unknown_server_is_one_error_line(cluster):
    result = cluster.manage('server', 'delete', UNKNOWN_UUID, check=False)
    assert result.returncode == 1
    assert result.stdout == ''
    assert result.stderr == ('gantt-manage: error: server %s: Instance %s '
                             'could not be found.\n'
                             % (UNKNOWN_UUID, UNKNOWN_UUID))
    checks.assert_db_check_passes(cluster)
