"""gantt-status upgrade check, run in-process against real databases
(migrated SQLite and PostgreSQL), one outcome each: Nova's exit codes.
(``conf_file`` and the logging clean-up come from this directory's
conftest.)"""

import datetime
import json

from alembic import command
import pytest
import sqlalchemy as sa

from scheduler.cmd import status
from scheduler.db import api as db_api
from scheduler.db import compute_reports
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import migration
from scheduler.db import models
from scheduler.db import services as db_services
from scheduler import version
from tests.fixtures import databases


@pytest.fixture
def check(conf_file, capsys):
    """Run ``upgrade check --json``; (exit code, {check: (code, details)},
    stderr)."""
    def run(*extra):
        code = status.main(['gantt-status', '--config-file', str(conf_file),
                            'upgrade', 'check', '--json'] + list(extra))
        out, err = capsys.readouterr()
        results = {}
        if out.strip():
            for entry in json.loads(out)['checks']:
                results[entry['check']] = (entry['result'],
                                           entry['details'])
        return code, results, err
    return run


@pytest.fixture(params=['sqlite', 'postgresql'])
def migrated(request, config):
    with databases.migrated_database(request.param, config) as url:
        yield url


def test_a_clean_deployment_passes(migrated, check):
    code, results, err = check()
    assert code == 0, (results, err)
    assert set(results) == {'Database schema', 'RPC version caps',
                            'Service versions', 'Claims',
                            'Deprecated options', 'Cells v2',
                            'Aggregates and server groups', 'Quorum queues'}
    assert {result for result, _ in results.values()} == {0}
    assert results['Quorum queues'][1] == (
        '[oslo_messaging_rabbit] rabbit_quorum_queue is off.')


def test_a_deprecated_option_is_a_warning(migrated, check, conf_file):
    conf_file.write_text('[DEFAULT]\nscheduler_tracks_instance_changes = '
                         'false\n')
    code, results, _err = check()
    assert code == 1
    result, details = results['Deprecated options']
    assert result == 1
    assert '[DEFAULT] scheduler_tracks_instance_changes (now ' \
        '[filter_scheduler] track_instance_changes)' in details


def _services(*versions):
    with db_api.writer() as session:
        for number, service_version in enumerate(versions):
            db_services.report_alive(session, 'c%d' % number,
                                     'gantt-compute', 'compute',
                                     service_version)


def test_services_of_the_previous_release_pass_with_a_count(migrated,
                                                             check):
    _services(None, version.SERVICE_VERSION, None)
    code, results, _err = check()
    assert code == 0
    result, details = results['Service versions']
    assert result == 0
    assert details.startswith('2 of 3 service(s) run the previous release')


def test_a_service_newer_than_this_release_is_a_failure(migrated, check):
    _services(version.SERVICE_VERSION, version.SERVICE_VERSION + 1)
    code, results, _err = check()
    assert code == 2
    result, details = results['Service versions']
    assert result == 2
    assert 'gantt-compute on c1 (%d)' % (version.SERVICE_VERSION + 1) \
        in details
    assert 'c0' not in details


def test_a_service_older_than_supported_is_a_failure(migrated, check,
                                                      monkeypatch):
    # The day this release stops talking to unversioned services.
    monkeypatch.setattr(version, 'OLDEST_SUPPORTED_SERVICE_VERSION',
                        version.SERVICE_VERSION)
    _services(None, version.SERVICE_VERSION)
    code, results, _err = check()
    assert code == 2
    result, details = results['Service versions']
    assert 'older than this release supports' in details
    assert 'gantt-compute on c0 (none)' in details
    assert 'c1' not in details


def test_usage_without_allocations_is_a_failure(migrated, check):
    with db_api.writer() as session:
        db_compute_nodes.report_inventory(
            session, '11111111-2222-3333-4444-555555555555', 'cmp-1',
            'cmp-1', dict(vcpus=4, memory_mb=8192, local_gb=100))
        session.execute(sa.update(models.ComputeNode.__table__).values(
            vcpus_used=2))
    code, results, _err = check()
    assert code == 2
    result, details = results['Claims']
    assert result == 2
    assert details.startswith('1 node(s) whose usage does not match')


