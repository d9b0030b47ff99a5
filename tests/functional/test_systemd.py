"""The unit templates (etc/systemd/*.service.in): Type=notify
(test_sd_notify.py checks what a daemon sends), any process may notify,
a watchdog, SIGHUP reloads, and the sandbox the install guide describes.
test_install.py renders them with tools/install.sh and has
``systemd-analyze verify`` check the result."""

import configparser
import pathlib

import pytest


pytestmark = pytest.mark.functional

UNITS = pathlib.Path(__file__).resolve().parents[2] / 'etc' / 'systemd'
TEMPLATES = ['gantt-scheduler.service.in', 'gantt-conductor.service.in',
             'gantt-compute.service.in']

HARDENING = {
    'ProtectSystem': 'strict',
    'ReadWritePaths': '@LOGDIR@ @STATEDIR@',
    'ProtectHome': 'yes',
    'PrivateTmp': 'yes',
    'PrivateDevices': 'yes',
    'NoNewPrivileges': 'yes',
    'ProtectKernelTunables': 'yes',
    'ProtectKernelModules': 'yes',
    'ProtectControlGroups': 'yes',
    'RestrictSUIDSGID': 'yes',
    'LockPersonality': 'yes',
    'RestrictRealtime': 'yes',
    'RestrictNamespaces': 'yes',
    'SystemCallArchitectures': 'native',
    'CapabilityBoundingSet': '',
    'UMask': '0027',
}


def service_section(template):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read(UNITS / template)
    return parser['Service']


def test_only_templates_are_kept():
    assert sorted(path.name for path in UNITS.iterdir()) == sorted(TEMPLATES)


@pytest.mark.parametrize('template', TEMPLATES)
def test_the_units_wait_for_ready_and_watch(template):
    service = service_section(template)
    assert service['Type'] == 'notify'
    assert service['NotifyAccess'] == 'all'
    assert service['WatchdogSec'] == '60s'
    assert service['Restart'] == 'on-failure'
    assert service['ExecReload'] == '/bin/kill -HUP $MAINPID'
    binary = template.replace('.service.in', '')
    assert service['ExecStart'] == (
        '@BINDIR@/%s --config-file @SYSCONFDIR@/gantt/gantt.conf' % binary)


@pytest.mark.parametrize('template', TEMPLATES)
def test_the_units_run_in_a_sandbox(template):
    service = service_section(template)
    assert {key: service.get(key) for key in HARDENING} == HARDENING
    assert (service['User'], service['Group']) == ('gantt', 'gantt')
