"""Moving existing servers through the real daemons and gantt-manage.

One cluster (PostgreSQL, a conductor, a scheduler and four single-node
computes of one size, allocation ratios of 1.0) for the module. Each
operation runs as an operator runs it, through the installed
``gantt-manage server ...`` (one RPC call to the conductor), and after
each step the test checks three things against each other: what
gantt-manage printed, the instance row in SQL, and the allocations in SQL
of the instance and of its migrations (a resized server holds two claims:
the new one under its own UUID on the destination, the old one under the
migration's UUID on the source). ``gantt-manage db check`` must pass
after every step.

The evacuation test comes last in the module: it SIGKILLs a compute and
marks its service forced down, as an operator does after fencing a host
(``openstack compute service set --down``), instead of waiting for
``service_down_time``.
"""

import json

import pytest

from tests.functional import boot_scenario
from tests.functional import checks
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

HOSTS = ('cmp1', 'cmp2', 'cmp3', 'cmp4')
HOST_SIZE = dict(vcpus=4, memory_mb=8192, local_gb=100)
FLAVOR = ('--vcpus', '1', '--ram', '512', '--disk', '1')
SMALL = (1, 512, 1)
BIGGER_FLAVOR = ('--vcpus', '2', '--ram', '1024', '--disk', '2')
BIGGER = (2, 1024, 2)

EXTRA_CONF = '''\
[filter_scheduler]
cpu_allocation_ratio = 1.0
ram_allocation_ratio = 1.0
'''

UNKNOWN_UUID = '5d0a4c2e-8f1b-4e6a-9c3d-7b2a1f0e9d8c'


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    cluster = cluster_mod.Cluster(tmp_path_factory.mktemp('moves'),
                                  'postgresql', extra_conf=EXTRA_CONF)
    cluster.__enter__()
    try:
        cluster.start_conductor()
        for host in HOSTS:
            cluster.start_compute(host, **HOST_SIZE)
        cluster.start_scheduler()
        cluster.wait_for_computes(HOSTS)
        cluster.discover_hosts()
        yield cluster
    finally:
        cluster.__exit__(None, None, None)


# -- helpers --------------------------------------------------------------

def fields(stdout):
    """``{field: value}`` of the Field/Value table gantt-manage printed."""
    lines = stdout.splitlines()
    start = next(index for index, line in enumerate(lines)
                 if line.startswith('--'))
    shown = {}
    for line in lines[start + 1:]:
        if not line.strip():
            break
        name, _gap, value = line.partition('  ')
        shown[name] = value.strip()
    return shown


def server(cluster, *args, expect_rc=0):
    """``gantt-manage server ARGS``; the fields printed (exit 0) or the
    finished process (other exit codes)."""
    result = cluster.manage('server', *args, check=False)
    assert result.returncode == expect_rc, (
        'server %s exited %d, expected %d:\n%s\n%s'
        % (' '.join(args), result.returncode, expect_rc, result.stdout,
           result.stderr))
    if expect_rc:
        return result
    assert result.stderr == '', result.stderr
    return fields(result.stdout)


def boot(cluster):
    [uuid] = boot_scenario.create(cluster, *FLAVOR)
    return uuid


def instance(cluster, uuid):
    [row] = cluster.query(
        'SELECT uuid, host, node, vm_state, task_state, flavor, '
        'request_spec FROM instances WHERE uuid = :u', u=uuid)
    return row


def assert_shown_is_sql(cluster, uuid, shown):
    """What gantt-manage printed is where SQL says the server is."""
    row = instance(cluster, uuid)
    assert shown['uuid'] == uuid
    assert (shown['vm_state'], shown['host'], shown['node']) == (
        row.vm_state, row.host or '-', row.node or '-'), row
    assert row.task_state is None
    return row


def claims_of(cluster, uuid):
    """``{consumer: (host, (vcpus, memory_mb, disk_gb))}`` of the
    instance and of every migration of it."""
    consumers = {uuid} | {row.uuid for row in cluster.query(
        'SELECT uuid FROM migrations WHERE instance_uuid = :u', u=uuid)}
    rows = [row for row in cluster.allocations()
            if row.consumer_uuid in consumers]
    claims = {row.consumer_uuid: (row.host, (row.vcpus, row.memory_mb,
                                             row.disk_gb))
              for row in rows}
    assert len(claims) == len(rows), 'a consumer claims on several nodes'
    return claims


