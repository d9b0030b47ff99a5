"""Cells v2 end to end: a super-conductor, a conductor per cell, cell0.

Real daemons. The API database is on PostgreSQL, cell1's on MariaDB,
cell2's and cell0's on PostgreSQL. The scheduler and the super-conductor
speak on the cluster's own RabbitMQ vhost; each cell has a vhost of its
own (made here with ``rabbitmqctl add_vhost``, deleted afterwards) that
its conductor and computes speak on. The super-conductor's
``[database]`` is cell0, as in Nova's layout; each cell conductor has
no ``[api_database]`` (it serves its cell on its ``[database]``).

The scheduler on this branch reads hosts from its own ``[database]``
only, so :func:`test_one_cell_builds_and_cell0` gives it cell1's.
:func:`test_builds_land_in_both_cells` has the scheduler read every
cell (``scheduler.host_cache``'s reads over cells).
(``gantt-manage server list`` and ``cell_v2 verify_instance`` over the
same mappings are tested in tests/unit/cmd/test_manage_server_cells.py;
each gantt-manage run here costs seconds.)
"""

import contextlib
import signal
import time
import uuid

from oslo_config import fixture as config_fixture
from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from conductor import rpcapi as conductor_rpcapi
from scheduler import cells
from scheduler import conf
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler.db import migration
from scheduler.objects import request_spec
from scheduler import rpc
from tests.fixtures import databases
from tests.fixtures import postgresql
from tests.functional import checks
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

CELL_UUIDS = ['11111111-1111-1111-1111-111111111111',
              '22222222-2222-2222-2222-222222222222']
SMALL = {'vcpus': 2, 'memory_mb': 4096, 'local_gb': 40}
# Super-conductors renew their build requests every second and take over
# those of a dead one after three.
SUPER_CONF = ('[conductor]\nbuild_request_poll_interval = 1\n'
              'build_request_grace_period = 3\n')


@contextlib.contextmanager
def vhost():
    name = cluster_mod.VHOST_PREFIX + uuid.uuid4().hex[:12]
    cluster_mod._rabbitmqctl('add_vhost', name)
    try:
        cluster_mod._rabbitmqctl('set_permissions', '-p', name, 'guest',
                                 '.*', '.*', '.*')
        yield cluster_mod.RABBIT + name
    finally:
        cluster_mod._rabbitmqctl('delete_vhost', name)


@contextlib.contextmanager
def _cell_database(backend):
    if '://' not in backend:
        with databases.cell_database(backend) as url:
            yield url
        return
    with db_api.target_cell(backend):
        migration.db_sync()
    yield backend


def count(url, sql, **params):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(sql), params).scalar()
    finally:
        engine.dispose()


