"""The unit files: Type=notify (test_sd_notify.py checks what a daemon
sends), any process may notify, SIGHUP reloads."""

import configparser
import pathlib

import pytest


pytestmark = pytest.mark.functional

UNITS = pathlib.Path(__file__).resolve().parents[2] / 'etc' / 'systemd'


@pytest.mark.parametrize('unit', ['gantt-scheduler.service',
                                  'gantt-conductor.service',
                                  'gantt-compute.service'])
def test_the_units_wait_for_ready(unit):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.read(UNITS / unit)
    assert parser['Service']['Type'] == 'notify'
    assert parser['Service']['NotifyAccess'] == 'all'
    assert parser['Service']['ExecReload'] == '/bin/kill -HUP $MAINPID'
