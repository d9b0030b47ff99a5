"""How many gantt-scheduler workers run when ``[scheduler] workers`` is
unset: one per usable CPU, but one on a host of two CPUs or fewer."""

import logging
import os

import pytest

from scheduler.cmd import scheduler as scheduler_cmd


@pytest.mark.parametrize('cpus, expected', [
    (1, 1), (2, 1), (3, 3), (4, 4), (64, 64)])
def test_one_worker_per_cpu_except_on_a_small_host(cpus, expected):
    assert scheduler_cmd.default_workers(cpus) == expected


def test_the_cpus_counted_are_those_the_process_may_run_on(config):
    assert scheduler_cmd.usable_cpus() == len(os.sched_getaffinity(0))
    assert scheduler_cmd.workers() == scheduler_cmd.default_workers(
        len(os.sched_getaffinity(0)))


@pytest.mark.parametrize('unset', [None, 0])
def test_unset_on_a_small_host_runs_one_and_says_why(unset, config,
                                                    caplog):
    config.config(workers=unset, group='scheduler')
    with caplog.at_level(logging.INFO, logger=scheduler_cmd.__name__):
        assert scheduler_cmd.workers(cpus=2) == 1
    [record] = caplog.records
    message = record.getMessage()
    assert message.startswith('[scheduler] workers is unset: 1 worker on '
                              'this host of 2 CPU(s)')
    assert 'set [scheduler] workers to choose' in message


def test_unset_on_a_larger_host_runs_one_per_cpu_quietly(config, caplog):
    with caplog.at_level(logging.INFO, logger=scheduler_cmd.__name__):
        assert scheduler_cmd.workers(cpus=3) == 3
        assert scheduler_cmd.workers(cpus=16) == 16
    assert caplog.records == []


@pytest.mark.parametrize('cpus', [1, 2, 8])
def test_a_count_that_is_set_wins_on_any_host(cpus, config, caplog):
    config.config(workers=2, group='scheduler')
    with caplog.at_level(logging.INFO, logger=scheduler_cmd.__name__):
        assert scheduler_cmd.workers(cpus=cpus) == 2
    assert caplog.records == []
