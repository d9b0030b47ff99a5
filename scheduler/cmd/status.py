"""gantt-status upgrade check: is this deployment ready for this release?

Run it with the new code installed, before the daemons are restarted
(oslo.upgradecheck's table, or ``--json``)::

    $ gantt-status --config-file /etc/gantt/gantt.conf upgrade check

Checks:

* **Database schema**: the database is at the newest migration (run
  ``gantt-manage db sync`` first otherwise).
* **RPC version caps**: each ``[upgrade_levels]`` cap is a version this
  release speaks (a cap it does not know would make its clients refuse
  to send).
* **Service versions**: every service runs a release this one talks to:
  none newer than this code, none older than the oldest it supports;
  services of the previous release (no version recorded) are counted, and
  talk to this one through the ``[upgrade_levels]`` caps.
* **Claims**: what ``gantt-manage db check`` checks (and lists): in
  every cell, every node's usage matches its allocations and capacity,
  no consumer that should hold nothing holds a claim, and the instances
  agree with their computes' last reports; cell0's instances have no
  host nor claim; the API database's mappings, build requests and
  server group members agree with the cells.
* **Deprecated options**: options the config files set under a name or
  group that is deprecated, each with its new place.
* **Cells v2** (Nova's check): with ``[api_database] connection``, the
  API database is at its newest migration, cell0 and at least one other
  cell are mapped, and if no host is mapped no cell has compute nodes
  (else ``gantt-manage cell_v2 discover_hosts``). Passes in one cell.
* **Quorum queues**: with ``[oslo_messaging_rabbit] rabbit_quorum_queue``
  on, no queue of a Gantt topic (``scheduler``, ``conductor``,
  ``compute`` and each service's ``<topic>.<host>``) exists on the
  configured vhost as a classic queue (RabbitMQ cannot change a queue's
  type: the daemons would refuse to start).
* **Aggregates and server groups**: where they live (``[database]`` in
  one cell; with cells the API database, at its newest migration); a
  warning when a cell's own tables still hold some, unused (``gantt-manage
  db online_data_migrations`` moves them).

Exit codes are Nova's: 0 all passed, 1 a warning, 2 a failure, 255 the
check could not run (the database is unreachable, say), with one line
saying why.
"""

import configparser
import glob
import os
import sys

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck
from oslo_utils import versionutils

from conductor import rpcapi as conductor_rpcapi
from compute import rpcapi as compute_rpcapi
from scheduler.cmd import manage_db_check
from scheduler.cmd import status_cells
from scheduler import conf
from scheduler.conf import opts
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler.db import services as db_services
from scheduler import exception
from scheduler import quorum_queues
from scheduler import rpcapi as scheduler_rpcapi
from scheduler import version

CONF = conf.CONF
PROG = 'gantt-status'
EXIT_ERROR = 255

Code = upgradecheck.Code
Result = upgradecheck.Result

# [upgrade_levels] option -> the newest version of the APIs it caps that
# this release speaks (the conductor's cap applies to its conductor and
# compute_task APIs).
RPC_APIS = {
    'scheduler': scheduler_rpcapi.RPC_API_VERSION,
    'conductor': max(conductor_rpcapi.CONDUCTOR_API_VERSION,
                     conductor_rpcapi.COMPUTE_TASK_API_VERSION,
                     key=versionutils.convert_version_to_tuple),
    'compute': compute_rpcapi.RPC_API_VERSION,
}


class _Unusable(Exception):
    """The check cannot run at all (exit 255)."""