class Cells:
    """The databases, vhosts and mappings of a cells deployment; the
    daemons run in :attr:`cluster` (whose ``[database]`` is cell1)."""

    def __init__(self, stack, tmp_path, cell_backends):
        """``cell_backends``: per cell, a backend name (a database of
        its own on the shared server) or a database URL to use."""
        config = config_fixture.Config(conf.CONF)
        config.setUp()
        stack.callback(config.cleanUp)
        self.api_url = stack.enter_context(
            databases.migrated_api_database('postgresql', config))
        self.cell0_url = stack.enter_context(
            databases.cell_database('postgresql'))
        self.cell_urls = [stack.enter_context(_cell_database(backend))
                          for backend in cell_backends]
        self.brokers = [stack.enter_context(vhost()) for _ in cell_backends]
        with db_api.api_writer() as session:
            mappings.create_cell(session, cells.CELL0_UUID, 'cell0',
                                 'none:///', self.cell0_url)
            for index, url in enumerate(self.cell_urls):
                mappings.create_cell(session, CELL_UUIDS[index],
                                     'cell%d' % (index + 1),
                                     self.brokers[index], url)
        self.cluster = stack.enter_context(cluster_mod.Cluster(
            tmp_path, db_url=self.cell_urls[0],
            extra_conf='[api_database]\nconnection = %s\n' % self.api_url))
        stack.callback(db_api.dispose_engine)

    def cell_conf(self, index):
        """What the daemons of cell ``index`` (0: cell1) set."""
        return ('[DEFAULT]\ntransport_url = %s\n[database]\n'
                'connection = %s\n' % (self.brokers[index],
                                       self.cell_urls[index]))

    def start_cell(self, index, hosts, shape=SMALL):
        """The conductor and computes of cell ``index`` (0: cell1)."""
        cell_conf = self.cell_conf(index)
        name = 'conductor-cell%d' % (index + 1)
        self.cluster.start('gantt-conductor', name, '[DEFAULT]\nhost = %s\n'
                           % name + cell_conf + '[api_database]\n'
                           'connection =\n')
        # Its queue exists before a compute's first report is sent.
        self.wait_rows(self.cell_urls[index], "SELECT count(*) FROM "
                       "services WHERE host = '%s'" % name, 1, name)
        for host in hosts:
            self.cluster.start_compute(host, extra_conf=cell_conf, **shape)
        self.wait_rows(self.cell_urls[index], 'SELECT count(*) FROM '
                       'compute_nodes', len(hosts), 'computes of cell%d'
                       % (index + 1))

    def start_top(self, super_conf=SUPER_CONF):
        """Discover the hosts; start the scheduler and the
        super-conductor (``[database]`` cell0)."""
        self.cluster.manage('cell_v2', 'discover_hosts')
        self.cluster.start_scheduler()
        self.start_super('superconductor', super_conf)

    def start_super(self, name, super_conf=SUPER_CONF):
        """A super-conductor (``[database]`` cell0), once it serves."""
        process = self.cluster.start(
            'gantt-conductor', name, '[DEFAULT]\nhost = %s\n[database]\n'
            'connection = %s\n' % (name, self.cell0_url) + super_conf)
        self.wait_rows(self.cell0_url, "SELECT count(*) FROM services WHERE "
                       "host = '%s'" % name, 1, name)
        return process

    def process(self, name):
        return [process for process in self.cluster.processes
                if process.name == name][0]

    def accept(self, uuids, vcpus):
        """Ask the super-conductor to build ``uuids`` (one request, each
        of ``vcpus``), as any RPC client; back once they are accepted."""
        spec = request_spec.RequestSpec(
            num_instances=len(uuids), project_id='p1',
            flavor=request_spec.Flavor(name='f%d' % vcpus, vcpus=vcpus,
                                       memory_mb=512, root_gb=1))
        return conductor_rpcapi.ComputeTaskAPI().schedule_and_build_instances(
            gantt_context.get_admin_context(), uuids, spec)

    def db_check(self, index):
        """``gantt-manage db check`` on cell ``index``'s database."""
        path = self.cluster.write_conf('check-cell%d.conf' % (index + 1),
                                       self.cell_conf(index))
        return self.cluster.manage('--config-file', path, 'db', 'check',
                                   check=False)

    def where(self, instance_uuid):
        """``{cell name: vm_state}`` of the cell databases that have a
        row of the instance."""
        found = {}
        for name, url in [('cell0', self.cell0_url)] + [
                ('cell%d' % (index + 1), url)
                for index, url in enumerate(self.cell_urls)]:
            state = self.states(url).get(instance_uuid)
            if state is not None:
                found[name] = state[0]
        return found

    def wait_rows(self, url, sql, wanted, what):
        self.cluster.wait_until(lambda: count(url, sql) == wanted, 60, what)

    def create(self, vcpus, count_):
        result = self.cluster.manage(
            'server', 'create', '--vcpus', str(vcpus), '--ram', '512',
            '--disk', '1', '--count', str(count_), '--wait', '--timeout',
            '60', check=False)
        assert 'Traceback' not in result.stderr, result.stderr
        # The UUIDs are printed, then the landing table: first lines.
        found = [line.split()[0] for line in result.stdout.splitlines()
                 if line[:36].count('-') == 4 and len(line.split()[0]) == 36]
        return list(dict.fromkeys(found))

    def mapped_cell(self, instance_uuid):
        return count(self.api_url, 'SELECT c.name FROM instance_mappings m '
                     'JOIN cell_mappings c ON c.id = m.cell_id WHERE '
                     'm.instance_uuid = :u', u=instance_uuid)

    def states(self, url):
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                return {row.uuid: (row.vm_state, row.fault) for row in
                        conn.execute(sa.text('SELECT uuid, vm_state, fault '
                                             'FROM instances'))}
        finally:
            engine.dispose()


def _check_impossible_lands_in_cell0(deployment):
    [buried] = deployment.create(vcpus=64, count_=1)
    state, fault = deployment.states(deployment.cell0_url)[buried]
    assert state == 'error'
    assert fault.startswith('No valid host was found.')
    # The row is written in cell0 first, then the mapping.
    deployment.cluster.wait_until(
        lambda: deployment.mapped_cell(buried) == 'cell0', 10,
        'the mapping of %s to cell0' % buried)
    assert count(deployment.api_url,
                 'SELECT count(*) FROM build_requests') == 0


