"""A nova.conf of Nova 34, every option set, starts Gantt's daemons.

The nova.conf is generated here, from the installed nova package's own
oslo-config-generator namespaces (those of Nova's
``etc/nova/nova-config-generator.conf``), then every option whose sample
shows a value is uncommented. The tests check that:

* every option Gantt shares with Nova has Nova's type, range, choices and
  default, apart from the differences listed (and explained) in
  :data:`DOCUMENTED_DIFFERENCES`;
* every filter and weigher class of Nova is found by its Nova path;
* gantt-conductor and gantt-scheduler start from that nova.conf (plus a
  file of this cluster's broker, database and host), place a server, log
  exactly one warning line for each of the file's options Gantt does not
  read, one deprecation line for each Nova class path, and no traceback.

Run with ``tox -e nova-conf``; skipped without nova 34 (see conftest).
"""

import collections
import json
import pathlib
import re
import subprocess
import sys

from oslo_config import cfg
import pytest

from scheduler import loadables
from tests.functional import cluster as cluster_mod

ROOT = pathlib.Path(__file__).resolve().parents[2]
DUMP_OPTS = str(pathlib.Path(__file__).with_name('dump_opts.py'))

# The namespaces of Nova 34's etc/nova/nova-config-generator.conf (the
# wheel does not ship that file; the namespaces are its entry points).
NOVA_NAMESPACES = (
    'nova.conf', 'oslo.limit', 'oslo.log', 'oslo.messaging', 'oslo.policy',
    'oslo.privsep', 'oslo.service.periodic_task', 'oslo.service.service',
    'oslo.middleware', 'oslo.concurrency', 'oslo.reports',
    'oslo.versionedobjects', 'keystonemiddleware.auth_token', 'osprofiler',
    'os_vif', 'os_brick')

# Options Gantt shares with Nova but sets differently, and why. Each entry
# names the fields that differ; a difference not listed here, or listed
# but gone, fails the test.
DOCUMENTED_DIFFERENCES = {
    '[DEFAULT] control_exchange': (
        {'default'}, "Gantt's RPC exchange is gantt, not nova"),
    '[DEFAULT] default_log_levels': (
        {'default'}, 'the log levels of the libraries each project uses'),
    '[DEFAULT] report_interval': (
        {'min'}, "Gantt's heartbeat needs a positive interval; Nova reads "
                 '0 as no heartbeat'),
    '[DEFAULT] service_down_time': (
        {'min'}, 'Nova raises a too small value at run time; Gantt refuses '
                 'less than 1 when it reads the file'),
    '[DEFAULT] shelved_offload_time': (
        {'min'}, 'Gantt refuses the values below -1 (never) that Nova '
                 'reads as never'),
    '[DEFAULT] sync_power_state_interval': (
        {'default', 'min'}, "gantt-compute's sync of its instances with "
                            'the conductor, every 60 s: it repairs lost '
                            'spawn reports (gantt-compute only)'),
    '[compute] provider_config_location': (
        {'default'}, 'under /etc/gantt (gantt-compute only)'),
    '[conductor] workers': (
        {'min'}, "0 is one per CPU in both; Nova's launcher refuses "
                 'negative counts at start, Gantt when it reads the file'),
    '[filter_scheduler] available_filters': (
        {'default'}, "Gantt's name all_filters; Nova's path is mapped to it"),
    '[filter_scheduler] weight_classes': (
        {'default'}, "Gantt's name all_weighers; Nova's path is mapped to "
                     'it'),
    '[filter_scheduler] enabled_filters': (
        {'default'}, 'Gantt has no Placement API to leave resources and '
                     'zones to: it keeps AvailabilityZoneFilter, RamFilter, '
                     'CoreFilter and DiskFilter'),
}

COMPARED = ('opt', 'type', 'default', 'min', 'max', 'choices')

# An option line of a generated sample: '#name = value' (help text lines
# are '# text').
OPTION_LINE = re.compile(r'^#([A-Za-z0-9_.-]+) =(?: (.*))?$')
SECTION_LINE = re.compile(r'^\[([^\]]+)\]$')

UNREAD = re.compile(r' WARNING scheduler\.unknown_options \[[^\]]*\] '
                    r'Option \[([^\]]+)\] (\S+) \((\S+)\) is not '
                    r'implemented by Gantt and is ignored: ')
DEPRECATED_PATH = re.compile(r"Deprecated: \[filter_scheduler\] (\S+) "
                             r"names Nova's (?:filter|weigher) (\S+);")


def _run_python(*args, timeout=300):
    """Run this interpreter on ``args`` in a process of its own (Nova and
    Gantt cannot register their options in one process); its stdout."""
    result = subprocess.run([sys.executable] + list(args),
                            capture_output=True, text=True, timeout=timeout,
                            cwd=str(ROOT))
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _gantt_namespaces():
    sections = {}
    cfg.ConfigParser(str(ROOT / 'etc' / 'gantt' /
                         'gantt-config-generator.conf'), sections).parse()
    return sections['DEFAULT']['namespace']


@pytest.fixture(scope='module')
def nova_options():
    return json.loads(_run_python(DUMP_OPTS, 'nova.conf',
                                  *NOVA_NAMESPACES))


@pytest.fixture(scope='module')
def gantt_options():
    return json.loads(_run_python(DUMP_OPTS, 'gantt',
                                  *_gantt_namespaces()))