class Checks(upgradecheck.UpgradeCommands):

    display_title = 'Gantt upgrade check'

    def _check_schema(self):
        try:
            current = migration.db_version()
        except Exception as error:
            raise _Unusable(
                'cannot use the database at %s: %s' % (
                    config.redact_database_url(CONF.database.connection),
                    db_api.describe_error(error))) from error
        expected = migration.head_version()
        self._schema_current = current == expected
        if self._schema_current:
            return Result(Code.SUCCESS, 'At revision %s.' % current)
        return Result(Code.FAILURE, 'The database is at revision %s, this '
                      "release needs %s: run 'gantt-manage db sync'."
                      % (current or 'none (no schema)', expected))

    def _check_rpc_caps(self):
        problems, caps = [], []
        for api, newest in RPC_APIS.items():
            cap = getattr(CONF.upgrade_levels, api)
            if not cap:
                continue
            caps.append('%s=%s' % (api, cap))
            try:
                known = versionutils.is_compatible(cap, newest,
                                                   same_major=True)
            except ValueError:
                problems.append('[upgrade_levels] %s = %s is not a '
                                'version' % (api, cap))
                continue
            if not known:
                problems.append('[upgrade_levels] %s = %s: this release '
                                'speaks %s' % (api, cap, newest))
        if problems:
            return Result(Code.FAILURE, '; '.join(problems) + '.')
        if caps:
            return Result(Code.SUCCESS, 'Capped: %s; remove the caps once '
                          'every service runs this release.'
                          % ', '.join(caps))
        return Result(Code.SUCCESS)

    def _check_service_versions(self):
        if not getattr(self, '_schema_current', False):
            return Result(Code.FAILURE, 'Not checked: the database schema '
                          'is not at the newest revision.')
        try:
            with db_api.reader() as session:
                rows = db_services.list_services(session)
        except Exception as error:
            return Result(Code.FAILURE, 'Cannot read the services: %s'
                          % db_api.describe_error(error))
        return service_versions_result(rows)

    def _check_claims(self):
        if not getattr(self, '_schema_current', False):
            return Result(Code.FAILURE, 'Not checked: the database schema '
                          'is not at the newest revision.')
        try:
            outcome = manage_db_check.run_checks()
        except Exception as error:
            return Result(Code.FAILURE, 'Cannot read the claims: %s'
                          % db_api.describe_error(error))
        return claims_result(outcome)

    def _check_deprecated_options(self):
        found = deprecated_options_in_use()
        if not found:
            return Result(Code.SUCCESS)
        return Result(Code.WARNING, 'Deprecated: %s.' % '; '.join(
            '[%s] %s (now [%s] %s)' % use for use in found))

    def _check_cells_v2(self):
        if not db_api.api_database_configured():
            return Result(Code.SUCCESS, 'One cell: [api_database] '
                          'connection is not set.')
        try:
            return status_cells.check()
        except Exception as error:
            return Result(Code.FAILURE, 'Cannot read the API database at '
                          '%s: %s' % (config.redact_database_url(
                              db_api.api_connection()),
                              db_api.describe_error(error)))

    def _check_groups(self):
        if not db_api.api_database_configured():
            return Result(Code.SUCCESS, 'One cell: in [database].')
        try:
            return status_cells.groups_check()
        except Exception as error:
            return Result(Code.FAILURE, 'Cannot read the API database at '
                          '%s: %s' % (config.redact_database_url(
                              db_api.api_connection()),
                              db_api.describe_error(error)))

    def _check_quorum_queues(self):
        return quorum_queues_result(CONF)

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('RPC version caps', _check_rpc_caps),
        ('Service versions', _check_service_versions),
        ('Claims', _check_claims),
        ('Deprecated options', _check_deprecated_options),
        ('Cells v2', _check_cells_v2),
        ('Aggregates and server groups', _check_groups),
        ('Quorum queues', _check_quorum_queues),
    )


def claims_result(outcome):
    """The Claims check over a :func:`manage_db_check.run_checks`
    outcome."""
    parts = []
    nodes = sum(len(check.bad_nodes) for check in outcome.cells)
    stray = sum(len(check.stray) for check in outcome.cells)
    instances = sum(len(check.instances) for check in outcome.cells)
    if nodes or stray:
        parts.append('%d node(s) whose usage does not match their '
                     'allocations or capacity, %d claim(s) held by '
                     'consumers that should hold none' % (nodes, stray))
    if instances:
        parts.append('%d instance(s) at odds with their compute or their '
                     'cell' % instances)
    if outcome.api:
        parts.append('%d problem(s) in the API database' % len(outcome.api))
    unread = [check.cell.label() for check in outcome.cells if check.error]
    if unread:
        parts.append('cell(s) not checked: %s' % ', '.join(unread))
    if not parts:
        return Result(Code.SUCCESS)
    return Result(Code.FAILURE, "%s: run 'gantt-manage db check' for the "
                  'list.' % '; '.join(parts))

def quorum_queues_result(conf):
    """The Quorum queues check: with ``rabbit_quorum_queue`` on, no queue
    of a Gantt topic on the configured vhost is a classic one."""
    if not quorum_queues.enabled(conf):
        return Result(Code.SUCCESS, '%s is off.' % quorum_queues.OPTION)
    topics = (scheduler_rpcapi.RPC_TOPIC, conductor_rpcapi.RPC_TOPIC,
              compute_rpcapi.RPC_TOPIC)
    queues = list(topics)
    try:
        with db_api.reader() as session:
            queues += sorted('%s.%s' % (row.topic, row.host)
                             for row in db_services.list_services(session)
                             if row.topic in topics)
    except Exception:
        pass   # The topics alone: the other checks say why.
    url = conf.transport_url
    try:
        found = quorum_queues.classic_queues(conf, url, queues)
    except Exception as error:
        return Result(Code.FAILURE, 'Cannot ask the broker at %s: %s' % (
            config.redact_transport_url(url),
            config.scrub(str(error), [url])))
    if not found:
        return Result(Code.SUCCESS)
    return Result(Code.FAILURE, '%s is on, but classic queues exist on '
                  '%s: %s. %s.' % (
                      quorum_queues.OPTION, config.redact_transport_url(url),
                      ', '.join(queue for queue, _refusal in found),
                      quorum_queues.advice(url, found[0][0])))


