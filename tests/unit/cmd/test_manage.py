"""gantt-manage's database commands, run in-process against real SQLite.

``server create`` over RPC is in test_manage_server.py.
"""

import datetime
import re

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import compute_reports
from scheduler.db import instances as db_instances
from scheduler.db import migration
from scheduler.db import models
from scheduler.db import services as db_services
from scheduler import rpc
from tests.unit.cmd import output

NODE_UUID = '11111111-2222-3333-4444-555555555555'
OTHER_NODE_UUID = '66666666-7777-8888-9999-000000000000'


@pytest.fixture
def empty_database(tmp_path, config):
    """A SQLite database with no schema at all."""
    url = 'sqlite:///%s' % (tmp_path / 'empty.sqlite')
    config.config(connection=url, group='database')
    db_api.dispose_engine()
    yield url
    db_api.dispose_engine()


def add_node(session, uuid=NODE_UUID, host='compute1', nodename=None,
             **inventory):
    values = dict(vcpus=4, memory_mb=8192, local_gb=100,
                  reserved_memory_mb=512)
    values.update(inventory)
    return db_compute_nodes.report_inventory(session, uuid, host,
                                             nodename or host, values)


# -- db ---------------------------------------------------------------------

def test_db_sync_on_empty_database_then_version_shows_head(empty_database,
                                                           run):
    head = migration.head_version()
    before = run('db', 'version')
    assert before.code == 0
    assert 'Current revision: none' in before.out
    assert "run 'gantt-manage db sync'" in before.out

    synced = run('db', 'sync')
    assert synced.code == 0, synced.err
    assert head in synced.out

    after = run('db', 'version')
    assert after.code == 0
    assert 'Current revision: %s' % head in after.out
    assert 'Head revision:    %s' % head in after.out
    assert 'db sync' not in after.out


def test_commands_refuse_a_database_without_schema(empty_database, run):
    result = run('service', 'list')
    assert result.code == 1
    assert "run 'gantt-manage db sync'" in result.err
    assert 'Traceback' not in result.err


def test_db_check_ok_then_usage_that_disagrees_with_allocations(database,
                                                                run):
    with db_api.writer() as session:
        node_id = add_node(session)
        db_instances.create(session, NODE_UUID[::-1], flavor={'vcpus': 2},
                            request_spec=None)
        db_instances.update(session, NODE_UUID[::-1], vm_state='active',
                            task_state=None, host='compute1',
                            node='compute1')
        assert claims.claim_resources(session, node_id, NODE_UUID[::-1],
                                      claims.Resources(2, 1024, 10))
        compute_reports.record(session, 'compute1',
                               {NODE_UUID[::-1]: 'compute1'}, [])
    ok = run('db', 'check')
    assert ok.code == 0, ok.err
    assert ok.out.startswith('ok: 1 compute node(s)')
    assert len(ok.out.splitlines()) == 1

    with db_api.writer() as session:
        session.execute(sa.text(
            'UPDATE compute_nodes SET vcpus_used = vcpus_used + 3 '
            'WHERE id = :id'), {'id': node_id})
    bad = run('db', 'check')
    assert bad.code == 1
    [row] = output.table(bad.out)
    assert row[:3] == ['compute1', 'compute1', NODE_UUID]
    assert row[3] == 'vcpus used 5 but allocations sum to 2'
    assert '1 of 1 compute node(s) inconsistent.' in bad.out


def test_db_check_reports_claims_of_failed_instances(database, run):
    failed_uuid = '6d1c2a90-1111-4c1e-9a0e-5b2f0c7d8e90'
    with db_api.writer() as session:
        node_id = add_node(session)
        db_instances.create(session, failed_uuid, flavor={'vcpus': 1},
                            request_spec=None)
        db_instances.update(session, failed_uuid, vm_state='error',
                            task_state=None)
        assert claims.claim_resources(session, node_id, failed_uuid,
                                      claims.Resources(1, 512, 1))
    bad = run('db', 'check')
    assert bad.code == 1
    [row] = output.table(bad.out)
    assert row == [failed_uuid, 'compute1', 'compute1',
                   'stray claim (instance in error)']
    assert ('1 allocation(s) held by consumers that should hold none.'
            in bad.out)
    # Usage itself is consistent: no node table.
    assert 'inconsistent' not in bad.out


# -- service ----------------------------------------------------------------

