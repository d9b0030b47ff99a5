"""gantt-manage: the operator's tool, nova-manage's counterpart.

It reads the same configuration as every Gantt service (``--config-file``,
``--config-dir``, default ``/etc/gantt/gantt.conf``) and works on the
database directly; ``server create`` and the commands that move, rebuild
or shelve servers talk to the conductor over RPC, and
the ``aggregate`` commands tell the schedulers what changed (fanout casts).
Options of gantt-manage itself come before the command::

    gantt-manage --config-file /etc/gantt/gantt.conf db sync
    gantt-manage db version          # current and head revision
    gantt-manage db check            # claims, instances vs. computes'
                                     # reports; every cell, API database
    gantt-manage db archive_deleted_rows --until-complete --verbose
                                     # deleted instances to shadow tables
    gantt-manage db purge --before 2026-01-01   # ...and out of them
    gantt-manage service list
    gantt-manage service disable compute1 --reason "disk swap"
    gantt-manage service enable compute1
    gantt-manage host list           # used/capacity per compute node
    gantt-manage host show compute1  # its CPU, NUMA cells, PCI devices
    gantt-manage discover_hosts      # map newly reported compute nodes
    gantt-manage api_db sync         # cells: the API database's schema
    gantt-manage db online_data_migrations  # cells: this cell's aggregates
                                            # and groups to the API database
    gantt-manage cell_v2 list_cells  # cells: see manage_cell_v2 and
                                     # manage_cell_v2_setup
    gantt-manage --version           # also: gantt-manage version
    gantt-manage server create --vcpus 1 --ram 512 --disk 1 --wait
    gantt-manage server list --host compute1 --state active
    gantt-manage server show <uuid> [--format json]
    gantt-manage server migrate <uuid>   # also resize, confirm, revert,
                                         # live-migrate, evacuate, rebuild,
                                         # shelve, unshelve
    gantt-manage aggregate create rack1 --availability-zone az1
    gantt-manage aggregate add-host rack1 compute1
    gantt-manage server-group create web anti-affinity
    gantt-manage explain --vcpus 1 --ram 512 --disk 1 --hint group=<uuid>

Exit codes: 0 success; 1 failure (an error, an unknown service or server,
an inconsistent database, a server that ended in ERROR); 2 bad usage, or a
``server create --wait`` that timed out (``db archive_deleted_rows``
and ``db purge`` have Nova's own: see manage_archive). Errors are one
line on stderr, with any password in a URL masked, never a traceback.

:func:`main` takes a ``sys.argv``-style list and returns the exit code, so
that tests call it in-process::

    assert manage.main(['gantt-manage', 'db', 'check']) == 0
"""

import sys

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from compute import manager as compute_manager
from scheduler import cells
from scheduler.cells import discovery
from scheduler.cmd import manage_aggregate
from scheduler.cmd import manage_api_db
from scheduler.cmd import manage_archive
from scheduler.cmd import manage_args
from scheduler.cmd import manage_broker
from scheduler.cmd import manage_cell_v2_setup
from scheduler.cmd import manage_data_migrations
from scheduler.cmd import manage_db_check
from scheduler.cmd import manage_explain
from scheduler.cmd import manage_host
from scheduler.cmd import manage_server
from scheduler.cmd import manage_server_group
from scheduler.cmd import manage_server_ops
from scheduler.cmd import manage_table
from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import migration
from scheduler.db import models
from scheduler.db import services as db_services
from scheduler import exception
from scheduler import notifications
from scheduler.notifications import service as service_notes
from scheduler import objects
from scheduler import version

CONF = conf.CONF
PROG = 'gantt-manage'

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


# -- db ---------------------------------------------------------------------

def db_sync(local_cell=False):
    """Upgrade ``[database]``; with cells, cell0's database first (as
    Nova's, unless ``local_cell``)."""
    if db_api.api_database_configured() and not local_cell:
        manage_cell_v2_setup.sync_cell0()
    db_api.check_connection()
    migration.db_sync()
    print('Database upgraded to revision %s.' % migration.db_version())
    return EXIT_OK


def db_version():
    return manage_api_db.print_version('main')


def db_check():
    """Every cell's claims and instances, and the API database's
    mappings (see :mod:`scheduler.cmd.manage_db_check`); exit 1 if
    anything is wrong."""
    return manage_db_check.check()


# -- service ----------------------------------------------------------------