def service_versions_result(rows):
    """The Service versions check over ``services`` rows."""
    newest, oldest = (version.SERVICE_VERSION,
                      version.OLDEST_SUPPORTED_SERVICE_VERSION)
    too_new = sorted('%s on %s (%d)' % (row.binary, row.host, row.version)
                     for row in rows
                     if row.version is not None and row.version > newest)
    too_old = sorted('%s on %s (%s)' % (row.binary, row.host,
                                        row.version or 'none')
                     for row in rows if oldest is not None
                     and (row.version or 0) < oldest)
    problems = []
    if too_new:
        problems.append('newer than this release (service version %d): '
                        '%s; run the check with the newest code'
                        % (newest, ', '.join(too_new)))
    if too_old:
        problems.append('older than this release supports (service '
                        'version %d at least): %s; upgrade them first'
                        % (oldest, ', '.join(too_old)))
    if problems:
        return Result(Code.FAILURE, '; '.join(problems) + '.')
    previous = sum(1 for row in rows if row.version is None)
    if previous:
        return Result(Code.SUCCESS, '%d of %d service(s) run the previous '
                      'release (no version recorded); until they are '
                      'upgraded, keep the [upgrade_levels] caps at what '
                      'they speak.' % (previous, len(rows)))
    return Result(Code.SUCCESS)


def _config_files():
    """The files oslo.config read, in its order."""
    files = list(CONF.config_file or [])
    for directory in CONF.config_dir or []:
        files.extend(sorted(glob.glob(os.path.join(directory, '*.conf'))))
    return files


def deprecated_options_in_use():
    """``[(old group, old name, new group, new name)]``: Gantt's options
    the config files set under a deprecated name or group."""
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    for path in _config_files():
        try:
            parser.read(path)
        except configparser.Error:
            continue
    found = set()
    for group, options in opts.list_opts():
        group_name = group if isinstance(group, str) else group.name
        for opt in options:
            for old in opt.deprecated_opts:
                old_group = old.group or group_name
                old_name = old.name or opt.dest
                if (old_group, old_name) != (group_name, opt.dest) and \
                        _is_set(parser, old_group, old_name):
                    found.add((old_group, old_name, group_name, opt.dest))
    return sorted(found)


def _is_set(parser, group, name):
    if group == 'DEFAULT':
        return name in parser.defaults()
    # A section's own keys, not the [DEFAULT] ones configparser adds in.
    return parser.has_section(group) and name in dict(
        parser.items(group, raw=True)) and (
            name not in parser.defaults()
            or parser.get(group, name, raw=True)
            != parser.defaults()[name])


def _add_commands(subparsers, checks):
    upgrade = subparsers.add_parser('upgrade', help='Upgrade checks')
    upgrade.add_argument('check', choices=['check'],
                         help='Check this release can run here')
    upgrade.add_argument('--json', action='store_true',
                         help='The results as JSON instead of a table')
    upgrade.set_defaults(action_fn=checks.check)


def main(argv=None):
    """Run ``upgrade check``; return its exit code."""
    argv = list(sys.argv if argv is None else argv)
    checks = Checks()
    command = cfg.SubCommandOpt(
        'command', handler=lambda subparsers: _add_commands(subparsers,
                                                            checks))
    CONF.clear()
    try:
        try:
            config.parse_args(argv, description=__doc__.splitlines()[0],
                              cli_opts=[command])
        except cfg.Error as error:
            print('%s: error: %s' % (PROG, error), file=sys.stderr)
            return EXIT_ERROR
        # oslo.upgradecheck reads --json from its module's CONF.
        upgradecheck.CONF = CONF
        # One connection attempt, not a daemon's wait for the database.
        CONF.set_override('max_retries', 1, group='database')
        try:
            return CONF.command.action_fn()
        except (_Unusable, exception.GanttException) as error:
            print('%s: error: %s' % (PROG, error), file=sys.stderr)
            return EXIT_ERROR
    finally:
        db_api.dispose_engine()
        CONF.clear()
        CONF.unregister_opt(command)