def _check_a_dead_super_conductor_s_builds_are_built(deployment):
    """A super-conductor SIGKILLed after it accepted builds and asked
    the scheduler: the scheduler claims for them anyway; the next
    super-conductor takes the build requests over once the grace period
    is over, and each server is built once, with one claim."""
    cluster = deployment.cluster
    scheduler = deployment.process('scheduler')
    first = deployment.process('superconductor')
    uuids = [uuidutils.generate_uuid() for _ in range(3)]
    # Frozen, the scheduler lets the super-conductor's call wait.
    scheduler.signal_group(signal.SIGSTOP)
    try:
        assert deployment.accept(uuids, vcpus=1) == uuids
        cluster.wait_until(
            lambda: cluster.queue_depths().get('scheduler', 0) == 1, 30,
            'the call to wait for the scheduler', first)
        first.kill_group()
        first.popen.wait(10)
    finally:
        scheduler.signal_group(signal.SIGCONT)
    held = ('SELECT count(*) FROM allocations WHERE consumer_uuid IN '
            '(%s)' % ', '.join("'%s'" % uuid for uuid in uuids))
    deployment.wait_rows(deployment.cell_urls[0], held, 3,
                         'the claims of the dead one\'s request')

    second = deployment.start_super('superconductor-2')
    cluster.wait_until(
        lambda: [deployment.where(uuid) for uuid in uuids] ==
        [{'cell1': 'active'}] * 3, 60, 'the dead one\'s builds', second)
    assert {deployment.mapped_cell(uuid) for uuid in uuids} == {'cell1'}
    assert count(deployment.api_url,
                 'SELECT count(*) FROM build_requests') == 0
    assert count(deployment.cell_urls[0], held) == 3
    checks.assert_db_check_passes(cluster)
    assert 'Scheduling the build of' in second.log()


def test_one_cell_builds_and_cell0(tmp_path, rpc_transport):
    with contextlib.ExitStack() as stack:
        deployment = Cells(stack, tmp_path, ['mariadb'])
        deployment.start_cell(0, ['c1a', 'c1b'])
        deployment.start_top()
        rpc_transport(deployment.cluster)
        # Before the vhost goes.
        stack.callback(rpc.cleanup)

        built = deployment.create(vcpus=1, count_=3)
        assert len(built) == 3
        states = deployment.states(deployment.cell_urls[0])
        assert {states[uuid][0] for uuid in built} == {'active'}
        assert {deployment.mapped_cell(uuid) for uuid in built} == {'cell1'}
        _check_impossible_lands_in_cell0(deployment)
        _check_a_dead_super_conductor_s_builds_are_built(deployment)


def test_builds_land_in_both_cells(tmp_path):
    with contextlib.ExitStack() as stack:
        deployment = Cells(stack, tmp_path, ['mariadb', 'postgresql'])
        deployment.start_cell(0, ['c1a'])
        deployment.start_cell(1, ['c2a'])
        deployment.start_top()

        # Two hosts of 2 vCPUs (initial ratio 4: room for 8 each): two
        # servers of 5 vCPUs need both cells.
        built = deployment.create(vcpus=5, count_=2)
        assert len(built) == 2
        assert sorted(deployment.mapped_cell(uuid) for uuid in built) == \
            ['cell1', 'cell2']
        for index in (0, 1):
            states = deployment.states(deployment.cell_urls[index])
            assert [state for state, _fault in states.values()] == \
                ['active']
        _check_impossible_lands_in_cell0(deployment)


# The super-conductor of the fault test gives up creating an instance in
# a cell whose database is away after about three seconds (then the build
# waits for that cell), and polls every two seconds.
FAULT_SUPER_CONF = """[conductor]
build_request_poll_interval = 2
build_request_grace_period = 5
[database]
db_max_retries = 2
db_retry_interval = 1
db_inc_retry_interval = false
"""
# cell2's host: room for 40 vCPUs (initial ratio 4), where two servers
# of 9 fit even counted twice; cell1's host has room for 8.
BIG = {'vcpus': 10, 'memory_mb': 8192, 'local_gb': 80}


def waiting_inserts(pg):
    """The instance INSERTs waiting for a lock in ``pg``'s databases."""
    with pg.admin_connection() as conn:
        return conn.execute(sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type "
            "= 'Lock' AND query LIKE 'INSERT INTO instances%'")).scalar()


@contextlib.contextmanager
def creation_held(url, uuids):
    """An open transaction on ``url`` that inserted (uncommitted) rows of
    ``uuids`` in ``instances``: another INSERT of those waits for it."""
    engine = sa.create_engine(url)
    conn = engine.connect()
    try:
        conn.begin()
        for uuid in uuids:
            db_instances.create(conn, uuid, flavor={}, request_spec={})
        yield
    finally:
        with contextlib.suppress(sa.exc.DBAPIError):
            conn.close()
        engine.dispose()


