"""The installation guide (docs/source/install/index.rst), end to end.

``tools/install.sh`` installs this checkout into a fresh virtualenv under
a temporary directory (its ``--prefix``, ``--sysconfdir``,
``--localstatedir`` and ``--unitdir`` there, ``--no-user``, and no extras:
SQLite), then the guide's commands run as written, with the temporary
directory in place of ``/opt``, ``/etc`` and ``/var`` and without
``sudo``: each command run here is first looked up in the guide
(:data:`GUIDE`), so that the two cannot drift apart. The daemons are
started with the ``ExecStart=`` lines of the units the script rendered,
with ``NOTIFY_SOCKET`` and ``WATCHDOG_USEC`` as systemd would set them,
on a RabbitMQ virtual host of their own, and with the file system
read-only but for the two directories the units' ``ReadWritePaths=``
name (a mount namespace of their own: what ``ProtectSystem=strict``
does), so that a daemon that writes elsewhere fails the test.

It takes about a minute, most of it pip installing the dependencies
from the local mirror into the new virtualenv.
"""

import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import time

import pytest

from tests.fixtures import notify_socket
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

# A line logged at ERROR (date, time, pid, level).
ERROR_LINE = re.compile(r'^\S+ \S+ \d+ ERROR ', re.MULTILINE)

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUIDE = ROOT / 'docs' / 'source' / 'install' / 'index.rst'
INSTALL = ROOT / 'tools' / 'install.sh'
UNITS = ('gantt-scheduler.service', 'gantt-conductor.service',
         'gantt-compute.service')
INSTALL_TIMEOUT = 600
START_TIMEOUT = 60
STOP_TIMEOUT = 60
# WatchdogSec=2s: the master pings every second.
WATCHDOG_USEC = '2000000'
HOST = 'install-test'


def guide_commands():
    """The shell commands of the guide's ``code-block:: sh`` blocks."""
    commands = []
    in_block = False
    for line in GUIDE.read_text().splitlines():
        if line.startswith('.. code-block::'):
            in_block = line.split('::', 1)[1].strip() == 'sh'
            continue
        if in_block and line and not line.startswith(' '):
            in_block = False
        if in_block and line.strip():
            commands.append(line.strip())
    return commands


def from_guide(command):
    """``command`` as the guide writes it, which must be there."""
    assert command in guide_commands(), (
        'the guide (%s) no longer shows: %s' % (GUIDE, command))
    return command


class Installation:
    """The temporary directory's paths in place of the guide's."""

    def __init__(self, root):
        self.root = root
        self.prefix = root / 'opt' / 'gantt'
        self.sysconfdir = root / 'etc'
        self.localstatedir = root / 'var'
        self.unitdir = root / 'units'
        self.conf = self.sysconfdir / 'gantt' / 'gantt.conf'
        self.statedir = self.localstatedir / 'lib' / 'gantt'

    def install_args(self):
        return ['--prefix', str(self.prefix),
                '--sysconfdir', str(self.sysconfdir),
                '--localstatedir', str(self.localstatedir),
                '--unitdir', str(self.unitdir), '--no-user', '--extras', '']

    def localize(self, command):
        """The guide's ``command`` for this installation: argv."""
        for sudo in ('sudo -u gantt ', 'sudo '):
            if command.startswith(sudo):
                command = command[len(sudo):]
        for path, here in (('/opt/gantt', self.prefix),
                           ('/etc/gantt', self.sysconfdir / 'gantt'),
                           ('/var/', str(self.localstatedir) + '/')):
            command = command.replace(path, str(here))
        argv = shlex.split(command)
        if argv[0] == 'tools/install.sh':
            argv = [str(INSTALL)] + argv[1:] + self.install_args()
        return argv

    def run(self, guide_command, timeout=120, env=None):
        argv = self.localize(from_guide(guide_command))
        return subprocess.run(argv, capture_output=True, text=True,
                              timeout=timeout, env=env or clean_env(),
                              cwd=ROOT)

    def exec_start(self, unit):
        """The unit's ExecStart=, as argv."""
        text = (self.unitdir / unit).read_text()
        (line,) = re.findall(r'^ExecStart=(.*)$', text, re.MULTILINE)
        return shlex.split(line)