def service_list():
    migration.check_schema()
    with db_api.reader() as session:
        rows = db_services.list_services(session)
    if not rows:
        print('No services found.')
        return EXIT_OK
    now = models.utcnow()
    print(manage_table.format_table(
        ['Id', 'Binary', 'Host', 'Status', 'State', 'Last seen (UTC)',
         'Disabled reason'],
        [[row.id, row.binary, row.host,
          'disabled' if row.disabled else 'enabled',
          'up' if db_services.is_up(row, now=now) else 'down',
          row.last_seen_up, row.disabled_reason] for row in rows]))
    return EXIT_OK


def _set_service_disabled(host, binary, disabled, reason=None):
    migration.check_schema()
    with db_api.writer() as session:
        found = db_services.set_disabled(session, host, binary, disabled,
                                         reason=reason)
    if not found:
        raise exception.ServiceNotFound(ident='%s on host %s'
                                        % (binary, host))
    with db_api.reader() as session:
        service_notes.service_action(
            None, 'update', db_services.get_service(session, host, binary),
            'gantt-manage')
    print('%s %s on host %s%s.' % ('Disabled' if disabled else 'Enabled',
                                   binary, host,
                                   ' (%s)' % reason if reason else ''))
    return EXIT_OK


def service_disable(host, binary, reason):
    return _set_service_disabled(host, binary, True, reason)


def service_enable(host, binary):
    return _set_service_disabled(host, binary, False)


# -- host -------------------------------------------------------------------

def _host_usage_query():
    """Each node's usage and capacity (as claims compute it), and its
    number of consumers holding allocations."""
    node = models.ComputeNode.__table__
    alloc = models.Allocation.__table__
    consumers = (sa.select(alloc.c.compute_node_id,
                           sa.func.count().label('consumers'))
                 .group_by(alloc.c.compute_node_id).subquery())
    usage = []
    for field in claims.Resources._fields:
        used_column = claims.RESOURCE_COLUMNS[field][0]
        usage.append(node.c[used_column].label('used_' + field))
        usage.append(claims.capacity_expression(field).label('cap_' + field))
    return (sa.select(node.c.host, node.c.hypervisor_hostname,
                      node.c.mapped, *usage,
                      sa.func.coalesce(consumers.c.consumers, 0)
                      .label('consumers'))
            .outerjoin(consumers, consumers.c.compute_node_id == node.c.id)
            .order_by(node.c.host, node.c.hypervisor_hostname))


def _host_rows():
    """``[(cell label or None, row)]`` of every cell's nodes (with
    cells, each cell's database in turn; one that cannot be read is
    reported and skipped) and whether a cell was skipped."""
    if not db_api.api_database_configured():
        migration.check_schema()
        with db_api.reader() as session:
            return [(None, row) for row in
                    session.execute(_host_usage_query()).all()], False
    found, skipped = [], False
    for cell in cells.get_cells():
        if cell.is_cell0:
            continue
        try:
            with cells.target(cell), db_api.reader() as session:
                found.extend((cell.label(), row) for row in
                             session.execute(_host_usage_query()).all())
        except (sa_exc.SQLAlchemyError, db_exc.DBError) as error:
            skipped = True
            sys.stderr.write('%s: error: cell %s was skipped: %s\n'
                             % (PROG, cell.label(),
                                db_api.describe_error(error)))
    return found, skipped


def host_list():
    rows, skipped = _host_rows()
    if not rows:
        print('No compute nodes found.')
        return EXIT_FAILURE if skipped else EXIT_OK
    with_cells = db_api.api_database_configured()

    def used_of_capacity(row, field):
        return '%s/%s' % (getattr(row, 'used_' + field),
                          manage_table.number_text(
                              getattr(row, 'cap_' + field)))

    print(manage_table.format_table(
        ['Host', 'Node'] + (['Cell'] if with_cells else []) + [
            'Mapped', 'vCPUs', 'RAM MB', 'Disk GB', 'Instances'],
        [[row.host, row.hypervisor_hostname]
         + ([cell] if with_cells else []) + [row.mapped]
         + [used_of_capacity(row, field) for field in claims.Resources._fields]
         + [row.consumers] for cell, row in rows]))
    return EXIT_FAILURE if skipped else EXIT_OK


# -- discover_hosts ---------------------------------------------------------

