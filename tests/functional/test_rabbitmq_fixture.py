"""The RabbitMQ node fixture itself: its own ports and files, restarts that
keep data, crashes; the shared broker left alone. (Clusters of three are
built by the quorum-queue fault test, which fails if they do not form.)"""

import os
import subprocess

import pytest

from tests.fixtures import rabbitmq
from tests.functional import cluster

pytestmark = pytest.mark.functional


def shared_broker_vhosts():
    """The shared broker's virtual hosts, less the clusters' own: tests
    running at the same time (pytest-xdist) add and delete those."""
    names = subprocess.run(['rabbitmqctl', '-q', 'list_vhosts'], check=True,
                           capture_output=True, text=True,
                           timeout=60).stdout.split()
    return [name for name in names
            if not name.startswith(cluster.VHOST_PREFIX)]


def test_the_shared_node_name_is_refused(tmp_path):
    for name in rabbitmq.shared_node_names() | {'rabbit@elsewhere'}:
        with pytest.raises(ValueError, match='shared node'):
            rabbitmq.Node(tmp_path / 'refused', name=name)


def test_stop_start_and_kill_keep_data(tmp_path):
    shared_before = shared_broker_vhosts()
    with rabbitmq.node(tmp_path) as mq:
        assert mq.port != 5672 and rabbitmq.port_open(mq.port)
        mq.ctl('add_vhost', 'kept')
        assert 'kept' not in shared_broker_vhosts()

        mq.stop()
        assert not mq.alive() and not rabbitmq.port_open(mq.port)
        mq.start()
        assert rabbitmq.port_open(mq.port)
        assert 'kept' in mq.ctl('list_vhosts').stdout.split()

        pid = mq.pid
        mq.kill()
        assert not mq.alive() and not rabbitmq.port_open(mq.port)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        mq.start()
        assert 'kept' in mq.ctl('list_vhosts').stdout.split()
        basedir = mq.basedir
    assert not os.path.exists(basedir)
    # The shared broker lost nothing and never saw the node's vhost (other
    # users of the shared broker may add vhosts of their own meanwhile).
    shared_after = shared_broker_vhosts()
    assert set(shared_before) <= set(shared_after)
    assert 'kept' not in shared_after
