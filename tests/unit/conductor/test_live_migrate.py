"""Live migration through the real conductor, scheduler and computes,
in-process (fake:// transport, SQLite), called with the real RPC client.

The source is always h1 (the host with the most free RAM, where builds
land); ``refuse_live_migration`` in a host's capacity makes its agent
refuse the pre-check.
"""

import pytest

from scheduler import exception
from tests.unit.conductor import move_checks as checks
from tests.unit import inprocess

SMALL, MEDIUM, BIG = checks.SMALL, checks.MEDIUM, checks.BIG
CLAIM = checks.CLAIM
REFUSING = dict(MEDIUM, refuse_live_migration=True)
TINY = {'vcpus': 1, 'memory_mb': 512, 'local_gb': 100}


@pytest.fixture
def cluster_config(database, config):
    return inprocess.configure(config, exact_ratios=True)


def _live(uuid, **kwargs):
    return checks.api().migrate_server(checks.ctxt(), uuid, live=True,
                                       **kwargs)


def _assert_completed(cluster, uuid, answer, host):
    """The instance runs ACTIVE on ``host`` and holds only its claim."""
    assert (answer['vm_state'], answer['task_state'], answer['host']) == (
        'active', None, host)
    migration = answer['migration']
    assert (migration['migration_type'], migration['status'],
            migration['source_host'], migration['dest_host']) == (
                'live-migration', 'completed', 'h1', host)
    row = checks.instance(uuid)
    assert (row.vm_state, row.task_state, row.host, row.node) == (
        'active', None, host, host)
    assert checks.allocations() == {uuid: (host,) + CLAIM}
    used = checks.usage()
    assert used.pop(host) == CLAIM
    assert set(used.values()) == {(0, 0, 0)}
    assert uuid in checks.tracked_by(cluster, host)
    assert uuid not in checks.tracked_by(cluster, 'h1')
    checks.assert_consistent()


def _assert_unchanged(uuid, before):
    """A failed live migration: all as before, the migration ``error``."""
    assert checks.snapshot([uuid]) == before
    [migration] = checks.migrations(uuid)
    assert (migration.migration_type, migration.status) == (
        'live-migration', 'error')
    assert migration.error
    checks.assert_consistent()


def test_scheduled_live_migration(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        answer = _live(uuid)
        _assert_completed(cluster, uuid, answer, 'h2')


def test_live_migration_to_a_requested_host(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': MEDIUM,
                            'h3': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        # The weighers prefer h2; the request says h3.
        _assert_completed(cluster, uuid, _live(uuid, host='h3'), 'h3')


@pytest.mark.parametrize('scheduler_api', [None, '1.0'])
def test_requested_host_the_filters_reject(cluster_config, scheduler_api):
    # Over scheduler API 1.0 the host is forced, with the filters asked for.
    cluster_config.config(scheduler=scheduler_api, group='upgrade_levels')
    with inprocess.Cluster({'h1': BIG, 'h2': MEDIUM,
                            'h3': TINY, 'h4': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        with pytest.raises(exception.NoValidHost) as caught:
            _live(uuid, host='h3')
        assert 'RamFilter' in str(caught.value)
        _assert_unchanged(uuid, before)
        # h2 would weigh best; the request says h4.
        _assert_completed(cluster, uuid, _live(uuid, host='h4'), 'h4')


def test_forced_host_is_claimed_directly(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL, 'h3': TINY}) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        # 1024 MB do not fit in h3's 512.
        with pytest.raises(exception.NoValidHost,
                           match='Forced host h3 cannot take instance'):
            _live(uuid, host='h3', force=True)
        _assert_unchanged(uuid, before)
        # h2 has room: no scheduler, the claim is made directly.
        _assert_completed(cluster, uuid, _live(uuid, host='h2', force=True),
                          'h2')


def test_refused_pre_check_retries_on_another_host(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': REFUSING,
                            'h3': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        # h2 weighs best but refuses; its claim goes, h3 takes the instance.
        _assert_completed(cluster, uuid, _live(uuid), 'h3')
    assert [m.status for m in checks.migrations(uuid)] == ['completed']


def test_a_destination_that_does_not_answer_the_pre_check_is_skipped(
        cluster_config):
    cluster_config.config(rpc_response_timeout=1)
    with inprocess.Cluster({'h1': BIG, 'h2': MEDIUM,
                            'h3': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        checks.stop_agent(cluster, 'h2')   # still "up" for the scheduler
        answer = _live(uuid)
        assert answer['host'] == 'h3'
        assert uuid in checks.tracked_by(cluster, 'h3')
    assert checks.allocations() == {uuid: ('h3',) + CLAIM}
    assert checks.usage()['h2'] == (0, 0, 0)
    checks.assert_consistent()


def test_no_retry_with_migrate_max_retries_0(cluster_config):
    cluster_config.config(migrate_max_retries=0, group='conductor')
    with inprocess.Cluster({'h1': BIG, 'h2': REFUSING,
                            'h3': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        with pytest.raises(exception.MaxRetriesExceeded) as caught:
            _live(uuid)
    assert 'Exceeded max scheduling retries 0' in str(caught.value)
    assert 'Hosts tried: h2.' in str(caught.value)
    _assert_unchanged(uuid, before)


def test_every_host_refusing_ends_in_no_valid_host(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': REFUSING,
                            'h3': dict(SMALL, refuse_live_migration=True)}
                           ) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        with pytest.raises(exception.NoValidHost) as caught:
            _live(uuid)
    assert 'refused the live migration: h2, h3.' in str(caught.value)
    _assert_unchanged(uuid, before)


def test_requested_host_refusing_the_pre_check_fails(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': REFUSING,
                            'h3': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        with pytest.raises(exception.MigrationPreCheckError,
                           match='h2 refuses live migrations'):
            _live(uuid, host='h2')
    _assert_unchanged(uuid, before)


def test_bad_live_migration_requests_change_nothing(cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        uuid = checks.boot_one(cluster)
        before = checks.snapshot([uuid])
        with pytest.raises(exception.InvalidRequest,
                           match='already runs on h1'):
            _live(uuid, host='h1')
        with pytest.raises(exception.HostNotFound, match='nowhere'):
            _live(uuid, host='nowhere')
        with pytest.raises(exception.InvalidRequest,
                           match='force needs a host'):
            _live(uuid, force=True)
        with pytest.raises(exception.InvalidRequest,
                           match='host must be a string, not int'):
            _live(uuid, host=42)
        with pytest.raises(exception.InvalidRequest, match='cannot resize'):
            _live(uuid, flavor={'vcpus': 2})
        missing = '00000000-0000-4000-8000-000000000000'
        with pytest.raises(exception.InstanceNotFound):
            _live(missing)
        assert checks.snapshot([uuid]) == before
        assert checks.migrations(uuid) == []

        checks.api().migrate_server(checks.ctxt(), uuid)   # now resized
        resized = checks.snapshot([uuid])
        with pytest.raises(exception.InstanceInvalidState,
                           match='Cannot live-migrate instance'):
            _live(uuid)
    assert checks.snapshot([uuid]) == resized
    checks.assert_consistent()