@pytest.fixture(scope='module')
def nova_conf(tmp_path_factory):
    """A full nova.conf: Nova's generated sample with every option that
    shows a value uncommented; its path, and the ``[section] name`` of
    every option set in it."""
    directory = tmp_path_factory.mktemp('nova')
    sample = directory / 'nova.conf.sample'
    args = ['-m', 'oslo_config.generator', '--output-file', str(sample)]
    for namespace in NOVA_NAMESPACES:
        args += ['--namespace', namespace]
    _run_python(*args)
    lines, present, section = [], set(), None
    for line in sample.read_text().splitlines():
        heading = SECTION_LINE.match(line)
        if heading:
            section = heading.group(1)
        option = OPTION_LINE.match(line)
        # '<None>', '<current_hostname>'...: placeholders, not values.
        if option and not (option.group(2) or '').startswith('<'):
            line = line[1:]
            present.add('[%s] %s' % (section, option.group(1)))
        lines.append(line)
    path = directory / 'nova.conf'
    path.write_text('\n'.join(lines) + '\n')
    return str(path), present


def _differences(nova, gantt):
    return {field for field in COMPARED if nova[field] != gantt[field]}


def test_shared_options_have_nova_s_types_and_defaults(nova_options,
                                                       gantt_options):
    shared = sorted(set(nova_options) & set(gantt_options))
    # Gantt's options in Nova's groups: a check that the comparison runs.
    assert len(shared) > 150, shared
    found = {}
    for key in shared:
        fields = _differences(nova_options[key], gantt_options[key])
        if fields:
            found[key] = fields
    details = {key: {field: (nova_options[key][field],
                             gantt_options[key][field])
                     for field in fields}
               for key, fields in found.items()
               if DOCUMENTED_DIFFERENCES.get(key, (None,))[0] != fields}
    assert details == {}, 'undocumented differences (nova, gantt): %s' % (
        json.dumps(details, indent=1, default=str))
    assert set(found) == set(DOCUMENTED_DIFFERENCES)


def test_gantt_has_nova_s_options_under_nova_s_names(nova_options,
                                                     gantt_options):
    """No Nova option is read by Gantt under another section or name
    (Gantt's option having Nova's as a deprecated name)."""
    moved = {old: key for key, option in gantt_options.items()
             for old in option['deprecated']
             if old in nova_options and old != key}
    assert moved == {}


def test_every_nova_filter_and_weigher_path_loads():
    paths = json.loads(_run_python('-c', (
        'import json\n'
        'from nova.scheduler import filters, weights\n'
        'print(json.dumps([[c.__module__ + "." + c.__name__ for c in '
        'handler()] for handler in (filters.all_filters, '
        'weights.all_weighers)]))\n')))
    nova_filters, nova_weighers = paths
    assert len(nova_filters) > 20 and len(nova_weighers) > 10
    for path in nova_filters:
        name = path.rpartition('.')[2]
        (cls,) = loadables.load_filter_classes([path], [name])
        assert cls.__name__ == name, path
    loaded = loadables.load_weigher_classes(nova_weighers)
    assert [cls.__name__ for cls in loaded] == [
        path.rpartition('.')[2] for path in nova_weighers]


class NovaConfCluster(cluster_mod.Cluster):
    """A cluster whose conductor and scheduler read a nova.conf first,
    then the cluster's own file (broker, database) and their host's."""

    nova_conf = None

    def _args(self, binary, name, extra_conf):
        args, conf_path = super()._args(binary, name, extra_conf)
        if binary in ('gantt-conductor', 'gantt-scheduler'):
            args[1:1] = ['--config-file', self.nova_conf]
        return args, conf_path


def _read_by_gantt(gantt_options):
    """Every ``[section] name`` that sets an option Gantt reads in its own
    mode (``[placement]`` is read in Nova mode only)."""
    names = set(gantt_options)
    for option in gantt_options.values():
        names.update(option['deprecated'])
    return {name for name in names if not name.startswith('[placement] ')}


def test_daemons_start_from_a_full_nova_conf(tmp_path, nova_conf,
                                             gantt_options):
    path, present = nova_conf
    # The broker has a virtual host for this cluster, and the daemons an
    # exchange of their own in it.
    with NovaConfCluster(tmp_path, 'sqlite', extra_conf=(
            '[DEFAULT]\ncontrol_exchange = gantt-nova-conf\n')) as cluster:
        cluster.nova_conf = path
        conductor = cluster.start_conductor()
        scheduler = cluster.start_scheduler()
        cluster.start_compute('cmp1')
        cluster.wait_for_computes(['cmp1'])
        cluster.discover_hosts()
        result = cluster.manage('server', 'create', '--vcpus', '1', '--ram',
                                '512', '--disk', '1', '--wait',
                                '--timeout', '60', check=False)
        assert result.returncode == 0, result.stdout + result.stderr
        (instance,) = cluster.instances()
        assert (instance.vm_state, instance.host) == ('active', 'cmp1')
        assert conductor.stop() == 0 and scheduler.stop() == 0
        logs = {process.name: process.log()
                for process in (conductor, scheduler)}

    expected = present - _read_by_gantt(gantt_options)
    # Nova's options that Gantt lacks are most of a nova.conf.
    assert len(expected) > 400
    for name, log in logs.items():
        assert 'Traceback' not in log, (name, log[-5000:])
        warned = collections.Counter(
            '[%s] %s' % match.group(1, 2) for match in UNREAD.finditer(log))
        assert {key for key, count in warned.items() if count > 1} == set()
        assert set(warned) - expected == set(), name
        assert expected - set(warned) == set(), name
        assert {match.group(3) for match in UNREAD.finditer(log)} == {path}
    mapped = collections.Counter(
        match.group(1, 2)
        for match in DEPRECATED_PATH.finditer(logs['scheduler']))
    assert mapped == {
        ('available_filters', 'nova.scheduler.filters.all_filters'): 1,
        ('weight_classes', 'nova.scheduler.weights.all_weighers'): 1}