def clean_env():
    """An environment that leads nowhere near this test's own virtualenv
    or checkout (no PYTHONPATH, no VIRTUAL_ENV): ``python3`` is the
    system's, as on a fresh Debian machine. pip's own settings pass."""
    env = {name: value for name, value in os.environ.items()
           if name.startswith('PIP_')}
    env.update({'PATH': '/usr/local/sbin:/usr/local/bin:/usr/sbin:'
                        '/usr/bin:/sbin:/bin',
                'HOME': os.environ.get('HOME', '/root'),
                'LANG': 'C.UTF-8'})
    return env


def check(result, what):
    assert result.returncode == 0, '%s exited %d:\n%s\n%s' % (
        what, result.returncode, result.stdout[-3000:], result.stderr[-3000:])
    return result


def run_install(*args):
    return subprocess.run([str(INSTALL)] + list(args), capture_output=True,
                          text=True, timeout=60, env=clean_env())


def test_without_python3_venv_the_script_says_what_to_install(tmp_path):
    # Debian's python3 without python3-venv: no ensurepip.
    shadow = tmp_path / 'shadow'
    shadow.mkdir()
    (shadow / 'ensurepip.py').write_text('raise ImportError("no")\n')
    python = tmp_path / 'python3'
    python.write_text('#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n'
                      % shadow)
    python.chmod(0o755)
    prefix = tmp_path / 'opt'
    result = run_install('--python', str(python), '--prefix', str(prefix),
                         '--no-user')
    assert result.returncode == 1
    assert 'apt-get install python3-venv' in result.stderr
    assert not prefix.exists()


@pytest.mark.parametrize('args, error', [
    (['--prefiks', '/opt/x'], 'unknown option: --prefiks'),
    (['--prefix'], '--prefix needs a value'),
    (['--prefix', 'opt/gantt'], '--prefix must be an absolute path'),
    (['--sysconfdir', '/etc/my gantt'], 'holds a space'),
    (['--extras', 'postgresql;rm'], 'is not a comma-separated list'),
    (['--source', '/'], 'is not a Gantt source tree'),
])
def test_bad_options_are_named(args, error):
    result = run_install(*args, '--no-user')
    assert result.returncode != 0
    assert error in result.stderr, result.stderr


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    """The guide's install, twice (the second is the upgrade: it must
    keep the configuration), and its configuration written."""
    here = Installation(tmp_path_factory.mktemp('install'))
    started = time.monotonic()
    check(here.run('sudo tools/install.sh', timeout=INSTALL_TIMEOUT),
          'install.sh')
    here.install_seconds = time.monotonic() - started
    with cluster_mod.vhost() as transport_url:
        here.conf.write_text(
            '[DEFAULT]\n'
            'transport_url = %s\n'
            'host = %s\n'
            'report_interval = 1\n'
            '[database]\n'
            'connection = sqlite:///%s/gantt.sqlite\n'
            '[scheduler]\n'
            'workers = 2\n'
            'host_state_refresh_interval = 0.2\n'
            '[conductor]\n'
            'workers = 1\n' % (transport_url, HOST, here.statedir))
        check(here.run('sudo tools/install.sh', timeout=INSTALL_TIMEOUT),
              'install.sh, again')
        yield here


