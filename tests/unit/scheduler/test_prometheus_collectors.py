"""The collectors of a daemon's endpoint: each worker's process figures,
found as the children of the process that collects, and the build."""

import os
import subprocess
import sys

from scheduler import prometheus_collectors as collectors
from scheduler import version


def samples_of(collector):
    return {(sample.name,) + tuple(sorted(sample.labels.items())):
            sample.value
            for family in collector.collect() for sample in family.samples}


def test_each_child_process_has_its_figures_by_pid():
    # The child says when it runs: right after the fork its memory may
    # still read as 0 (before exec).
    child = subprocess.Popen([sys.executable, '-c',
                              'import time; print("up", flush=True); '
                              'time.sleep(60)'], stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b'up\n'
        samples = samples_of(collectors.WorkerProcessCollector())
        worker = ('pid', str(child.pid))
        assert samples[('gantt_worker_process_resident_memory_bytes',
                        worker)] > 0
        assert samples[('gantt_worker_process_open_fds', worker)] >= 3
        assert samples[('gantt_worker_process_start_time_seconds',
                        worker)] > 0
        assert ('gantt_worker_process_cpu_seconds_total', worker) in samples
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    # A worker that is gone is no longer listed.
    assert not [key for key in samples_of(
        collectors.WorkerProcessCollector()) if ('pid', str(child.pid))
        in key]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as out:
        out.write(text)


def test_children_are_read_from_each_thread_of_the_parent(tmp_path):
    write(str(tmp_path / '10' / 'task' / '10' / 'children'), '11 12 ')
    write(str(tmp_path / '10' / 'task' / '13' / 'children'), '14')
    assert collectors.child_pids(10, str(tmp_path)) == {11, 12, 14}


def test_without_children_files_the_parents_are_read_from_stat(tmp_path):
    # A command name may hold spaces and parentheses.
    write(str(tmp_path / '10' / 'stat'), '10 (gantt) S 1 10 10')
    write(str(tmp_path / '11' / 'stat'), '11 (gantt (a b)) S 10 10 10')
    write(str(tmp_path / '12' / 'stat'), '12 (other) S 11 10 10')
    assert collectors.child_pids(10, str(tmp_path)) == {11}


def test_the_build_is_its_release_and_commit(monkeypatch):
    monkeypatch.setenv(version.COMMIT_ENV, 'abc123')
    samples = samples_of(collectors.BuildInfoCollector())
    assert samples == {('gantt_build_info', ('commit', 'abc123'),
                        ('version', version.release())): 1}