def migration(cluster, migration_uuid):
    [row] = cluster.query(
        'SELECT migration_type, status, source_host, dest_host '
        'FROM migrations WHERE uuid = :u', u=migration_uuid)
    return row


def flavor_size(row):
    flavor = json.loads(row.flavor) if isinstance(row.flavor, str) \
        else row.flavor
    return flavor['vcpus'], flavor['memory_mb'], flavor['root_gb']


def image_properties(row):
    """The image properties of the instance's recorded request spec."""
    spec = row.request_spec
    if isinstance(spec, str):
        spec = json.loads(spec)
    image = spec['gantt_object.data']['image']
    return image['gantt_object.data'].get('properties', {}) if image else {}


# -- the tests ---------------------------------------------------------------

def test_migrate_confirm_then_resize_revert(cluster):
    uuid = boot(cluster)
    first = instance(cluster, uuid).host

    shown = server(cluster, 'migrate', uuid)
    second = shown['host']
    assert second in HOSTS and second != first
    assert (shown['vm_state'], shown['migration_type'],
            shown['migration_status'], shown['source'], shown['dest']) == (
        'resized', 'migration', 'finished', first, second)
    assert_shown_is_sql(cluster, uuid, shown)
    assert claims_of(cluster, uuid) == {uuid: (second, SMALL),
                                        shown['migration']: (first, SMALL)}
    checks.assert_db_check_passes(cluster)

    shown = server(cluster, 'confirm', uuid)
    assert (shown['vm_state'], shown['host'], shown['migration_status']) == (
        'active', second, 'confirmed')
    assert_shown_is_sql(cluster, uuid, shown)
    assert claims_of(cluster, uuid) == {uuid: (second, SMALL)}
    checks.assert_consistent(cluster)

    shown = server(cluster, 'resize', uuid, *BIGGER_FLAVOR)
    third = shown['host']
    assert third in HOSTS and third != second
    assert (shown['vm_state'], shown['migration_type'],
            shown['migration_status'], shown['source'], shown['dest'],
            shown['flavor']) == (
        'resized', 'resize', 'finished', second, third,
        '2vcpu-1024mb-2gb (2 vCPU, 1024 MB RAM, 2 GB disk)')
    row = assert_shown_is_sql(cluster, uuid, shown)
    assert flavor_size(row) == BIGGER
    resize_uuid = shown['migration']
    assert claims_of(cluster, uuid) == {uuid: (third, BIGGER),
                                        resize_uuid: (second, SMALL)}
    checks.assert_db_check_passes(cluster)

    shown = server(cluster, 'revert', uuid)
    assert (shown['vm_state'], shown['host'], shown['migration_status']) == (
        'active', second, 'reverted')
    row = assert_shown_is_sql(cluster, uuid, shown)
    assert flavor_size(row) == SMALL
    assert claims_of(cluster, uuid) == {uuid: (second, SMALL)}
    assert migration(cluster, resize_uuid).status == 'reverted'
    checks.assert_consistent(cluster)


def test_live_migrate_then_shelve_and_unshelve(cluster):
    uuid = boot(cluster)
    first = instance(cluster, uuid).host

    shown = server(cluster, 'live-migrate', uuid)
    second = shown['host']
    assert second in HOSTS and second != first
    assert (shown['vm_state'], shown['migration_type'],
            shown['migration_status'], shown['source'], shown['dest']) == (
        'active', 'live-migration', 'completed', first, second)
    assert_shown_is_sql(cluster, uuid, shown)
    assert claims_of(cluster, uuid) == {uuid: (second, SMALL)}
    checks.assert_consistent(cluster)

    # A requested host, checked by the filters; then one forced.
    third, fourth = [host for host in HOSTS if host != second][:2]
    shown = server(cluster, 'live-migrate', uuid, '--host', third)
    assert (shown['vm_state'], shown['host'], shown['source']) == (
        'active', third, second)
    assert_shown_is_sql(cluster, uuid, shown)
    shown = server(cluster, 'live-migrate', uuid, '--host', fourth,
                   '--force')
    assert (shown['vm_state'], shown['host'], shown['dest']) == (
        'active', fourth, fourth)
    assert_shown_is_sql(cluster, uuid, shown)
    assert claims_of(cluster, uuid) == {uuid: (fourth, SMALL)}
    checks.assert_consistent(cluster)

    # shelved_offload_time is 0 (the default): offloaded at once, no claim.
    shown = server(cluster, 'shelve', uuid)
    assert (shown['vm_state'], shown['host']) == ('shelved_offloaded', '-')
    assert_shown_is_sql(cluster, uuid, shown)
    assert claims_of(cluster, uuid) == {}
    checks.assert_consistent(cluster)

    shown = server(cluster, 'unshelve', uuid)
    assert shown['vm_state'] == 'active' and shown['host'] in HOSTS
    assert_shown_is_sql(cluster, uuid, shown)
    assert claims_of(cluster, uuid) == {uuid: (shown['host'], SMALL)}
    checks.assert_consistent(cluster)

    # Unshelving an active server is refused and changes nothing.
    before = (instance(cluster, uuid), claims_of(cluster, uuid))
    result = server(cluster, 'unshelve', uuid, expect_rc=1)
    assert result.stderr == (
        'gantt-manage: error: Cannot unshelve instance %s while it is in '
        'vm_state active, task_state None.\n' % uuid)
    assert (instance(cluster, uuid), claims_of(cluster, uuid)) == before


