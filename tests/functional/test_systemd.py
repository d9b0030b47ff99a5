"""A daemon under systemd's Type=notify: it tells the socket named by
NOTIFY_SOCKET that it is ready once it started, and its unit files say
Type=notify."""

import configparser
import pathlib
import socket

import pytest

from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

UNITS = pathlib.Path(__file__).resolve().parents[2] / 'etc' / 'systemd'


def test_the_scheduler_says_ready_to_systemd(tmp_path, monkeypatch):
    path = str(tmp_path / 'notify')
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(path)
        listener.settimeout(60)
        with cluster_mod.Cluster(tmp_path, 'sqlite') as cluster:
            monkeypatch.setenv('NOTIFY_SOCKET', path)
            scheduler = cluster.start('gantt-scheduler', 'scheduler',
                                      '[DEFAULT]\nhost = scheduler\n')
            monkeypatch.delenv('NOTIFY_SOCKET')
            assert listener.recv(1024) == b'READY=1'
            cluster.wait_for_service('scheduler', 'gantt-scheduler',
                                     scheduler)
            assert scheduler.stop() == 0
            # Said once, by the master; the workers say nothing.
            listener.settimeout(0.5)
            with pytest.raises(socket.timeout):
                listener.recv(1024)


@pytest.mark.parametrize('unit', ['gantt-scheduler.service',
                                  'gantt-conductor.service',
                                  'gantt-compute.service'])
def test_the_units_wait_for_ready(unit):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.read(UNITS / unit)
    assert parser['Service']['Type'] == 'notify'
    assert parser['Service']['NotifyAccess'] == 'main'
    assert parser['Service']['ExecReload'] == '/bin/kill -HUP $MAINPID'
