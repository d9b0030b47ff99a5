"""systemd notification (``Type=notify`` units) from a real gantt-scheduler.

The test binds the Unix datagram socket systemd would, passes it in
``NOTIFY_SOCKET``, and reads what the daemon sends: ``READY=1`` once, only
after the RPC server consumes (the log says "is ready" and a call is
answered), and ``STOPPING=1`` when SIGTERM reaches the master.
"""

import signal
import socket

from oslo_utils import uuidutils
import pytest

from scheduler import context as gantt_context
from scheduler.objects import request_spec
from scheduler import rpcapi
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

HOST = 'cmp-notify'


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    with cluster_mod.Cluster(tmp_path_factory.mktemp('notify'),
                             'postgresql') as running:
        running.start_conductor()
        running.start_compute(HOST)
        running.wait_for_computes([HOST])
        running.discover_hosts()
        yield running


@pytest.fixture
def notify_socket(tmp_path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = str(tmp_path / 'notify.sock')
    sock.bind(path)
    yield sock, path
    sock.close()


def receive(sock, timeout):
    """The next datagram (text), or None after ``timeout`` seconds."""
    sock.settimeout(timeout)
    try:
        return sock.recv(4096).decode()
    except socket.timeout:
        return None


@pytest.mark.parametrize('eventlet', [False, True],
                         ids=['threading', 'eventlet'])
def test_ready_once_serving_and_stopping_on_sigterm(cluster, rpc_transport,
                                                    notify_socket, eventlet):
    sock, path = notify_socket
    rpc_transport(cluster, rpc_response_timeout=20)
    cluster.eventlet = eventlet
    try:
        process = cluster.start(
            'gantt-scheduler', 'sched-notify-%s' % eventlet,
            '[DEFAULT]\nhost = sched-notify\n', env={'NOTIFY_SOCKET': path})
    finally:
        cluster.eventlet = False
    try:
        assert receive(sock, 60) == 'READY=1'
        assert 'gantt-scheduler on sched-notify is ready' in process.log()
        spec = request_spec.RequestSpec(
            num_instances=1, flavor=request_spec.Flavor(
                name='tiny', vcpus=1, memory_mb=1, root_gb=0))
        selections = rpcapi.SchedulerAPI().select_destinations(
            gantt_context.get_admin_context(), spec,
            [uuidutils.generate_uuid()])
        assert selections[0][0].service_host == HOST
        # Nothing else: the libraries' own (early) READY=1 is not sent.
        assert receive(sock, 1) is None

        process.signal(signal.SIGTERM)
        assert receive(sock, 10) == 'STOPPING=1'
        # At the start of the shutdown: the workers are still draining.
        assert process.alive()
        assert process.popen.wait(60) == 0
        assert receive(sock, 0.5) is None
    finally:
        process.stop()
