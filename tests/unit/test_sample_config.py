"""The generated sample config (tox -e genconfig) shows the defaults the
daemons really run with, and every group an operator may set."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_sample_shows_gantt_s_defaults_and_groups(tmp_path):
    sample = tmp_path / 'gantt.conf.sample'
    # A process of its own: this one's option defaults may have been
    # changed by other tests already.
    subprocess.run(
        [sys.executable, '-m', 'oslo_config.generator', '--config-file',
         str(ROOT / 'etc' / 'gantt' / 'gantt-config-generator.conf'),
         '--output-file', str(sample)], check=True, cwd=str(ROOT),
        capture_output=True, timeout=120)
    text = sample.read_text()
    # Gantt's exchange and log levels, not the libraries' own defaults.
    assert '#control_exchange = gantt\n' in text
    assert '#control_exchange = openstack' not in text
    levels = next(line for line in text.splitlines()
                  if line.startswith('#default_log_levels = '))
    assert 'cotyledon=WARN' in levels and 'alembic=WARN' in levels
    for group in ('[database]', '[filter_scheduler]', '[metrics]',
                  '[oslo_reports]', '[oslo_messaging_rabbit]'):
        assert group in text, group
    assert '#prometheus_port = <None>' in text
