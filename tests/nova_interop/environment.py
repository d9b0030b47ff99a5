"""A Nova 34 deployment on this machine, of real parts, for one test run.

* RabbitMQ: a virtual host of its own on the shared broker;
* PostgreSQL: scratch databases of its own (Nova's API, cell0, cell1, and
  Placement's), dropped at the end;
* placement-api: Placement's WSGI application served on 127.0.0.1
  (``tests/functional/placement_server.py``), ``auth_strategy = noauth2``;
* Nova's databases made by Nova's own ``nova-manage api_db sync``,
  ``cell_v2 map_cell0``, ``cell_v2 create_cell`` and ``db sync``;
* Nova's own nova-conductor and two nova-compute (``fake.FakeDriver``),
  which report their providers to Placement; ``nova-manage cell_v2
  discover_hosts`` maps them;
* the scheduler under test, started and stopped by :meth:`start_scheduler`:
  Nova's nova-scheduler, or gantt-scheduler in Nova mode from the same
  nova.conf.

Neutron is not part of it: the servers boot with no network (``none``),
and the computes' teardown of a deleted server lists the server's ports
and networks in Neutron, which a stand-in on 127.0.0.1 answers with none
(:class:`NoPorts`).

Every process is this module's and is stopped by its pid.
"""

import contextlib
import http.server
import json
import os
import signal
import socketserver
import subprocess
import sys
import textwrap
import threading
import time

from tests.fixtures import databases
from tests.functional import cluster as cluster_mod
from tests.functional import placement_server

BIN = os.path.dirname(sys.executable)
NOVA_SIDE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         'nova_side.py')
COMPUTES = ('cmp1', 'cmp2')
QUARTER_MB = 199000
PLACEMENT_NO_INNER_RETRY = ('[placement]\n'
                            'allocation_conflict_retry_count = 1\n')
START_TIMEOUT = 120