def discover_hosts():
    """Map the unmapped nodes of ``[database]``; with cells, those of
    every cell (as ``cell_v2 discover_hosts``), saying which cell."""
    cells_mode = db_api.api_database_configured()
    migration.check_schema(database='api' if cells_mode else 'main')
    result = discovery.discover_hosts()
    for cell, reason in result.failed:
        sys.stderr.write('%s: error: cell %s was skipped: %s\n'
                         % (PROG, cell.label(), reason))
    if not result.nodes:
        print('No unmapped compute nodes found.')
        return EXIT_FAILURE if result.failed else EXIT_OK
    print('Mapped %d compute node(s):' % len(result.nodes))
    print(manage_table.format_table(
        ['Host', 'Node', 'UUID'] + (['Cell'] if cells_mode else []),
        [[node.host, node.hypervisor_hostname, node.uuid]
         + ([cell.label()] if cells_mode else [])
         for cell, node in result.nodes]))
    return EXIT_FAILURE if result.failed else EXIT_OK


# -- version ----------------------------------------------------------------

def print_version():
    """What ``--version`` prints, as ``nova-manage version``."""
    print(version.release())
    return EXIT_OK


# -- the command table ------------------------------------------------------

# See manage_args: ``name`` of an argument is the keyword its function
# receives.
Arg = manage_args.Arg
Command = manage_args.Command
Category = manage_args.Category
_arg = manage_args.arg


_BINARY = _arg('binary', '--binary', default=compute_manager.BINARY,
               help='Binary of the service (default: %(default)s).')

COMMANDS = {
    'db': Category('Schema and consistency of the database.', {
        'sync': Command(db_sync, 'Upgrade the schema to the newest '
                        'revision (with cells, cell0\'s too).', [
                            _arg('local_cell', '--local_cell',
                                 action='store_true',
                                 help='Only [database], not cell0.')]),
        'version': Command(db_version, 'Print the current and the head '
                           'revision.', []),
        'check': Command(db_check, 'Check every cell\'s claims and '
                         'instances (against their computes\' reports) '
                         'and the API database\'s mappings.', []),
        'online_data_migrations': Command(
            manage_data_migrations.online_data_migrations,
            'Move this cell\'s aggregates and server groups to the API '
            'database (cells).', [
                _arg('max_count', '--max-count', metavar='NUMBER',
                     help='Move at most this many rows (default: '
                          'batches of %d until done).'
                     % manage_data_migrations.BATCH)]),
        # archive_deleted_rows, purge: exit codes of their own.
        **manage_archive.DB_ACTIONS,
    }),
    'api_db': manage_api_db.CATEGORY,
    'cell_v2': manage_cell_v2_setup.CATEGORY,
    'service': Category('Services and their heartbeats.', {
        'list': Command(service_list, 'List services.', []),
        'disable': Command(service_disable, 'Stop scheduling to a service.', [
            _arg('host', metavar='HOST'), _BINARY,
            _arg('reason', '--reason', help='Why it is disabled.')]),
        'enable': Command(service_enable, 'Schedule to a service again.',
                          [_arg('host', metavar='HOST'), _BINARY]),
    }),
    'host': Category('Compute nodes.', {
        'list': Command(host_list, 'List compute nodes with used/capacity '
                        'of each resource.', []),
        'show': Command(manage_host.show, 'Show the CPU, disk, NUMA cells '
                        'and PCI devices of a host\'s nodes, and their '
                        'usage.', [_arg('host', metavar='HOST')]),
    }),
    'discover_hosts': Command(discover_hosts, 'Map newly reported compute '
                              'nodes so that they are scheduled to.', []),
    'server': Category('Servers (instances).', {
        'create': Command(manage_server.create, 'Ask the conductor to '
                          'build servers; print their UUIDs.',
                          manage_server.CREATE_ARGS),
        'list': Command(manage_server.list_servers, 'List servers.', [
            _arg('host', '--host', help='Only servers on this host.'),
            _arg('state', '--state', help='Only servers in this vm_state '
                 '(building, active, error).'),
            _arg('deleted', '--deleted', action='store_true',
                 help='Include deleted servers.')]),
        'show': Command(manage_server.show, 'Show every field of a server.',
                        [_arg('uuid', metavar='UUID'),
                         _arg('output_format', '--format', default='table',
                              choices=('table', 'json'),
                              help='table (default) or json, one object '
                                   'for scripts.')]),
        # migrate, resize, confirm, revert, live-migrate, evacuate,
        # rebuild, shelve, unshelve, delete: calls to the conductor.
        **manage_server_ops.ACTIONS,
    }),
    'aggregate': manage_aggregate.CATEGORY,
    'broker': manage_broker.CATEGORY,
    'server-group': manage_server_group.CATEGORY,
    'version': Command(print_version, 'Print the version of Gantt (as '
                       '--version).', []),
    'explain': Command(manage_explain.explain, 'Show, claiming nothing, '
                       'which filters would remove which hosts and why, '
                       'and how the weighers would rank the rest.',
                       manage_server.SPEC_ARGS),
}


