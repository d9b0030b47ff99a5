"""A real Gantt cluster for functional tests: processes, broker, database.

Each :class:`Cluster` gets a RabbitMQ virtual host of its own (so that
clusters never read each other's queues), a database of its own, and a
directory with the config files and one log file per process. Daemons are
the installed console scripts, started as subprocesses::

    with cluster.Cluster(tmp_path, 'postgresql') as c:
        c.start_conductor()
        c.start_compute('cmp1', vcpus=8, memory_mb=16384, local_gb=200)
        c.start_scheduler(workers=2)
        c.wait_for_computes(['cmp1'])
        c.discover_hosts()
        result = c.manage('server', 'create', '--vcpus', '1', ...)

A test that takes the database or the broker away gives the cluster its
own (``tests/fixtures/postgresql.py``, a RabbitMQ node of its own): with
``db_url`` the cluster uses that database (made by the caller, who drops
it) instead of creating one; with ``transport_url`` it uses that broker
as it is, and makes no virtual host (:meth:`Cluster.queue_depths` then
cannot look at the queues)::

    with postgresql.PostgresCluster() as pg:
        with cluster.Cluster(tmp_path, db_url=pg.create_database()) as c:
            ...
"""

import collections
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import sqlalchemy as sa

from tests.fixtures import databases

RABBIT = 'rabbit://guest:guest@127.0.0.1:5672/'
# Each cluster's virtual host on the shared broker is this and a random
# suffix; it is deleted with the cluster.
VHOST_PREFIX = 'gantt-test-'
BIN_DIR = os.path.dirname(sys.executable)
# The checkout these tests belong to: the daemons run its code, whichever
# checkout the virtualenv's editable install points at.
SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# Schedulers see newly mapped nodes at their next host cache refresh (every
# 0.2s in the base config); discover_hosts() leaves them several.
CACHE_SETTLE_SECONDS = 1.0

# Clusters between __enter__ and __exit__ (conftest shows their logs when a
# test fails).
ACTIVE = []

Exited = collections.namedtuple('Exited', 'returncode stdout stderr seconds')


def _script(name):
    path = os.path.join(BIN_DIR, name)
    if not os.path.exists(path):
        raise RuntimeError('%s is not installed next to %s; install the '
                           'project (pip install -e .)' % (name,
                                                            sys.executable))
    return path


def _rabbitmqctl(*args):
    subprocess.run(['rabbitmqctl', '-q'] + list(args), check=True,
                   stdout=subprocess.DEVNULL, timeout=60)


@contextlib.contextmanager
def vhost():
    """A virtual host of its own on the shared broker, for a test that
    needs a broker but no cluster; yields its transport URL and deletes
    it afterwards."""
    name = VHOST_PREFIX + uuid.uuid4().hex[:12]
    _rabbitmqctl('add_vhost', name)
    try:
        _rabbitmqctl('set_permissions', '-p', name, 'guest', '.*', '.*',
                     '.*')
        yield RABBIT + name
    finally:
        _rabbitmqctl('delete_vhost', name)


def process_table():
    """``(pid, parent pid, command name, CPU seconds)`` of every process
    of the machine that can be read, from ``/proc/PID/stat`` (user and
    system time, in clock ticks)."""
    ticks = os.sysconf('SC_CLK_TCK')
    table = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as stat:
                text = stat.read()
        except OSError:     # ended meanwhile, or not ours to read
            continue
        # The command name is in parentheses and may hold any character.
        name = text[text.index('(') + 1:text.rindex(')')]
        fields = text[text.rindex(')') + 2:].split()
        table.append((int(entry), int(fields[1]), name,
                      (int(fields[11]) + int(fields[12])) / ticks))
    return table