def test_service_list_disable_enable_round_trip(database, run):
    with db_api.writer() as session:
        db_services.report_alive(session, 'compute1', 'gantt-compute',
                                 'compute')
        db_services.report_alive(session, 'ctl', 'gantt-scheduler',
                                 'scheduler')
        db_services.report_alive(session, 'compute2', 'gantt-compute',
                                 'compute')
        session.execute(
            sa.update(models.Service.__table__)
            .where(models.Service.host == 'compute2')
            .values(last_seen_up=models.utcnow()
                    - datetime.timedelta(hours=1)))

    listed = run('service', 'list')
    assert listed.code == 0
    rows = {(row[1], row[2]): row for row in output.table(listed.out)}
    assert rows[('gantt-compute', 'compute1')][3:5] == ['enabled', 'up']
    assert rows[('gantt-compute', 'compute2')][3:5] == ['enabled', 'down']
    assert rows[('gantt-scheduler', 'ctl')][3:5] == ['enabled', 'up']
    assert rows[('gantt-compute', 'compute1')][6] == '-'

    disabled = run('service', 'disable', 'compute1', '--reason',
                   'disk swap')
    assert disabled.code == 0
    assert disabled.out.strip() == \
        'Disabled gantt-compute on host compute1 (disk swap).'
    rows = {(row[1], row[2]): row for row in output.table(run('service',
                                                       'list').out)}
    assert rows[('gantt-compute', 'compute1')][3] == 'disabled'
    assert rows[('gantt-compute', 'compute1')][6] == 'disk swap'

    assert run('service', 'disable', 'ctl', '--binary',
               'gantt-scheduler').code == 0
    enabled = run('service', 'enable', 'compute1')
    assert enabled.code == 0
    rows = {(row[1], row[2]): row for row in output.table(run('service',
                                                       'list').out)}
    assert rows[('gantt-compute', 'compute1')][3] == 'enabled'
    assert rows[('gantt-compute', 'compute1')][6] == '-'
    assert rows[('gantt-scheduler', 'ctl')][3] == 'disabled'


@pytest.mark.parametrize('action', ['disable', 'enable'])
def test_service_unknown_is_a_clear_error(database, run, action):
    result = run('service', action, 'nowhere')
    assert result.code == 1
    assert result.err == ('gantt-manage: error: Service gantt-compute on '
                          'host nowhere could not be found.\n')


# -- host -------------------------------------------------------------------

def test_host_list_shows_used_and_capacity_as_claims_count_them(database,
                                                                config,
                                                                run):
    config.config(cpu_allocation_ratio=4.0)
    with db_api.writer() as session:
        node_id = add_node(session)
        add_node(session, uuid=OTHER_NODE_UUID, host='compute2',
                 memory_mb=4096, reserved_memory_mb=0, reserved_vcpus=1,
                 cpu_allocation_ratio=2.0, ram_allocation_ratio=1.0)
        assert claims.claim_resources(session, node_id, NODE_UUID[::-1],
                                      claims.Resources(2, 1024, 10))
    result = run('host', 'list')
    assert result.code == 0
    assert output.table(result.out) == [
        # 4 * 4.0 (the option) vCPUs; 8192 * 1.0 (the initial ratio) -
        # 512 MB; 100 * 1.0 GB.
        ['compute1', 'compute1', 'no', '2/16', '1024/7680', '10/100', '1'],
        # The node's own ratios win, minus what it reserves.
        ['compute2', 'compute2', 'no', '0/7', '0/4096', '0/100', '0'],
    ]


# -- discover_hosts ---------------------------------------------------------

def test_discover_hosts_maps_unmapped_nodes_once(database, run):
    with db_api.writer() as session:
        add_node(session)
    result = run('discover_hosts')
    assert result.code == 0
    assert result.out.startswith('Mapped 1 compute node(s):')
    assert output.table(result.out) == [['compute1', 'compute1', NODE_UUID]]
    assert output.table(run('host', 'list').out)[0][2] == 'yes'

    again = run('discover_hosts')
    assert again.code == 0
    assert again.out.strip() == 'No unmapped compute nodes found.'


# -- server list / show -----------------------------------------------------

def _add_instances():
    spec = {'num_instances': 1}
    with db_api.writer() as session:
        db_instances.create(session, NODE_UUID, {'vcpus': 1}, spec,
                            display_name='web-1')
        db_instances.update(session, NODE_UUID, host='compute1',
                            node='compute1', vm_state=db_instances.ACTIVE,
                            task_state=None)
        db_instances.create(session, OTHER_NODE_UUID, {'vcpus': 1}, spec,
                            display_name='web-2', project_id='p1')
        db_instances.update(session, OTHER_NODE_UUID,
                            vm_state=db_instances.ERROR, task_state=None,
                            fault='No valid host was found.\nRamFilter '
                                  'returned 0 hosts')


def test_server_list_with_filters(database, run):
    _add_instances()
    everything = run('server', 'list')
    assert everything.code == 0
    assert [row[:5] for row in output.table(everything.out)] == [
        [NODE_UUID, 'web-1', 'active', '-', 'compute1'],
        [OTHER_NODE_UUID, 'web-2', 'error', '-', '-'],
    ]
    on_host = output.table(run('server', 'list', '--host', 'compute1').out)
    assert [row[0] for row in on_host] == [NODE_UUID]
    in_error = output.table(run('server', 'list', '--state', 'ERROR').out)
    assert [row[0] for row in in_error] == [OTHER_NODE_UUID]
    nothing = run('server', 'list', '--host', 'compute9')
    assert nothing.code == 0
    assert nothing.out.strip() == 'No servers found.'