class NoPorts(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """Neutron's answer to a server without network: an empty list of
    whatever is asked (``GET /v2.0/ports``, ``/v2.0/networks``...), the
    only calls a fake compute makes for a server booted with network
    ``none``."""

    daemon_threads = True

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            # /v2.0/ports, /v2.0/networks, /v2.0/extensions...: none.
            collection = self.path.split('?')[0].rstrip('/').rsplit(
                '/', 1)[-1].replace('.json', '')
            data = json.dumps({collection: []}).encode()
            self.send_response(200)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    def __init__(self):
        super().__init__(('127.0.0.1', 0), self.Handler)
        self.url = 'http://127.0.0.1:%d' % self.server_port


class Process:
    def __init__(self, name, args, log_path):
        self.name = name
        self.log_path = log_path
        with open(log_path, 'w') as log:
            self.popen = subprocess.Popen(args, stdout=log,
                                          stderr=subprocess.STDOUT,
                                          start_new_session=True)

    def alive(self):
        return self.popen.poll() is None

    def log(self):
        with open(self.log_path, errors='replace') as stream:
            return stream.read()

    def stop(self, timeout=30):
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        return self.popen.returncode


class Environment:
    def __init__(self, directory):
        self.directory = directory
        self.processes = []
        self.scheduler = None
        self.schedulers = []
        self._stack = contextlib.ExitStack()

    # -- set-up ---------------------------------------------------------------

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info):
        for process in reversed(self.processes):
            process.stop()
        self._stack.close()

    def _database(self):
        url = databases.create_database('postgresql')
        self._stack.callback(databases.drop_database, url)
        return url

    def _start(self):
        directory = self.directory
        self.transport_url = self._stack.enter_context(cluster_mod.vhost())
        self.vhost = self.transport_url.rsplit('/', 1)[1]
        api_url, cell0_url, cell1_url, placement_url = (
            self._database() for _ in range(4))
        # Placement retries a provider generation conflict inside the
        # request's own transaction, whose reads may predate the other
        # writer's: concurrent claims then overfill a provider (seen here
        # on PostgreSQL and MariaDB). Without that retry the conflict
        # reaches the scheduler, which claims again from fresh state.
        self.placement = self._stack.enter_context(
            placement_server.serving(
                directory, placement_url,
                extra=PLACEMENT_NO_INNER_RETRY))
        neutron = NoPorts()
        threading.Thread(target=neutron.serve_forever, daemon=True).start()
        self._stack.callback(neutron.server_close)
        self._stack.callback(neutron.shutdown)
        (directory / 'state').mkdir(exist_ok=True)
        self.nova_conf = directory / 'nova.conf'
        self.nova_conf.write_text(textwrap.dedent('''\
            [DEFAULT]
            transport_url = %(transport)s
            state_path = %(state)s
            compute_driver = fake.FakeDriver
            debug = true
            [api_database]
            connection = %(api)s
            [database]
            connection = %(cell1)s
            [neutron]
            auth_type = admin_token
            endpoint = %(neutron)s
            token = admin
            [oslo_concurrency]
            lock_path = %(state)s
            [oslo_messaging_notifications]
            driver = noop
            [quota]
            recheck_quota = false
            # The NoValidHost scenario leaves an instance of 100,000
            # cores in cell0, which counts in the project's quota.
            cores = -1
            ram = -1
            instances = -1
            [conductor]
            workers = 1
            [scheduler]
            workers = 1
            ''') % {'transport': self.transport_url,
                    'state': directory / 'state', 'api': api_url,
                    'cell1': cell1_url, 'neutron': neutron.url}
            + self.placement.conf_section())
        self.manage('api_db', 'sync')
        self.manage('cell_v2', 'map_cell0', '--database_connection',
                    cell0_url)
        self.manage('cell_v2', 'create_cell', '--name', 'cell1',
                    '--database_connection', cell1_url,
                    '--transport-url', self.transport_url)
        self.manage('db', 'sync')
        self.start('nova-conductor', 'conductor')
        for host in COMPUTES:
            extra = directory / ('%s.conf' % host)
            extra.write_text('[DEFAULT]\nhost = %s\n' % host)
            self.start('nova-compute', host, extra)
        self.wait_until(lambda: len(self.placement.client.get(
            '/resource_providers')['resource_providers']) == len(COMPUTES),
            'the computes report their providers')
        self.manage('cell_v2', 'discover_hosts')
        self.nova_side('flavor', 'm1.tiny', 1, 512, 1)
        self.nova_side('flavor', 'm1.small', 2, 1024, 1)
        # Four fit on a fake compute's 800,000 MB (512 reserved).
        self.nova_side('flavor', 'm1.quarter', 1, QUARTER_MB, 1)
        self.nova_side('flavor', 'm1.huge', 100000, 512, 1)

    # -- processes ------------------------------------------------------------

    def start(self, binary, name, extra_conf=None):
        args = [os.path.join(BIN, binary), '--config-file',
                str(self.nova_conf)]
        if extra_conf is not None:
            args += ['--config-file', str(extra_conf)]
        process = Process(name, args, self.directory / ('%s.log' % name))
        self.processes.append(process)
        return process

    def manage(self, *args, check=True):
        result = subprocess.run(
            [os.path.join(BIN, 'nova-manage'), '--config-file',
             str(self.nova_conf)] + [str(arg) for arg in args],
            capture_output=True, text=True, timeout=300)
        if check and result.returncode != 0:
            raise RuntimeError('nova-manage %s: %s %s' % (
                ' '.join(map(str, args)), result.stdout, result.stderr))
        return result

    def nova_side(self, *args, timeout=None):
        """Run one command of nova_side.py; its JSON answer."""
        command = [sys.executable, NOVA_SIDE, '--config-file',
                   str(self.nova_conf)]
        if timeout is not None:
            command += ['--timeout', str(timeout)]
        result = subprocess.run(command + [str(arg) for arg in args],
                                capture_output=True, text=True,
                                timeout=600)
        if result.returncode != 0:
            raise RuntimeError('nova_side %s: %s' % (
                ' '.join(map(str, args)), result.stderr[-4000:]))
        return json.loads(result.stdout.strip().splitlines()[-1])

    def wait_until(self, predicate, what, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while not predicate():
            for process in self.processes:
                if not process.alive():
                    raise RuntimeError('%s exited while waiting until %s: '
                                       '%s' % (process.name, what,
                                               process.log()[-4000:]))
            if time.monotonic() > deadline:
                raise RuntimeError('timed out waiting until %s' % what)
            time.sleep(0.5)

    def _consumers(self, queue):
        result = subprocess.run(
            ['rabbitmqctl', '-q', 'list_queues', '-p', self.vhost, 'name',
             'consumers'], capture_output=True, text=True, timeout=60)
        for line in result.stdout.splitlines():
            fields = line.split()
            if len(fields) == 2 and fields[0] == queue:
                return int(fields[1])
        return 0

    def _scheduler_process(self, kind, number):
        name = '%s-scheduler-%d' % (kind, number)
        extra = self.directory / ('%s.conf' % name)
        if kind == 'nova':
            extra.write_text('[DEFAULT]\nhost = %s\n' % name)
            return self.start('nova-scheduler', name, extra)
        extra.write_text(textwrap.dedent('''\
            [DEFAULT]
            control_exchange = nova
            host = %s
            [scheduler]
            backend = nova
            [nova_backend]
            sync_interval = 1
            ''') % name)
        return self.start('gantt-scheduler', name, extra)

    def start_scheduler(self, kind, count=1):
        """``count`` of Nova's nova-scheduler, or of gantt-scheduler in
        Nova mode (the same nova.conf, then Gantt's file), on the same
        queue; once each consumes it."""
        for number in range(1, count + 1):
            process = self._scheduler_process(kind, number)
            self.schedulers.append(process)
            self.wait_until(lambda at_least=number: self._consumers(
                                'scheduler') >= at_least,
                            '%s consumes its queue' % process.name)
        self.scheduler = self.schedulers[0]
        return self.scheduler

    def stop_scheduler(self):
        for process in self.schedulers:
            process.stop()
            self.processes.remove(process)
        self.schedulers = []
        self.scheduler = None

    # -- Placement ------------------------------------------------------------

    def allocations(self, consumer):
        return self.placement.client.get(
            '/allocations/%s' % consumer)['allocations']

    def providers(self):
        return {provider['name']: provider['uuid'] for provider in
                self.placement.client.get(
                    '/resource_providers')['resource_providers']}