def _dest(arg):
    # Prefixed so that no argument shadows a config option (``host``) or
    # the sub-command's own ``name``.
    return 'manage_' + arg.name


def _add_arguments(parser, command):
    for arg in command.args:
        kwargs = dict(arg.kwargs)
        if kwargs.get('action') not in ('store_true', 'store_false'):
            kwargs.setdefault('metavar', arg.name.upper())
        if arg.flags[0].startswith('-'):
            parser.add_argument(*arg.flags, dest=_dest(arg), **kwargs)
        else:
            parser.add_argument(_dest(arg), **kwargs)


def _add_commands(subparsers):
    for name, entry in COMMANDS.items():
        parser = subparsers.add_parser(name, help=entry.help,
                                       description=entry.help)
        if isinstance(entry, Command):
            _add_arguments(parser, entry)
            continue
        actions = parser.add_subparsers(dest='action', metavar='ACTION',
                                        title='actions')
        actions.required = True
        for action, command in entry.actions.items():
            _add_arguments(actions.add_parser(action, help=command.help,
                                              description=command.help),
                           command)


_COMMAND_OPT = cfg.SubCommandOpt(
    'category', title='Commands', handler=_add_commands,
    help='Run "%s COMMAND -h" for its actions and arguments.' % PROG)


def _chosen_command():
    entry = COMMANDS[CONF.category.name]
    if isinstance(entry, Category):
        entry = entry.actions[CONF.category.action]
    return entry.func, {arg.name: getattr(CONF.category, _dest(arg))
                        for arg in entry.args}


# -- main -------------------------------------------------------------------

def _log_to_stderr():
    """Keep stdout for the command's output: logs go to stderr, and only
    warnings and errors unless ``--debug``."""
    for handler in logging.getLogger().logger.handlers:
        if getattr(handler, 'stream', None) is sys.stdout:
            handler.setStream(sys.stderr)
        if not CONF.debug:
            handler.setLevel(logging.WARNING)


def _configured_urls():
    try:
        urls = [CONF.database.connection, CONF.api_database.connection]
        if 'transport_url' in CONF:
            urls.append(CONF.transport_url)
    except cfg.Error:
        return []
    return urls


def _fail(message):
    """Print one error line on stderr, any configured password masked."""
    message = config.scrub(message, _configured_urls())
    sys.stderr.write('%s: error: %s\n' % (PROG, message))
    return EXIT_FAILURE


def _database_error(error):
    return exception.DatabaseUnavailable(
        url=config.redact_database_url(CONF.database.connection),
        reason=db_api.describe_error(error))


def _start_notifications():
    """Notifications of the commands that change things (aggregates,
    server groups, services), as the daemons send them; a transport that
    cannot be built is a warning, the command goes on."""
    try:
        notifications.init(CONF)
    except Exception as error:
        sys.stderr.write('gantt-manage: warning: notifications are off: '
                         '%s\n' % config.mask_secrets(str(error)))


def _run_command():
    func, kwargs = _chosen_command()
    try:
        return func(**kwargs)
    except exception.GanttException as error:
        return _fail(str(error))
    except (sa_exc.SQLAlchemyError, db_exc.DBError) as error:
        return _fail(str(_database_error(error)))


def main(argv=None):
    """Run one command; return its exit code.

    ``argv`` is ``sys.argv``-style (the program name first).
    """
    argv = list(sys.argv if argv is None else argv)
    # CLI options can only be registered on an unparsed CONF; clearing it
    # (and unregistering the command option on the way out) lets main() run
    # again in the same process, as tests do.
    CONF.clear()
    try:
        try:
            config.parse_args(argv, description=__doc__.splitlines()[0],
                              cli_opts=[_COMMAND_OPT],
                              version=version.release())
        except SystemExit as error:
            # argparse has printed the help, or the usage and the error.
            if error.code is None or isinstance(error.code, int):
                return error.code or EXIT_OK
            return EXIT_USAGE
        except cfg.Error as error:
            return _fail(str(error))
        _log_to_stderr()
        # A command answers at once: one connection attempt, not a
        # daemon's wait of [database] max_retries x retry_interval.
        CONF.set_override('max_retries', 1, group='database')
        CONF.set_override('max_retries', 1, group='api_database')
        objects.register_all()
        _start_notifications()
        return _run_command()
    finally:
        notifications.cleanup()
        db_api.dispose_engine()
        CONF.clear()
        CONF.unregister_opt(_COMMAND_OPT)
