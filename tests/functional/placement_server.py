"""The real Placement over HTTP, in a process of its own.

Nova mode's daemons reach Placement as Nova's services do, over HTTP with
``[placement] auth_type = admin_token``: this serves Placement's WSGI
application (``placement.wsgi.api``) with the standard library's
threaded WSGI server on 127.0.0.1 (a free port), ``[api] auth_strategy =
noauth2`` and a SQLite file of its own::

    with placement_server.serving(tmp_path) as server:
        server.client.post('/resource_providers', {'name': 'cmp1'})
        conf_text = server.conf_section()   # a [placement] section

The process is this fixture's alone and is stopped by its pid.
"""

import contextlib
import os
import subprocess
import sys
import time

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from tests.functional import placement_harness

_SERVE = '''
import socketserver
import sys
from wsgiref import simple_server


class Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


from placement.wsgi import api

server = simple_server.make_server('127.0.0.1', 0, api.application,
                                   server_class=Server, handler_class=Quiet)
with open(sys.argv[1], 'w') as stream:
    stream.write(str(server.server_port))
server.serve_forever()
'''

START_TIMEOUT = 60


class Server:
    def __init__(self, url, log_path):
        self.url = url
        self.log_path = log_path
        session = ks_session.Session(
            auth=token_endpoint.Token(url, 'admin'))
        self.client = placement_harness.Client(
            ks_adapter.Adapter(session, endpoint_override=url))

    def conf_section(self):
        """nova.conf's ``[placement]`` for this Placement."""
        return ('[placement]\nauth_type = admin_token\nendpoint = %s\n'
                'token = admin\n' % self.url)


@contextlib.contextmanager
def serving(directory, connection=None, extra=''):
    """A :class:`Server` of a new Placement whose files are in
    ``directory``; its database a SQLite file there, or ``connection``
    (an empty database of the caller's); ``extra``: more of its
    placement.conf."""
    conf_dir = directory / 'placement-etc'
    conf_dir.mkdir(parents=True, exist_ok=True)
    connection = connection or 'sqlite:///%s' % (
        directory / 'placement.sqlite')
    (conf_dir / 'placement.conf').write_text(
        '[api]\nauth_strategy = noauth2\n'
        '[placement_database]\nconnection = %s\n'
        'sync_on_startup = true\n' % connection + extra)
    port_file = directory / 'placement.port'
    log_path = directory / 'placement.log'
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(conf_dir))
    with open(log_path, 'wb') as log:
        process = subprocess.Popen(
            [sys.executable, '-c', _SERVE, str(port_file)],
            stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not port_file.exists() or not port_file.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError('Placement did not start: %s'
                                   % log_path.read_text()[-3000:])
            time.sleep(0.1)
        server = Server('http://127.0.0.1:%s' % port_file.read_text(),
                        log_path)
        server.client.get('/')
        yield server
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
