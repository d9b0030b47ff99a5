"""Guru Meditation Reports (oslo.reports) for every Gantt daemon.

``kill -USR2 <pid>`` makes the process write a report and go on serving:
its threads with their stacks, its configuration (secrets masked), the
package versions, its processes, and a ``Gantt`` section with the state
the daemon registered (:func:`add_state`): for a scheduler worker, the
host cache's size and age, its refresh counters and the requests in
flight. Sent to a daemon's master process (systemd's ``MainPID``), the
signal is passed on to each of its workers, which write reports of their
own. Each report goes to the process's stderr (the journal, under
systemd), or with ``[oslo_reports] log_dir`` to a file there named
``<binary>.<pid>_gurumeditation_<time>``.

With ``[oslo_reports] file_event_handler`` the master writes its report
whenever that file is touched (checked every
``file_event_handler_interval`` seconds) instead of on SIGUSR2::

    reports.setup('gantt-scheduler')              # in the master, once
    reports.add_state('scheduler', manager.state)  # in each worker
"""

import importlib.metadata
import os
import signal
import threading

from oslo_log import log as logging
from oslo_reports import guru_meditation_report as gmr
from oslo_reports.models import with_default_views as views

from scheduler import conf
from scheduler import exception
from scheduler import notifications

CONF = conf.CONF
LOG = logging.getLogger(__name__)

_lock = threading.Lock()
_states = {}
_binary = None


class _Version:
    """What oslo.reports prints in the Package section."""

    @staticmethod
    def vendor_string():
        return 'Gantt'

    @staticmethod
    def product_string():
        return _binary or 'gantt'

    @staticmethod
    def version_string_with_package():
        try:
            return importlib.metadata.version('gantt')
        except importlib.metadata.PackageNotFoundError:
            return 'unknown (not installed)'


def add_state(title, provider):
    """Show ``provider()`` (a dict) under ``title`` in this process's
    reports."""
    with _lock:
        _states[title] = provider


def _gantt_section():
    data = {'process': os.getpid(), 'parent': os.getppid()}
    workers = worker_pids()
    if workers:
        data['workers (each writes its own report)'] = sorted(workers)
    if notifications.enabled():
        data['notifications waiting to be sent'] = notifications.pending()
    with _lock:
        states = list(_states.items())
    for title, provider in states:
        try:
            data[title] = provider()
        except Exception as error:
            data[title] = 'unavailable: %s' % error
    return views.ModelWithDefaultViews(data)


def worker_pids():
    """The processes this one forked (Linux's /proc; empty elsewhere)."""
    pids = set()
    try:
        threads = os.listdir('/proc/self/task')
    except OSError:
        return pids
    for thread in threads:
        try:
            with open('/proc/self/task/%s/children' % thread) as children:
                pids.update(int(pid) for pid in children.read().split())
        except OSError:
            continue
    return pids


def _on_signal(signum, frame):
    gmr.TextGuruMeditation.handle_signal(
        _Version, '%s.%d' % (_binary, os.getpid()),
        CONF.oslo_reports.log_dir, frame)
    for pid in worker_pids():
        try:
            os.kill(pid, signum)
        except OSError:
            continue   # it ended meanwhile


def setup(binary):
    """Install the report on SIGUSR2 (or the file watch); the workers
    forked later inherit the signal handler."""
    global _binary
    _binary = binary
    gmr.TextGuruMeditation.register_section('Gantt', _gantt_section)
    signal.signal(signal.SIGUSR2, _on_signal)
    watched = CONF.oslo_reports.file_event_handler
    if watched:
        if not os.path.isfile(watched):
            raise exception.ConfigError(
                reason='[oslo_reports] file_event_handler %s is not a file'
                % watched)
        gmr.TextGuruMeditation.setup_autorun(
            _Version, service_name=binary, conf=CONF, setup_signal=False)
        LOG.info('Guru Meditation Reports on SIGUSR2 and when %s is '
                 'touched', watched)