def test_the_script_lays_out_the_guide_s_installation(installed):
    venv_bin = installed.prefix / 'venv' / 'bin'
    for binary in ('gantt-scheduler', 'gantt-conductor', 'gantt-compute',
                   'gantt-manage', 'gantt-status'):
        assert os.access(venv_bin / binary, os.X_OK), binary
    mode = lambda path: path.stat().st_mode & 0o777  # noqa: E731
    assert mode(installed.sysconfdir / 'gantt') == 0o750
    assert mode(installed.localstatedir / 'log' / 'gantt') == 0o750
    assert mode(installed.statedir) == 0o750
    # The second run kept the configuration written after the first.
    assert 'host = %s' % HOST in installed.conf.read_text()
    # The installed package runs from the virtualenv, not this checkout.
    result = check(subprocess.run(
        [str(venv_bin / 'python'), '-c',
         'import scheduler, sys; print(scheduler.__file__)'],
        capture_output=True, text=True, env=clean_env(), cwd='/'),
        'python')
    assert result.stdout.startswith(str(installed.prefix))


def test_the_units_point_at_the_installation(installed):
    for unit in UNITS:
        text = (installed.unitdir / unit).read_text()
        assert '@' not in text.replace('$MAINPID', ''), unit
        argv = installed.exec_start(unit)
        assert argv == [str(installed.prefix / 'venv' / 'bin' /
                            unit.replace('.service', '')),
                        '--config-file', str(installed.conf)]
        assert 'ReadWritePaths=%s/log/gantt %s/lib/gantt' % (
            installed.localstatedir, installed.localstatedir) in text
    assert not list(ROOT.glob('etc/systemd/*.service')), \
        'rendered units in the checkout'


def _systemd_analyze():
    path = shutil.which('systemd-analyze')
    assert path, ('systemd-analyze is missing: it comes with Debian\'s '
                  'systemd package (apt-get install systemd)')
    return path