class Process:
    """One daemon started by a :class:`Cluster`, in a session of its own
    (so that its workers can be found and killed with it)."""

    def __init__(self, name, popen, log_path, conf_path=None):
        self.name = name
        self.popen = popen
        self.log_path = log_path
        # The process's own config file (after the cluster's), if any.
        self.conf_path = conf_path

    def log(self):
        with open(self.log_path, errors='replace') as log:
            return log.read()

    def alive(self):
        return self.popen.poll() is None

    def signal(self, signum):
        self.popen.send_signal(signum)

    def stop(self, timeout=30):
        """SIGTERM and wait; SIGKILL the process group if it lingers.

        Returns the exit code. Workers left behind by a leader that
        exited are killed too.
        """
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill_group()
                self.popen.wait(10)
        self.kill_group()
        return self.popen.returncode

    def kill_group(self):
        """SIGKILL whatever is left of the process's session."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def signal_group(self, signum):
        """Send ``signum`` to every process of the session (SIGSTOP and
        SIGCONT freeze and thaw a daemon with its workers)."""
        os.killpg(self.popen.pid, signum)


class Cluster:
    def __init__(self, workdir, backend=None, eventlet=False, extra_conf='',
                 db_url=None, transport_url=None):
        """``backend`` names the database server to create a database on
        ('sqlite', 'postgresql', 'mariadb'); or give ``db_url``, an empty
        database of the caller's. ``transport_url``: a broker of the
        caller's instead of a new vhost on the shared RabbitMQ."""
        if backend is None and db_url is None:
            raise ValueError('a Cluster needs a backend or a db_url')
        self.workdir = str(workdir)
        self.backend = backend or databases.backend_of(db_url)
        self.eventlet = eventlet
        self.vhost = None
        if transport_url is None:
            self.vhost = VHOST_PREFIX + uuid.uuid4().hex[:12]
            transport_url = RABBIT + self.vhost
        self.transport_url = transport_url
        self.db_url = db_url
        # Databases this cluster created, and therefore drops.
        self._own_database = db_url is None
        self.processes = []
        self.extra_conf = extra_conf
        self._engine = None
        self._vhost_made = False

    # -- set-up and tear-down ----------------------------------------------

    def __enter__(self):
        if self.vhost is not None:
            _rabbitmqctl('add_vhost', self.vhost)
            self._vhost_made = True
        try:
            if self.vhost is not None:
                _rabbitmqctl('set_permissions', '-p', self.vhost, 'guest',
                             '.*', '.*', '.*')
            if self._own_database:
                self.db_url = databases.create_database(self.backend)
            self.conf_path = self.write_conf('gantt.conf', self._base_conf())
            self.manage('db', 'sync')
        except BaseException:
            self.__exit__(None, None, None)
            raise
        ACTIVE.append(self)
        return self

    def __exit__(self, *exc_info):
        if self in ACTIVE:
            ACTIVE.remove(self)
        try:
            self.stop_all()
        finally:
            if self._engine is not None:
                self._engine.dispose()
            if self.db_url and self._own_database:
                databases.drop_database(self.db_url)
            if self._vhost_made:
                _rabbitmqctl('delete_vhost', self.vhost)

    def _base_conf(self):
        return textwrap.dedent('''\
            [DEFAULT]
            transport_url = %(transport)s
            report_interval = 1
            service_down_time = 10
            rpc_response_timeout = 30
            debug = true

            [database]
            connection = %(db)s

            [scheduler]
            workers = 1
            host_state_refresh_interval = 0.2

            [conductor]
            workers = 1
            ''') % {'transport': self.transport_url, 'db': self.db_url} + \
            textwrap.dedent(self.extra_conf)

    def write_conf(self, name, text):
        path = os.path.join(self.workdir, name)
        with open(path, 'w') as conf_file:
            conf_file.write(text)
        return path

    def env(self):
        env = dict(os.environ)
        env['PYTHONPATH'] = os.pathsep.join(
            [SOURCE_ROOT] + [path for path in env.get('PYTHONPATH', '').split(
                os.pathsep) if path])
        env.pop('GANTT_USE_EVENTLET', None)
        if self.eventlet:
            env['GANTT_USE_EVENTLET'] = '1'
        return env

    # -- processes ------------------------------------------------------------

    def _args(self, binary, name, extra_conf):
        args = [_script(binary), '--config-file', self.conf_path]
        conf_path = None
        if extra_conf:
            conf_path = self.write_conf(name + '.conf',
                                        textwrap.dedent(extra_conf))
            args += ['--config-file', conf_path]
        return args, conf_path

    def start(self, binary, name, extra_conf='', env=None):
        """Start ``binary``; ``env``: variables added to its environment
        (e.g. ``NOTIFY_SOCKET``)."""
        args, conf_path = self._args(binary, name, extra_conf)
        log_path = os.path.join(self.workdir, name + '.log')
        with open(log_path, 'w') as log:
            popen = subprocess.Popen(args, stdout=log,
                                     stderr=subprocess.STDOUT,
                                     env=dict(self.env(), **(env or {})),
                                     start_new_session=True)
        process = Process(name, popen, log_path, conf_path)
        self.processes.append(process)
        return process

    def run_to_exit(self, binary, name, extra_conf='', timeout=60):
        """Run a daemon that is expected to exit by itself (a start-up
        error); an :data:`Exited` with its output apart.

        A daemon still running after ``timeout`` seconds is killed, with
        its whole session, and reported as an AssertionError.
        """
        args, _conf_path = self._args(binary, name, extra_conf)
        started = time.monotonic()
        popen = subprocess.Popen(args, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True,
                                 env=self.env(), start_new_session=True)
        try:
            stdout, stderr = popen.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            Process(name, popen, None).kill_group()
            stdout, stderr = popen.communicate()
            raise AssertionError('%s did not exit within %ss:\n%s\n%s'
                                 % (binary, timeout, stdout[-2000:],
                                    stderr[-2000:]))
        finally:
            Process(name, popen, None).kill_group()
        return Exited(popen.returncode, stdout, stderr,
                      time.monotonic() - started)

    def start_conductor(self, name='conductor'):
        process = self.start('gantt-conductor', name,
                             '[DEFAULT]\nhost = %s\n' % name)
        self.wait_for_service(name, 'gantt-conductor', process)
        return process

    def start_conductor_with_conf(self, name='conductor', extra_conf=''):
        """A conductor with options of its own (``extra_conf``, in the
        config file read after the cluster's)."""
        process = self.start('gantt-conductor', name,
                             '[DEFAULT]\nhost = %s\n' % name
                             + textwrap.dedent(extra_conf))
        self.wait_for_service(name, 'gantt-conductor', process)
        return process

    def start_scheduler(self, name='scheduler', workers=1, extra_conf='',
                        env=None):
        process = self.start(
            'gantt-scheduler', name,
            '[DEFAULT]\nhost = %s\n[scheduler]\nworkers = %d\n' % (
                name, workers) + textwrap.dedent(extra_conf), env=env)
        self.wait_for_service(name, 'gantt-scheduler', process)
        return process

    def start_compute(self, host, vcpus=8, memory_mb=16384, local_gb=200,
                      extra_conf=''):
        conf_text = textwrap.dedent('''\
            [DEFAULT]
            host = %s
            reserved_host_memory_mb = 0
            [fake_virt]
            vcpus = %d
            memory_mb = %d
            local_gb = %d
            ''') % (host, vcpus, memory_mb, local_gb)
        return self.start('gantt-compute', host,
                          conf_text + textwrap.dedent(extra_conf))

    def stop_all(self, timeout=30):
        """SIGTERM every process at once, then wait for each (an idle
        oslo.messaging listener takes up to 5s to stop); SIGKILL what is
        left after ``timeout`` seconds."""
        for process in self.processes:
            if process.alive():
                process.signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in self.processes:
            try:
                process.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            process.kill_group()
            process.popen.wait(10)

    def logs(self):
        """``{process name: log text}`` of every process started."""
        return {process.name: process.log() for process in self.processes}

    def manage(self, *args, check=True, timeout=180):
        """Run gantt-manage with the cluster's config; CompletedProcess."""
        result = subprocess.run(
            [_script('gantt-manage'), '--config-file', self.conf_path]
            + list(args), capture_output=True, text=True, env=self.env(),
            timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError('gantt-manage %s exited %d:\n%s\n%s' % (
                ' '.join(args), result.returncode, result.stdout,
                result.stderr))
        return result

    def discover_hosts(self):
        """``gantt-manage discover_hosts``, then time for the schedulers'
        host caches to see the nodes it mapped."""
        result = self.manage('discover_hosts')
        time.sleep(CACHE_SETTLE_SECONDS)
        return result

    def queue_depths(self):
        """``{queue name: messages}`` in the cluster's vhost: those ready
        and those delivered but not yet acknowledged (the shared broker
        only: not with a ``transport_url`` of the caller's)."""
        if self.vhost is None:
            raise RuntimeError('queue_depths() reads the shared broker; '
                               'this cluster runs on %s' % self.transport_url)
        result = subprocess.run(
            ['rabbitmqctl', '-q', 'list_queues', '-p', self.vhost,
             '--no-table-headers', 'name', 'messages'],
            check=True, capture_output=True, text=True, timeout=60)
        depths = {}
        for line in result.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                depths[parts[0]] = int(parts[1])
        return depths

    # -- waiting and reading the database -------------------------------------

    @property
    def engine(self):
        if self._engine is None:
            # pre-ping: the tests' connections survive a database restart.
            self._engine = sa.create_engine(self.db_url, pool_pre_ping=True)
        return self._engine

    def query(self, sql, **params):
        with self.engine.connect() as conn:
            return conn.execute(sa.text(sql), params).all()

    def wait_until(self, predicate, timeout, what, process=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            if process is not None and not process.alive():
                raise AssertionError('%s exited with %s while waiting for '
                                     '%s:\n%s' % (process.name,
                                                  process.popen.returncode,
                                                  what, process.log()[-3000:]))
            time.sleep(0.2)
        raise AssertionError('timed out after %ss waiting for %s'
                             % (timeout, what))

    def wait_for_service(self, host, binary, process=None, timeout=60):
        self.wait_until(
            lambda: self.query('SELECT id FROM services WHERE host = :h AND '
                               '"binary" = :b'.replace('"', self._quote()),
                               h=host, b=binary),
            timeout, '%s on %s to report' % (binary, host), process)

    def _quote(self):
        return '`' if self.backend == 'mariadb' else '"'

    def wait_for_computes(self, hosts, timeout=60):
        wanted = set(hosts)
        self.wait_until(
            lambda: wanted <= {row.host for row in self.query(
                'SELECT host FROM compute_nodes')},
            timeout, 'computes %s to report inventory' % sorted(wanted))

    def instances(self):
        return self.query('SELECT uuid, host, node, vm_state, fault, flavor '
                          'FROM instances')

    def allocations(self):
        """Allocation rows with the host and node they are on."""
        return self.query(
            'SELECT a.consumer_uuid, a.vcpus, a.memory_mb, a.disk_gb, '
            'n.host, n.hypervisor_hostname AS node FROM allocations a '
            'JOIN compute_nodes n ON n.id = a.compute_node_id')

    def node_usage(self):
        """``{host: row}`` with capacity and usage columns."""
        rows = self.query(
            'SELECT host, vcpus, memory_mb, local_gb, vcpus_used, '
            'memory_mb_used, local_gb_used FROM compute_nodes')
        return {row.host: row for row in rows}