def test_rebuild_with_an_image_property(cluster):
    uuid = boot(cluster)
    before = instance(cluster, uuid)
    claims_before = claims_of(cluster, uuid)

    shown = server(cluster, 'rebuild', uuid, '--image-name', 'cirros',
                   '--image-property', 'hw_architecture=x86_64')
    assert (shown['vm_state'], shown['host']) == ('active', before.host)
    row = assert_shown_is_sql(cluster, uuid, shown)
    assert image_properties(row) == {'hw_architecture': 'x86_64'}
    assert claims_of(cluster, uuid) == claims_before
    checks.assert_consistent(cluster)

    # The fake computes run x86_64 only: ImagePropertiesFilter refuses
    # the host, and the server keeps its image and claim.
    result = server(cluster, 'rebuild', uuid, '--image-property',
                    'hw_architecture=aarch64', expect_rc=1)
    assert result.stderr.startswith('gantt-manage: error: '), result.stderr
    assert 'No valid host was found.' in result.stderr
    assert 'ImagePropertiesFilter 1 -> 0' in result.stderr
    assert result.stderr.count('\n') == 1, result.stderr
    row = instance(cluster, uuid)
    assert (row.vm_state, row.host) == ('active', before.host)
    assert image_properties(row) == {'hw_architecture': 'x86_64'}
    assert claims_of(cluster, uuid) == claims_before
    checks.assert_consistent(cluster)


def test_unknown_server_is_one_error_line(cluster):
    for args in (['migrate'], ['live-migrate', '--host', 'cmp1'],
                 ['evacuate'], ['shelve']):
        result = server(cluster, args[0], UNKNOWN_UUID, *args[1:],
                        expect_rc=1)
        assert result.stdout == ''
        # The conductor's message, not its traceback.
        assert result.stderr == ('gantt-manage: error: Instance %s could '
                                 'not be found.\n' % UNKNOWN_UUID)
    assert cluster.query('SELECT uuid FROM migrations WHERE instance_uuid '
                         '= :u', u=UNKNOWN_UUID) == []
    checks.assert_db_check_passes(cluster)


def test_evacuate_from_a_dead_compute(cluster):
    uuid = boot(cluster)
    source = instance(cluster, uuid).host
    before = (instance(cluster, uuid), claims_of(cluster, uuid))

    # While its compute is up, the conductor refuses and changes nothing.
    result = server(cluster, 'evacuate', uuid, expect_rc=1)
    assert result.stderr == (
        'gantt-manage: error: Compute service of %s is still up; cannot '
        'evacuate instance %s from it.\n' % (source, uuid))
    assert (instance(cluster, uuid), claims_of(cluster, uuid)) == before

    [compute] = [process for process in cluster.processes
                 if process.name == source]
    compute.kill_group()
    compute.popen.wait(10)
    with cluster.engine.begin() as conn:
        conn.exec_driver_sql(
            'UPDATE services SET forced_down = true WHERE host = %(h)s '
            'AND "binary" = %(b)s', {'h': source, 'b': 'gantt-compute'})

    shown = server(cluster, 'evacuate', uuid)
    dest = shown['host']
    assert dest in HOSTS and dest != source
    assert (shown['vm_state'], shown['migration_type'],
            shown['migration_status'], shown['source'], shown['dest']) == (
        'active', 'evacuation', 'done', source, dest)
    assert_shown_is_sql(cluster, uuid, shown)
    assert claims_of(cluster, uuid) == {uuid: (dest, SMALL)}
    checks.assert_consistent(cluster)