def test_systemd_analyze_verifies_the_rendered_units(installed):
    units = [str(installed.unitdir / unit) for unit in UNITS]
    result = subprocess.run([_systemd_analyze(), 'verify'] + units,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr == '' and result.stdout == '', (
        result.stdout + result.stderr)


def test_systemd_analyze_finds_a_broken_unit(installed, tmp_path):
    # The check above can fail: a misspelt key and a missing binary are
    # named.
    text = (installed.unitdir / UNITS[0]).read_text()
    text = text.replace('ProtectHome=', 'ProtectHomes=').replace(
        str(installed.prefix), str(tmp_path / 'nowhere'))
    broken = tmp_path / UNITS[0]
    broken.write_text(text)
    result = subprocess.run([_systemd_analyze(), 'verify', str(broken)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "Unknown key 'ProtectHomes'" in result.stderr
    assert 'is not executable' in result.stderr


@pytest.fixture
def notifications(tmp_path):
    reader = notify_socket.Notifications(str(tmp_path / 'notify.sock'))
    yield reader
    reader.close()


# What the units' ProtectSystem=strict and ReadWritePaths= do, without
# systemd: in a mount namespace of its own, every file system is
# remounted read-only but the API ones (/dev, /proc, /sys) and the
# directories given as arguments; then NoNewPrivileges=yes. "$@" after
# the directories' count is the command.
SANDBOX = r"""
count=$1; shift
for i in $(seq "$count"); do
    mount --bind "$1" "$1"; writable="$writable $1"; shift
done
findmnt -rn -o TARGET | while read -r target; do
    case " $writable " in *" $target "*) continue ;; esac
    case "$target" in /dev|/dev/*|/proc|/proc/*|/sys|/sys/*) continue ;; esac
    mount -o remount,bind,ro "$target"
done
exec setpriv --no-new-privs "$@"
"""


def sandboxed(installed, argv):
    """``argv`` under the units' file system protection."""
    writable = [str(installed.localstatedir / 'log' / 'gantt'),
                str(installed.statedir)]
    return (['unshare', '--mount', '--propagation', 'private', 'sh', '-ec',
             SANDBOX, 'sandbox', str(len(writable))] + writable + argv)


def test_the_sandbox_leaves_only_the_two_directories_writable(installed):
    probe = 'touch "$1/probe" && rm "$1/probe"'
    for path, writable in ((installed.statedir, True),
                           (installed.localstatedir / 'log' / 'gantt', True),
                           (installed.prefix, False),
                           (installed.sysconfdir / 'gantt', False)):
        result = subprocess.run(
            sandboxed(installed, ['sh', '-c', probe, 'probe', str(path)]),
            capture_output=True, text=True, timeout=60)
        assert (result.returncode == 0) == writable, (path, result.stderr)
        if not writable:
            assert 'Read-only file system' in result.stderr


def start(installed, unit, log_dir, notify_path):
    """Start ``unit``'s ExecStart= as systemd would: its environment
    (HOME is the gantt user's), the notification socket, the watchdog,
    the sandbox."""
    env = dict(clean_env(), NOTIFY_SOCKET=notify_path,
               WATCHDOG_USEC=WATCHDOG_USEC, HOME=str(installed.statedir))
    log = open(log_dir / (unit + '.log'), 'w')
    with log:
        popen = subprocess.Popen(
            sandboxed(installed, installed.exec_start(unit)), stdout=log,
            stderr=subprocess.STDOUT, env=env, cwd='/',
            start_new_session=True)
    return cluster_mod.Process(unit, popen, str(log_dir / (unit + '.log')))


def test_the_installed_daemons_serve_and_stop_cleanly(installed, tmp_path,
                                                      notifications):
    check(installed.run('sudo -u gantt /opt/gantt/venv/bin/gantt-manage '
                        '--config-file /etc/gantt/gantt.conf db sync'),
          'db sync')
    status = installed.run(
        'sudo -u gantt /opt/gantt/venv/bin/gantt-status --config-file '
        '/etc/gantt/gantt.conf upgrade check')
    # 1: warnings (no compute yet); 2 would be a failure.
    assert status.returncode in (0, 1), status.stdout + status.stderr

    processes = []
    try:
        for count, unit in enumerate(('gantt-conductor.service',
                                      'gantt-scheduler.service',
                                      'gantt-compute.service'), 1):
            process = start(installed, unit, tmp_path, notifications.path)
            processes.append(process)
            # The scheduler's two workers each send one.
            assert notifications.wait_for('READY=1', count,
                                          START_TIMEOUT), (
                '%s sent no READY=1:\n%s' % (unit, process.log()[-3000:]))
        assert notifications.wait_for('WATCHDOG=1', 3, 10)

        manage = 'sudo -u gantt /opt/gantt/venv/bin/gantt-manage ' \
            '--config-file /etc/gantt/gantt.conf'
        listed = check(installed.run(manage + ' service list'),
                       'service list')
        for binary in ('gantt-conductor', 'gantt-scheduler'):
            assert binary in listed.stdout, listed.stdout
        # A boot through the installed conductor, scheduler and compute.
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            argv = installed.localize(manage) + ['discover_hosts']
            check(subprocess.run(argv, capture_output=True, text=True,
                                 env=clean_env(), timeout=60),
                  'discover_hosts')
            argv = installed.localize(manage) + [
                'server', 'create', '--vcpus', '1', '--ram', '64',
                '--disk', '1', '--wait', '--timeout', '30']
            booted = subprocess.run(argv, capture_output=True, text=True,
                                    env=clean_env(), timeout=60)
            if booted.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        check(booted, 'server create')
        assert 'ACTIVE' in booted.stdout.upper() and HOST in booted.stdout, \
            booted.stdout

        for process in processes:
            process.signal(signal.SIGTERM)
        for process in processes:
            assert process.popen.wait(STOP_TIMEOUT) == 0, (
                '%s:\n%s' % (process.name, process.log()[-3000:]))
            assert not ERROR_LINE.search(process.log()), \
                process.log()[-3000:]
        # One STOPPING=1 from each master.
        assert notifications.messages.count('STOPPING=1') == 3
    finally:
        for process in processes:
            process.stop()
