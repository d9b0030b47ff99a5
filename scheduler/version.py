"""The service version: what a running Gantt service says it speaks.

Every service records ``SERVICE_VERSION`` with its heartbeats
(``services.version``, as Nova's services do), so that an operator, and
``gantt-status upgrade check``, can tell which services run which
release during a rolling upgrade. The number grows by one with each
change of what services send each other; its history:

* (none) - services of the releases before this one record no version.
* 1 - services record their version; the conductor RPC API 1.2
  (``service_update`` carries it).
* 2 - the conductor RPC API 1.4: computes sync what runs and what is
  still spawning apart (a 1.1 sync activates nothing).

``OLDEST_SUPPORTED_SERVICE_VERSION`` is the oldest version this release's
control services (scheduler, conductor) still talk to: ``None`` means
the unversioned services of the previous release still work, through the
``[upgrade_levels]`` caps::

    from scheduler import version
    if row.version is not None and row.version > version.SERVICE_VERSION:
        ...   # a compute newer than this conductor

The release and the source commit are what a running service was built
from (``gantt_build_info`` on its Prometheus endpoint): :func:`release`
is the installed package's version, :func:`commit` the git commit, read
from ``GANTT_COMMIT`` in the environment, else from a ``COMMIT`` file
beside this module (a build writes it: ``git rev-parse HEAD >
scheduler/COMMIT``), else from ``git rev-parse HEAD`` when the source is
a git checkout; ``unknown`` when none says::

    version.release()   # '0.1.0'
    version.commit()    # '5f0c3e1...', or 'unknown'
"""

import importlib.metadata
import os
import subprocess

SERVICE_VERSION = 2

OLDEST_SUPPORTED_SERVICE_VERSION = None

PACKAGE = 'gantt'
COMMIT_ENV = 'GANTT_COMMIT'
COMMIT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'COMMIT')
UNKNOWN = 'unknown'
# How long ``git rev-parse`` may take before the commit is unknown.
GIT_TIMEOUT = 5.0


def release():
    """The installed package's version, or ``unknown``."""
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN


def commit():
    """The git commit of the source, or ``unknown`` (never raises)."""
    found = os.environ.get(COMMIT_ENV, '').strip()
    if found:
        return found
    try:
        with open(COMMIT_FILE) as written:
            found = written.read().strip()
    except (OSError, UnicodeDecodeError):
        found = ''
    return found or _git_head() or UNKNOWN


def _git_head():
    """``git rev-parse HEAD`` of the source tree if it is a checkout (a
    ``.git`` directory, or a worktree's ``.git`` file), else None."""
    root = os.path.dirname(os.path.dirname(COMMIT_FILE))
    if not os.path.exists(os.path.join(root, '.git')):
        return None
    try:
        done = subprocess.run(
            ['git', '-C', root, 'rev-parse', '--verify', 'HEAD'],
            capture_output=True, text=True, timeout=GIT_TIMEOUT,
            check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    head = done.stdout.strip()
    return head if done.returncode == 0 and head else None