def test_server_show_prints_every_field_including_the_fault(database, run):
    _add_instances()
    result = run('server', 'show', OTHER_NODE_UUID)
    assert result.code == 0
    lines = result.out.splitlines()
    fields = dict(re.split(r'\s{2,}', line, maxsplit=1)
                  for line in lines[2:] if not line.startswith(' '))
    assert set(fields) == {column.name for column in
                           models.Instance.__table__.columns}
    assert fields['uuid'] == OTHER_NODE_UUID
    assert fields['display_name'] == 'web-2'
    assert fields['project_id'] == 'p1'
    assert fields['vm_state'] == 'error'
    assert fields['fault'] == 'No valid host was found.'
    # The fault's second line continues under the Value column.
    assert re.search(r'^\s+RamFilter returned 0 hosts$', result.out, re.M)


def test_server_show_unknown_uuid_is_a_clear_error(database, run):
    result = run('server', 'show', NODE_UUID)
    assert result.code == 1
    assert result.err == ('gantt-manage: error: Instance %s could not be '
                          'found.\n' % NODE_UUID)


# -- usage errors -----------------------------------------------------------

@pytest.mark.parametrize('args, message', [
    (['--hint', 'novalue'],
     "argument --hint: expected KEY=VALUE, got 'novalue'"),
    (['--hint', '=value'], "argument --hint: expected KEY=VALUE"),
    (['--vcpus', '-1'], 'argument --vcpus: must be at least 1, got -1'),
    (['--ram', '0'], 'argument --ram: must be at least 1, got 0'),
    (['--disk', '-5'], 'argument --disk: must be at least 0, got -5'),
    (['--count', 'two'], "argument --count: 'two' is not an integer"),
    (['--timeout', '0'], 'argument --timeout: must be more than 0'),
])
def test_server_create_bad_arguments(config, run, args, message):
    sizes = {'--vcpus': '1', '--ram': '512', '--disk': '1'}
    for flag, value in zip(args[::2], args[1::2]):
        sizes.pop(flag, None)
    argv = [item for pair in sizes.items() for item in pair] + args
    result = run('server', 'create', *argv)
    assert result.code == 2
    assert result.out == ''
    assert 'gantt-manage server create: error: %s' % message in result.err


@pytest.mark.parametrize('argv', [['bogus'], ['db'], ['db', 'frobnicate'],
                                  ['server', 'create', '--vcpus', '1']])
def test_usage_errors_exit_2(config, run, argv):
    result = run(*argv)
    assert result.code == 2
    assert 'error:' in result.err
    assert 'Traceback' not in result.err


def test_help_exits_0(config, run):
    result = run('--help')
    assert result.code == 0
    assert 'discover_hosts' in result.out


# -- unreachable database and broker ----------------------------------------

def test_unreachable_database_is_one_line_without_password(config, run,
                                                           conf_file):
    conf_file.write_text(
        '[database]\n'
        'connection = postgresql+psycopg2://gantt:s3cr3t@127.0.0.1:1/gantt\n')
    for argv in (['db', 'sync'], ['db', 'version'], ['service', 'list'],
                 ['server', 'show', NODE_UUID]):
        result = run(*argv)
        assert result.code == 1
        assert result.err.startswith(
            'gantt-manage: error: Cannot use the database at '
            'postgresql+psycopg2://gantt:***@127.0.0.1:1/gantt: ')
        assert result.err.count('\n') == 1
        assert 's3cr3t' not in result.out + result.err


def test_unreachable_broker_is_one_line_without_password(config, run,
                                                         conf_file):
    conf_file.write_text(
        '[DEFAULT]\n'
        'transport_url = rabbit://gantt:s3cr3t@127.0.0.1:1/\n')
    result = run('server', 'create', '--vcpus', '1', '--ram', '64',
                 '--disk', '0')
    assert result.code == 1
    assert result.out == ''
    assert result.err.startswith(
        'gantt-manage: error: Cannot reach the message broker at '
        'rabbit://gantt:***@127.0.0.1:1/: ')
    assert result.err.count('\n') == 1
    assert 's3cr3t' not in result.err
    assert rpc.TRANSPORT is None


def test_a_password_that_is_a_word_leaves_the_error_readable(config, run,
                                                             conf_file):
    # The password guest is in "Invalid request": it is no secret there.
    conf_file.write_text(
        '[DEFAULT]\n'
        'transport_url = rabbit://guest:guest@127.0.0.1:1/\n')
    result = run('server', 'create', '--vcpus', '1', '--ram', '64',
                 '--disk', '0', '--hint', 'query=[nope')
    assert result.code == 1
    assert result.err.startswith(
        'gantt-manage: error: Invalid request: hint query must be JSON'), \
        result.err
    assert '***' not in result.err
