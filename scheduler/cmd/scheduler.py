"""gantt-scheduler: answers select_destinations on topic ``scheduler``.

Runs ``[scheduler] workers`` processes (default: one per CPU, one on a
host of two CPUs or fewer: see :func:`default_workers`), each with
``[DEFAULT] executor_thread_pool_size`` threads for the RPC messages it
handles at once: :data:`RPC_THREADS` unless the configuration says
otherwise (see :func:`set_defaults`).
"""

import os

from oslo_concurrency import processutils
from oslo_log import log as logging
from oslo_messaging import opts as messaging_opts

from scheduler.cmd import common
from scheduler import conf
from scheduler import config
from scheduler.conf import filter_scheduler as filter_scheduler_conf
from scheduler import exception
from scheduler import host_cache
from scheduler import manager
from scheduler import rpcapi
from scheduler import service

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The scheduler's default executor_thread_pool_size. oslo.messaging's 64
# suits green threads that wait for I/O; a scheduler worker runs Python
# one native thread at a time, and its claims take at most
# ``[database] max_pool_size - 1`` connections at once (4 by default,
# see scheduler.drivers.base.claim_slots). Requests beyond that only
# contend for the interpreter: at 16 concurrent callers, 2 workers
# placed more per second with 4 threads each than with 64 in six of
# seven runs taken in turn (benchmarks/README.md, session 16).
RPC_THREADS = 4

# Up to this many CPUs, ``[scheduler] workers`` unset runs one worker.
# A host this small usually runs the broker or the database as well, and
# on the benchmarks' two-CPU machine, which runs both, two workers placed
# 0.84x-1.04x what one did in the same runs (benchmarks/README.md,
# session 54): each worker refreshes its own host cache and ranks its own
# requests, so two spend more CPU per placement on CPUs every part shares.
SMALL_HOST_CPUS = 2


def usable_cpus():
    """The CPUs this process may run on (its affinity: a container's
    cpuset), or the host's count where the platform does not say."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return processutils.get_worker_count()


def default_workers(cpus):
    """The worker count when ``[scheduler] workers`` is unset or 0 on a
    host of ``cpus`` usable CPUs: one per CPU (Nova's default), but one
    on a host of :data:`SMALL_HOST_CPUS` CPUs or fewer."""
    if cpus <= SMALL_HOST_CPUS:
        return 1
    return cpus


def workers(cpus=None):
    """``[scheduler] workers``, or :func:`default_workers` for ``cpus``
    (default: :func:`usable_cpus`), logged with the reason when that is
    fewer than one per CPU."""
    if CONF.scheduler.workers:
        return CONF.scheduler.workers
    if cpus is None:
        cpus = usable_cpus()
    count = default_workers(cpus)
    if count != cpus:
        LOG.info('[scheduler] workers is unset: %d worker on this host of '
                 '%d CPU(s), where a second worker mostly places fewer '
                 'requests per second when the broker and the database '
                 'share the CPUs (one worker per CPU from %d CPUs up; set '
                 '[scheduler] workers to choose)', count, cpus,
                 SMALL_HOST_CPUS + 1)
    return count


def set_defaults():
    """The scheduler's own default of an oslo.messaging option: a
    configuration file (or command line) that sets it still wins."""
    config.register_opts()
    messaging_opts.set_defaults(CONF, executor_thread_pool_size=RPC_THREADS)


def make_manager():
    """Gantt's endpoint, or Nova's with ``[scheduler] backend = nova``
    (which stops start-up unless ``[DEFAULT] control_exchange`` is
    ``nova``)."""
    if CONF.scheduler.backend == 'nova':
        from scheduler.nova import manager as nova_manager
        return nova_manager.NovaSchedulerManager()
    return manager.SchedulerManager()


def prepare_nova_mode():
    """In Nova mode, before anything opens ``[database]``: keep Nova's
    database URLs for the host mirror's reader, point ``[database]`` at
    the mirror, and fill it once (Nova's databases and Placement must be
    readable: start-up stops with the reason otherwise). Nothing in
    Gantt's own mode."""
    if CONF.scheduler.backend != 'nova':
        return
    from scheduler.nova import manager as nova_manager
    from scheduler.nova import mirror
    from scheduler.nova import nova_reader
    # Before the mirror is made: a wrong exchange stops start-up at once.
    nova_manager.check_control_exchange()
    filter_scheduler_conf.set_nova_mode_defaults(CONF)
    try:
        the_mirror = mirror.configure(CONF)
        the_mirror.sync()
    except (nova_reader.NovaUnavailable, mirror.SyncFailed) as error:
        raise exception.ConfigError(
            reason='[scheduler] backend = nova: cannot read Nova\'s state: '
            '%s' % error)


def make_reporter(manager):
    """The heartbeat: Gantt's own services row; none in Nova mode, where
    the services table is Nova's (and the database a private mirror)."""
    if CONF.scheduler.backend == 'nova':
        return None
    return service.db_reporter(CONF.host, 'gantt-scheduler',
                               rpcapi.RPC_TOPIC)


def main():
    set_defaults()
    # The daemon's process is its own: its host cache may be frozen out
    # of the garbage collector's passes.
    host_cache.freeze_collector()
    # A refresh running Python code gives the interpreter back to a
    # request within 0.5 ms, not CPython's 5 (issue 53, stalls.py).
    host_cache.shorten_switch_interval()
    common.run_daemon('gantt-scheduler', rpcapi.RPC_TOPIC, make_manager,
                      workers=workers,
                      prepare=prepare_nova_mode,
                      make_reporter=make_reporter)
