"""The collectors a daemon's Prometheus endpoint reads at each scrape,
beside the values its processes record (:mod:`scheduler.prometheus`).

* :class:`LiveWorkersCollector`: the values every process of the daemon
  recorded (prometheus_client's multiprocess mode), after forgetting the
  gauges of the worker processes that are gone;
* :class:`WorkerProcessCollector`: the ``process_*`` figures of each live
  worker process, as ``gantt_worker_process_*{pid="..."}`` (the
  unlabelled ``process_*`` are the master's own, from prometheus_client's
  ProcessCollector: the daemon's start time is the master's);
* :class:`BuildInfoCollector`: ``gantt_build_info{version, commit} 1``.

The endpoint's registry takes them as any collector::

    registry.register(prometheus_collectors.WorkerProcessCollector())
"""

import glob
import os

from prometheus_client import metrics_core
from prometheus_client import multiprocess
from prometheus_client import process_collector

from scheduler import version

WORKER_NAMESPACE = 'gantt_worker'


class LiveWorkersCollector:
    """prometheus_client's multiprocess collector, which first forgets
    the gauges of worker processes that are gone (counters and
    histograms keep their totals)."""

    def __init__(self, directory):
        self._directory = directory
        self._collector = multiprocess.MultiProcessCollector(
            None, path=directory)

    def collect(self):
        for pid in _pids_of_live_gauges(self._directory):
            if not alive(pid):
                multiprocess.mark_process_dead(pid, self._directory)
        return self._collector.collect()


def _pids_of_live_gauges(directory):
    pids = set()
    for path in glob.glob(os.path.join(directory, 'gauge_live*_*.db')):
        pid = os.path.basename(path)[:-3].rsplit('_', 1)[-1]
        if pid.isdigit():
            pids.add(int(pid))
    return pids


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class WorkerProcessCollector:
    """The process figures (CPU, memory, file descriptors, start time) of
    each worker process, the children of the process that collects,
    labelled by ``pid``. A worker that is gone is no longer listed."""

    def __init__(self, proc='/proc'):
        self._proc = proc

    def collect(self):
        families = {}
        for pid in sorted(child_pids(os.getpid(), self._proc)):
            # ProcessCollector reads /proc/<pid>; a worker that ended
            # meanwhile gives nothing.
            one = process_collector.ProcessCollector(
                namespace=WORKER_NAMESPACE, pid=lambda pid=pid: pid,
                proc=self._proc, registry=None)
            for family in one.collect():
                merged = families.get(family.name)
                if merged is None:
                    merged = families[family.name] = type(family)(
                        family.name, family.documentation, labels=['pid'])
                merged.add_metric([str(pid)], family.samples[0].value)
        return list(families.values())


def child_pids(parent, proc='/proc'):
    """The pids of ``parent``'s child processes (its workers)."""
    listed = glob.glob(os.path.join(proc, str(parent), 'task', '*',
                                    'children'))
    pids = set()
    for path in listed:
        try:
            with open(path) as children:
                pids.update(int(pid) for pid in children.read().split())
        except OSError:
            pass
    if listed:
        return pids
    # A kernel without /proc/<pid>/task/<tid>/children: every process's
    # parent, from its stat line.
    for path in glob.glob(os.path.join(proc, '[0-9]*', 'stat')):
        try:
            with open(path, 'rb') as stat:
                fields = stat.read().rsplit(b')', 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[1] == str(parent).encode():
            pids.add(int(os.path.basename(os.path.dirname(path))))
    return pids


class BuildInfoCollector:
    """``gantt_build_info{version, commit} 1``, read once (the build of
    a running process does not change)."""

    def __init__(self):
        self._release = version.release()
        self._commit = version.commit()

    def collect(self):
        info = metrics_core.GaugeMetricFamily(
            'gantt_build_info', 'The release and git commit this service '
            'runs (always 1)', labels=['version', 'commit'])
        info.add_metric([self._release, self._commit], 1)
        return [info]
