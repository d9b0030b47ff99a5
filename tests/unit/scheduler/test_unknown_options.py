"""Every option of the config files that Gantt does not read gets one
warning line at start-up; those it reads (its own, the libraries') none."""

import logging
import pathlib

from oslo_config import cfg
import pytest

from scheduler import unknown_options

ROOT = pathlib.Path(__file__).resolve().parents[3]

NOVA_CONF = """\
[DEFAULT]
transport_url = rabbit://guest:guest@127.0.0.1:5672/
baseapi = compute
debug = true
scheduler_host_manager = host_manager
[workarounds]
disable_fallback_pcpu_query = true
never_download_image_if_on_rbd = true
[filter_scheduler]
enabled_filter = ComputeFilter
weight_classes = nova.scheduler.weights.all_weighers
[oslo_messaging_kafka]
producer_batch_size = 16384
[Placement]
auth_url = http://keystone/v3
[database]
connection = sqlite://
"""


@pytest.fixture
def conf(tmp_path):
    path = tmp_path / 'nova.conf'
    path.write_text(NOVA_CONF)
    extra = tmp_path / 'gantt.conf.d'
    extra.mkdir()
    (extra / '10-extra.conf').write_text('[workarounds]\nbaz = 1\n')
    conf = cfg.ConfigOpts()
    conf(['--config-file', str(path), '--config-dir', str(extra)],
         project='gantt')
    return conf, str(path), str(extra / '10-extra.conf')


def test_the_options_gantt_does_not_read(conf):
    conf, path, extra = conf
    assert unknown_options.unread(conf) == [
        ('DEFAULT', 'baseapi', path, unknown_options.NOT_IMPLEMENTED),
        ('filter_scheduler', 'enabled_filter', path,
         unknown_options.NOT_IMPLEMENTED),
        ('placement', 'auth_url', path,
         unknown_options.FOREIGN_SECTIONS['placement']),
        ('workarounds', 'baz', extra, unknown_options.NOT_IMPLEMENTED),
        ('workarounds', 'never_download_image_if_on_rbd', path,
         unknown_options.NOT_IMPLEMENTED),
    ]


def test_one_warning_line_each(conf, caplog):
    conf, path, _extra = conf
    caplog.set_level(logging.WARNING, logger=unknown_options.__name__)
    assert unknown_options.warn_unread(conf) == 5
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 5
    assert lines[0] == (
        'Option [DEFAULT] baseapi (%s) is not implemented by Gantt and is '
        'ignored: a Nova option Gantt does not have, or a misspelling'
        % path)
    assert 'only Nova mode ([scheduler] backend = nova) uses' in lines[2]


def test_nova_mode_reads_the_placement_section(tmp_path):
    from scheduler.conf import scheduler as scheduler_conf
    path = tmp_path / 'nova.conf'
    path.write_text('[scheduler]\nbackend = nova\n[placement]\n'
                    'auth_type = password\nauth_url = http://keystone/v3\n'
                    'region_name = RegionOne\n[workarounds]\nbaz = 1\n')
    conf = cfg.ConfigOpts()
    scheduler_conf.register_opts(conf)
    conf(['--config-file', str(path)], project='gantt')
    assert [(section, name) for section, name, _path, _why
            in unknown_options.unread(conf)] == [('workarounds', 'baz')]
    conf.set_override('backend', 'gantt', group='scheduler')
    assert [(section, name) for section, name, _path, _why
            in unknown_options.unread(conf)] == [
        ('placement', 'auth_type'), ('placement', 'auth_url'),
        ('placement', 'region_name'), ('workarounds', 'baz')]


def test_a_file_of_gantt_options_only_is_quiet(tmp_path, caplog):
    path = tmp_path / 'gantt.conf'
    path.write_text('[DEFAULT]\nhost = h1\n[scheduler]\nworkers = 2\n'
                    '[oslo_messaging_rabbit]\nrabbit_quorum_queue = true\n'
                    '[oslo_reports]\nfile_event_handler = /tmp/x\n')
    conf = cfg.ConfigOpts()
    conf(['--config-file', str(path)], project='gantt')
    assert unknown_options.unread(conf) == []


def test_the_namespaces_are_those_of_the_sample():
    sections = {}
    cfg.ConfigParser(
        str(ROOT / 'etc' / 'gantt' / 'gantt-config-generator.conf'),
        sections).parse()
    assert tuple(sections['DEFAULT']['namespace']) == (
        unknown_options.HONOURED_NAMESPACES)
