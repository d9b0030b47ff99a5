"""The benchmarks' rig: ``--set SECTION.OPTION=VALUE`` options for the
scheduler daemons, and a SIGTERM that still cleans up."""

import argparse
import os
import signal
import sys
import threading

from oslo_config import cfg
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..',
                                'benchmarks'))
import rig  # noqa: E402


def test_an_option_is_read_as_section_option_and_value():
    assert rig.parse_option('filter_scheduler.rank_ahead=false') == (
        'filter_scheduler', 'rank_ahead', 'false')
    assert rig.parse_option(' DEFAULT.debug = true ') == (
        'DEFAULT', 'debug', 'true')
    # The value may hold dots and equals signs.
    assert rig.parse_option('database.connection=a=b.c') == (
        'database', 'connection', 'a=b.c')


@pytest.mark.parametrize('text', ['rank_ahead=false', 'x.y', '.y=1',
                                  'x.=1', ''])
def test_anything_else_is_refused_with_the_form_expected(text):
    with pytest.raises(argparse.ArgumentTypeError,
                       match='SECTION.OPTION=VALUE'):
        rig.parse_option(text)


def test_the_options_follow_the_benchmarks_own_in_the_daemons_file(
        tmp_path):
    path = tmp_path / 'scheduler.conf'
    path.write_text(rig.DAEMON_CONF + rig.options_conf([
        ('filter_scheduler', 'rank_ahead', 'false'),
        ('scheduler', 'host_state_refresh_interval', '2')]))
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.BoolOpt('rank_ahead', default=True),
                      group='filter_scheduler')
    conf.register_opt(cfg.FloatOpt('host_state_refresh_interval'),
                      group='scheduler')
    conf(['--config-file', str(path)], project='gantt-bench-test')
    assert conf.filter_scheduler.rank_ahead is False
    # The benchmark sets 0.5; given again, the later value wins.
    assert conf.scheduler.host_state_refresh_interval == 2.0


def test_sigterm_ends_the_benchmark_through_its_with_blocks():
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    cleaned = []
    try:
        replaced = rig.exit_on_sigterm()
        assert replaced is signal.SIG_DFL
        # (Checked before the signal is sent: the default would end the
        # test run.)
        assert signal.getsignal(signal.SIGTERM) is rig._terminated
        with pytest.raises(SystemExit) as ended:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                # The handler runs at the next instruction of this thread.
                for _ in range(1000):
                    pass
            finally:
                cleaned.append(True)
        assert ended.value.code == 128 + signal.SIGTERM
        assert cleaned == [True]
        # Someone else's handler is left alone.
        assert rig.exit_on_sigterm() is None
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_sigterm_is_left_alone_outside_the_main_thread():
    found = []
    thread = threading.Thread(target=lambda: found.append(
        rig.exit_on_sigterm()))
    thread.start()
    thread.join()
    assert found == [None]