def _settled(deployment, uuid):
    """Where a build caught by the outage ended: ACTIVE in cell2, or in
    ERROR in cell0 with its reason; None while it has not."""
    where = deployment.where(uuid)
    if where == {'cell2': 'active'} or where == {'cell0': 'error'}:
        return where
    return None


@pytest.mark.faults
def test_a_cell_database_away_leaves_the_other_cell_scheduling(
        tmp_path, rpc_transport):
    """cell2's database is a PostgreSQL cluster of the test's own. Two
    builds only cell2 can take are in flight there (claimed, being
    created) when it stops: they wait for cell2. Meanwhile the scheduler
    leaves cell2 out and every build lands in cell1; a build only cell2
    could take fails with its reason in cell0. Started again, cell2 gets
    the two builds that waited (built once each, nothing leaked), and
    takes new builds."""
    with contextlib.ExitStack() as stack:
        pg = stack.enter_context(postgresql.PostgresCluster())
        deployment = Cells(stack, tmp_path, ['mariadb',
                                             pg.create_database()])
        deployment.start_cell(0, ['c1a'])
        deployment.start_cell(1, ['c2a'], shape=BIG)
        deployment.start_top(FAULT_SUPER_CONF)
        rpc_transport(deployment.cluster)
        stack.callback(rpc.cleanup)
        scheduler = deployment.process('scheduler')

        in_flight = [uuidutils.generate_uuid() for _ in range(2)]
        with creation_held(deployment.cell_urls[1], in_flight):
            deployment.accept(in_flight, vcpus=9)
            deployment.cluster.wait_until(
                lambda: waiting_inserts(pg) == 1, 30,
                'the creation in cell2 to wait')
            pg.stop()
        deployment.cluster.wait_until(
            lambda: 'Cell cell2 is left out of scheduling' in
            scheduler.log(), 60, 'the scheduler to leave cell2 out')
        # Room for 8 vCPUs on each host: four servers of 2 fit in cell1.
        built = deployment.create(vcpus=2, count_=4)
        assert len(built) == 4
        assert {deployment.mapped_cell(uuid) for uuid in built} == {'cell1'}
        states = deployment.states(deployment.cell_urls[0])
        assert {states[uuid][0] for uuid in built} == {'active'}
        # cell1 is full now: with cell2 away there is no host, and the
        # build says so in cell0 (nothing waits for the cell forever).
        [refused] = deployment.create(vcpus=2, count_=1)
        state, fault = deployment.states(deployment.cell0_url)[refused]
        assert (state, fault.startswith('No valid host was found.')) == \
            ('error', True)
        # The two in flight wait for cell2, and say so.
        waiting = ("SELECT count(*) FROM build_requests WHERE owner IS "
                   "NULL AND waiting_cell_uuid = '%s' AND fault LIKE "
                   "'Creating the instance in cell cell2 failed%%'"
                   % CELL_UUIDS[1])
        deployment.wait_rows(deployment.api_url, waiting, 2,
                             'the builds in flight to wait for cell2')
        shown = deployment.cluster.manage('server', 'show', in_flight[0])
        assert 'building' in shown.stdout and 'waiting_for_cell' in \
            shown.stdout, shown.stdout

        pg.start()
        back_at = time.monotonic()
        deployment.cluster.wait_until(
            lambda: 'Cell cell2 answers again' in scheduler.log(), 60,
            'the scheduler to read cell2 again')
        deployment.cluster.wait_until(
            lambda: all(_settled(deployment, uuid) for uuid in in_flight),
            60, 'the builds that waited for cell2')
        ended = {uuid: _settled(deployment, uuid) for uuid in in_flight}
        print('builds in flight to cell2 when it stopped: %s, settled '
              '%.1f s after it started again'
              % (ended, time.monotonic() - back_at))
        for uuid, where in ended.items():
            [(cell, _state)] = where.items()
            assert deployment.mapped_cell(uuid) == cell
            if cell == 'cell0':
                assert deployment.states(deployment.cell0_url)[uuid][1]
        [back] = deployment.create(vcpus=2, count_=1)
        assert deployment.mapped_cell(back) == 'cell2'
        states = deployment.states(deployment.cell_urls[1])
        assert states[back][0] == 'active'
        assert count(deployment.api_url,
                     'SELECT count(*) FROM build_requests') == 0
        for index in (0, 1):
            result = deployment.db_check(index)
            assert result.returncode == 0, result.stdout + result.stderr