def test_an_instance_its_compute_does_not_run_is_a_failure(migrated,
                                                          check):
    with db_api.writer() as session:
        db_instances.create(session, 'b' * 36, flavor={'vcpus': 1},
                            request_spec=None)
        db_instances.update(session, 'b' * 36, vm_state='active',
                            task_state=None, host='cmp-1', node='cmp-1')
        # Changed a minute before the compute's report, which does not
        # list it.
        minute_ago = models.utcnow() - datetime.timedelta(minutes=1)
        session.execute(sa.update(models.Instance).where(
            models.Instance.uuid == 'b' * 36).values(
            created_at=minute_ago, updated_at=minute_ago))
    with db_api.writer() as session:
        compute_reports.record(session, 'cmp-1', {}, [])
    code, results, _err = check()
    assert code == 2
    assert results['Claims'] == (
        2, "1 instance(s) at odds with their compute or their cell: run "
        "'gantt-manage db check' for the list.")


def test_a_schema_behind_the_code_is_a_failure(migrated, check):
    command.stamp(migration.get_alembic_config(), '8b3f6d0e2a91')
    code, results, _err = check()
    assert code == 2
    result, details = results['Database schema']
    assert result == 2
    assert 'revision 8b3f6d0e2a91' in details and \
        migration.head_version() in details
    assert results['Claims'][0] == 2     # not checked on an old schema


def test_a_cap_this_release_does_not_speak_is_a_failure(migrated, check,
                                                        conf_file):
    conf_file.write_text('[upgrade_levels]\nscheduler = 9.0\n'
                         'compute = 1.1\n')
    code, results, _err = check()
    assert code == 2
    result, details = results['RPC version caps']
    assert result == 2
    assert details == ('[upgrade_levels] scheduler = 9.0: this release '
                       'speaks %s.' % status.RPC_APIS['scheduler'])


def test_an_unreachable_database_is_one_line_and_255(config, check):
    config.config(connection='postgresql+psycopg2://u:p@127.0.0.1:9/x',
                  group='database')
    db_api.dispose_engine()
    code, results, err = check()
    assert code == 255
    assert results == {}
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith('gantt-status: error: cannot use the '
                               'database at postgresql+psycopg2://u:***@')
    assert ':p@' not in err


def test_cells_v2_check_follows_the_setup(database, api_database, check,
                                          tmp_path, capsys):
    from scheduler.cmd import manage

    def cells_v2():
        code, results, err = check()
        return code, results['Cells v2']

    def manage_ok(*args):
        assert manage.main(['gantt-manage'] + list(args)) == 0
        capsys.readouterr()    # what it said is not the check's output

    code, (result, details) = cells_v2()
    assert (code, result) == (2, 2)
    assert 'at least two cell mappings' in details
    manage_ok('cell_v2', 'create_cell', '--name', 'cell1',
              '--transport-url', 'rabbit://h/', '--database_connection',
              database)
    manage_ok('cell_v2', 'create_cell', '--name', 'cell2',
              '--transport-url', 'rabbit://h2/', '--database_connection',
              'sqlite:///%s' % (tmp_path / 'other.sqlite'))
    assert 'No cell0 mapping' in cells_v2()[1][1]
    manage_ok('cell_v2', 'map_cell0')
    # cell2's database has no schema: the check says which cell.
    assert "cell cell2" in cells_v2()[1][1]
    with db_api.writer() as session:
        db_compute_nodes.report_inventory(
            session, 'a' * 36, 'compute1', 'compute1',
            dict(vcpus=1, memory_mb=512, local_gb=1))
    manage_ok('cell_v2', 'delete_cell', '--cell_uuid', next(
        row.uuid for row in _cells() if row.name == 'cell2'))
    assert 'No host mappings found but there are compute nodes' in \
        cells_v2()[1][1]
    manage_ok('cell_v2', 'discover_hosts')
    # The Claims check reads every cell, cell0 too: its schema first.
    manage_ok('db', 'sync')
    capsys.readouterr()

    code, (result, details) = cells_v2()

    assert (code, result, details) == (0, 0, None)


def _cells():
    from scheduler.db import mappings

    with db_api.api_reader() as session:
        return mappings.list_cells(session)
