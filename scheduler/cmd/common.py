"""Start-up shared by the gantt-scheduler, -conductor and -compute daemons.

Checks everything that can be checked before serving (the broker is
reachable, its queues are of the type ``rabbit_quorum_queue`` asks for,
the database is reachable and migrated, the plugins exist) and
turns a failure into one clear line on stderr and exit code 1, instead of a
traceback or a daemon that retries in silence::

    common.run_daemon('gantt-scheduler', 'scheduler', make_manager,
                      workers=lambda: CONF.scheduler.workers)
"""

import sys

from oslo_concurrency import processutils
from oslo_config import cfg
from oslo_log import log as logging
from oslo_service import backend as service_backend

from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler import exception
from scheduler import notifications
from scheduler import objects
from scheduler import prometheus
from scheduler import quorum_queues
from scheduler import reports
from scheduler import rpc
from scheduler import sd_notify
from scheduler import service
from scheduler import unknown_options

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def fail(binary, error):
    """Log and print ``error`` and exit non-zero."""
    LOG.error('%s cannot start: %s', binary, error)
    sys.stderr.write('%s: error: %s\n' % (binary, error))
    sys.exit(1)


def check_database():
    from scheduler.db import migration

    migration.check_schema()
    if db_api.api_database_configured():
        migration.check_schema(database='api')


def run_daemon(binary, topic, make_manager, workers=None,
               uses_database=True, make_reporter=None, argv=None,
               prepare=None):
    """Parse the config, check dependencies, then serve until stopped.

    ``make_manager()`` builds the RPC endpoint in this (parent) process,
    so plugin errors surface before workers fork. ``make_reporter(manager)``
    returns the heartbeat callable (None: no heartbeat); by default
    services with a database write their own row. ``prepare()`` runs
    once the broker is checked, before the database is: Nova mode points
    ``[database]`` at its mirror there (a GanttException it raises stops
    start-up with its message).
    """
    config.parse_args(argv or sys.argv, description='The %s daemon' % binary)
    # Before anything else can take a while: from here on SIGUSR2 gives a
    # report instead of killing the process.
    try:
        reports.setup(binary)
    except exception.GanttException as error:
        fail(binary, error)
    # Gantt, not oslo.service or cotyledon, tells systemd when it serves.
    sd_notify.take_socket()
    objects.register_all()
    # oslo.service announced its backend before logging was set up.
    LOG.info('%s runs on the %s backend', binary,
             service_backend.get_backend_type().value)
    # Secret options (passwords in URLs) are masked. Reading every option
    # also finds a value that an option's choices refuse.
    try:
        CONF.log_opt_values(LOG, logging.DEBUG)
    except cfg.ConfigFileValueError as error:
        fail(binary, exception.ConfigError(reason=error))
    LOG.info('%s starting; transport %s, database %s', binary,
             config.redact_transport_url(CONF.transport_url),
             config.redact_database_url(CONF.database.connection)
             if uses_database else '(none: goes through the conductor)')
    try:
        # Before anything records a value, and before the workers fork.
        prometheus.setup(binary)
        rpc.init(CONF, check_broker=True)
        # The queues this daemon's RPC server will consume from.
        quorum_queues.check(CONF, CONF.transport_url,
                            [topic, '%s.%s' % (topic, CONF.host)])
        notifications.init(CONF)
        if prepare is not None:
            prepare()
        if uses_database:
            check_database()
        manager = make_manager()
    except exception.GanttException as error:
        fail(binary, error)
    # Now that every library has registered its options: one line for each
    # option of the files (a nova.conf's, say) that nothing here reads.
    unknown_options.warn_unread(CONF)
    if make_reporter is not None:
        reporter = make_reporter(manager)
    elif uses_database:
        reporter = service.db_reporter(CONF.host, binary, topic)
    else:
        reporter = None
    server = service.Service(CONF.host, binary, topic, manager,
                             reporter=reporter)
    # ``workers`` is a callable: options are only read after parse_args.
    workers = (workers() if workers else None) or \
        processutils.get_worker_count()
    LOG.info('%s serving topic %s with %d worker(s), %d RPC thread(s) each',
             binary, topic, workers, CONF.executor_thread_pool_size)
    # The checks above opened database connections in this process; the
    # workers forked next must each open their own, never share a socket.
    db_api.dispose_engine()
    service.serve(server, workers=workers)
    service.wait()
