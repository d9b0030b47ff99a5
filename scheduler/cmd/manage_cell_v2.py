"""``gantt-manage cell_v2``: the cell mappings, as ``nova-manage cell_v2``.

The verbs, options, messages and exit codes are Nova's::

    gantt-manage api_db sync                          # the API schema first
    gantt-manage cell_v2 map_cell0 [--database_connection URL]  # see
                                                # manage_cell_v2_setup
    gantt-manage cell_v2 create_cell --name cell1 \\
        --transport-url rabbit://gantt:SECRET@mq1:5672/cell1 \\
        --database_connection mysql+pymysql://gantt:SECRET@db1/gantt_cell1
    gantt-manage cell_v2 list_cells [--verbose]        # passwords masked
    gantt-manage cell_v2 update_cell --cell_uuid UUID [--name N] \\
        [--transport-url URL] [--database_connection URL] \\
        [--disable | --enable]
    gantt-manage cell_v2 delete_cell --cell_uuid UUID [--force]
    gantt-manage cell_v2 discover_hosts [--cell_uuid UUID] [--by-service] \\
        [--verbose] [--strict]
    gantt-manage cell_v2 list_hosts [--cell_uuid UUID]
    gantt-manage cell_v2 verify_instance --uuid UUID [--quiet]

All but ``discover_hosts`` need ``[api_database] connection`` and refuse
with one line saying so; ``discover_hosts`` in one cell maps the nodes of
``[database]``, as ``gantt-manage discover_hosts`` does.

Exit codes beyond 0 and 1 (Nova's): ``create_cell`` 2, a cell with the
same transport URL or database connection exists; ``update_cell`` 3,
the same, 4, ``--disable`` with ``--enable``, 5, cell0 cannot be
disabled, 2, the new values are invalid; ``delete_cell`` 2, it has hosts
(``--force`` unmaps them), 3, it has instances, 4, it has instance
mappings whose instances are all deleted (``--force`` deletes them);
``discover_hosts`` 2, a host is mapped to another cell, 1 with
``--strict`` when no new host was mapped; ``verify_instance`` 1, not
mapped, 2, mapped to no cell, 3, deleted, 4, its row is gone.

cell0 and the verbs of a deployment that grows from one cell
(``map_cell0``, ``simple_cell_setup``, ``map_cell_and_hosts``,
``map_instances``, ``delete_host``) are in
:mod:`scheduler.cmd.manage_cell_v2_setup`, whose ``CATEGORY`` holds
every verb.
"""

import contextlib
import sys
import uuid as uuid_lib

from oslo_db import exception as db_exc
import oslo_messaging as messaging
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from compute import manager as compute_manager
from scheduler.cells import discovery
from scheduler.cells import registry
from scheduler.cmd import manage_args
from scheduler.cmd import manage_table
from scheduler import cells
from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import mappings
from scheduler.db import migration
from scheduler.db import models
from scheduler import exception

CONF = conf.CONF
CELL0_TRANSPORT_URL = 'none:///'
_INSTANCE = models.Instance.__table__


def say(message):
    print(message)


def fail(message, code):
    """One line on stderr, as every gantt-manage error; ``code``."""
    sys.stderr.write('gantt-manage: error: %s\n'
                     % config.mask_secrets(message))
    return code


def require_api(verb):
    if not db_api.api_database_configured():
        raise exception.ApiDatabaseRequired(
            what="'gantt-manage cell_v2 %s'" % verb)
    migration.check_schema(database='api')


@contextlib.contextmanager
def api_errors(what):
    with registry.database_errors(what):
        yield


@contextlib.contextmanager
def in_cell(cell_row):
    """Sessions inside go to the cell's database; its errors name it."""
    with db_api.target_cell(cell_row.database_connection):
        try:
            yield
        except (sa_exc.SQLAlchemyError, db_exc.DBError) as error:
            raise exception.DatabaseUnavailable(
                url=config.redact_database_url(
                    db_api.targeted_connection()),
                reason='cell %s: %s' % (cell_row.uuid,
                                        db_api.describe_error(error))) \
                from error


def get_cell(uuid):
    with api_errors('reading cell %s' % uuid):
        with db_api.api_reader() as session:
            return mappings.get_cell(session, uuid)


# -- the URLs given on the command line -------------------------------------

def checked_transport_url(given, from_config):
    """``(url, None)``, or ``(None, message)`` when it is invalid; the
    config's ``[DEFAULT] transport_url`` when none is given and
    ``from_config``."""
    if not given:
        if not from_config:
            return None, None
        if not CONF.transport_url:
            return None, ('Must specify --transport-url if '
                          '[DEFAULT]/transport_url is not set in the '
                          'configuration file.')
        say('--transport-url not provided in the command line, using the '
             'value [DEFAULT]/transport_url from the configuration file')
        given = CONF.transport_url
    try:
        messaging.TransportURL.parse(CONF, given)
    except (messaging.InvalidTransportURL, ValueError) as error:
        return None, 'Invalid transport URL: %s' % error
    return given, None


def _database_connection(given, from_config):
    """Like :func:`_transport_url`, for ``[database] connection``."""
    if not given:
        if not from_config:
            return None, None
        if not CONF.database.connection:
            return None, ('Must specify --database_connection if '
                          '[database]/connection is not set in the '
                          'configuration file.')
        say('--database_connection not provided in the command line, '
             'using the value [database]/connection from the '
             'configuration file')
        given = CONF.database.connection
    try:
        sa.engine.make_url(given)
    except (sa_exc.ArgumentError, ValueError) as error:
        return None, 'Invalid database connection: %s' % error
    return given, None


def _same_urls_as_another(session, uuid, transport_url, connection):
    """The uuid of another cell with this transport URL or database
    connection, or None."""
    for row in mappings.list_cells(session):
        if row.uuid != uuid and (
                (connection and row.database_connection == connection) or
                (transport_url and row.transport_url == transport_url)):
            return row.uuid
    return None


def _duplicate_message(other):
    return ('The specified transport_url and/or database_connection '
            'combination already exists for another cell with uuid %s.'
            % other)


# -- create_cell, list_cells, update_cell -----------------------------------

def create_cell(name, transport_url, database_connection, verbose,
                disabled):
    require_api('create_cell')
    transport_url, problem = checked_transport_url(transport_url, True)
    if problem is None:
        database_connection, problem = _database_connection(
            database_connection, True)
    if problem is not None:
        return fail(problem, 1)
    cell_uuid = str(uuid_lib.uuid4())
    with api_errors('creating the cell'):
        with db_api.api_writer() as session:
            other = _same_urls_as_another(session, None, transport_url,
                                          database_connection)
            if other is None:
                mappings.create_cell(session, cell_uuid, name, transport_url,
                                     database_connection, disabled=disabled)
    if other is not None:
        return fail(_duplicate_message(other), 2)
    cells.clear_cache()
    if verbose:
        say(cell_uuid)
    return 0


def list_cells(verbose):
    require_api('list_cells')
    with api_errors('reading the cell mappings'):
        with db_api.api_reader() as session:
            rows = mappings.list_cells(session)

    def shown(row):
        if verbose:
            return [row.transport_url, row.database_connection]
        return [config.redact_transport_url(row.transport_url),
                config.redact_database_url(row.database_connection)]
    say(manage_table.format_table(
        ['Name', 'UUID', 'Transport URL', 'Database Connection',
         'Disabled'],
        [[row.name or '', row.uuid] + shown(row) + [str(row.disabled)]
         for row in rows]))
    return 0


def _disabled_change(row, disable, enable):
    """``(new disabled value or None, exit code or None)``."""
    if disable and enable:
        return None, fail('Cell cannot be disabled and enabled at the '
                            'same time.', 4)
    if not (disable or enable):
        return None, None
    if row.uuid == cells.CELL0_UUID:
        return None, fail('Cell0 cannot be disabled.', 5)
    if disable == bool(row.disabled):
        say('Cell %s is already %s' % (row.uuid, 'disabled' if disable
                                        else 'enabled'))
        return None, None
    return disable, None


def update_cell(cell_uuid, name, transport_url, database_connection,
                disable, enable):
    require_api('update_cell')
    try:
        row = get_cell(cell_uuid)
    except exception.CellMappingNotFound as error:
        return fail(str(error), 1)
    transport_url, problem = checked_transport_url(transport_url, False)
    if problem is None:
        database_connection, problem = _database_connection(
            database_connection, False)
    if problem is not None:
        return fail('Unable to update CellMapping: %s' % problem, 2)
    with api_errors('reading the cell mappings'):
        with db_api.api_reader() as session:
            other = _same_urls_as_another(session, cell_uuid, transport_url,
                                          database_connection)
    if other is not None:
        return fail(_duplicate_message(other), 3)
    disabled, code = _disabled_change(row, disable, enable)
    if code is not None:
        return code
    values = {key: value for key, value in (
        ('name', name), ('transport_url', transport_url),
        ('database_connection', database_connection),
        ('disabled', disabled)) if value is not None}
    if values:
        with api_errors('updating cell %s' % cell_uuid):
            with db_api.api_writer() as session:
                mappings.update_cell(session, row.id, **values)
        cells.clear_cache()
    return 0


# -- delete_cell ------------------------------------------------------------

def _live_instances(cell_row):
    with in_cell(cell_row):
        with db_api.reader() as session:
            return session.execute(
                sa.select(sa.func.count()).select_from(_INSTANCE)
                .where(_INSTANCE.c.deleted == 0)).scalar_one()


def delete_cell(cell_uuid, force):
    require_api('delete_cell')
    try:
        row = get_cell(cell_uuid)
    except exception.CellMappingNotFound as error:
        return fail(str(error), 1)
    with api_errors('reading the mappings of cell %s' % cell_uuid):
        with db_api.api_reader() as session:
            hosts = mappings.count_host_mappings(session, row.id)
            instance_mappings = mappings.count_instance_mappings(session,
                                                                 row.id)
    if hosts and not force:
        return fail('There are existing hosts mapped to cell with uuid '
                      '%s.' % cell_uuid, 2)
    if instance_mappings:
        if _live_instances(row):
            return fail('There are existing instances mapped to cell '
                          'with uuid %s.' % cell_uuid, 3)
        if not force:
            return fail('There are instance mappings to cell with uuid '
                          '%s, but all instances have been deleted in the '
                          'cell; run it again with --force to delete the '
                          'instance mappings.' % cell_uuid, 4)
    if hosts:
        # The cell's nodes first: a failure here leaves the mappings, and
        # the command can be run again; a node unmapped and not deleted
        # is found again by a later discovery.
        with in_cell(row):
            with db_api.writer() as session:
                db_compute_nodes.unmap_all_nodes(session)
    with api_errors('deleting cell %s' % cell_uuid):
        with db_api.api_writer() as session:
            mappings.delete_cell(session, row.id)
    cells.clear_cache()
    return 0


# -- discover_hosts, list_hosts, verify_instance ----------------------------

def discover_hosts(cell_uuid, verbose, strict, by_service):
    if db_api.api_database_configured() or cell_uuid or by_service:
        require_api('discover_hosts' + (' --cell_uuid' if cell_uuid
                                         else ' --by-service'
                                         if by_service else ''))
    else:
        migration.check_schema()
    try:
        result = discovery.discover_hosts(
            cell_uuid=cell_uuid, by_service=by_service,
            service_binary=compute_manager.BINARY,
            status=say if verbose else None)
    except exception.CellMappingNotFound as error:
        return fail(str(error), 1)
    for cell, reason in result.failed:
        fail('Cell %s was skipped: %s' % (cell.uuid, reason), 1)
    for cell, host, other in result.conflicts:
        fail('Duplicate host mapping was encountered: host %s of cell '
               '%s is mapped to cell %s.' % (host, cell.uuid, other), 2)
    if result.conflicts:
        return 2
    if result.failed:
        return 1
    if strict:
        found = result.host_mappings if db_api.api_database_configured() \
            else result.nodes
        return int(not found)
    return 0


def list_hosts(cell_uuid):
    require_api('list_hosts')
    cell_id = None
    if cell_uuid:
        try:
            cell_id = get_cell(cell_uuid).id
        except exception.CellMappingNotFound as error:
            return fail(str(error), 1)
    with api_errors('reading the host mappings'):
        with db_api.api_reader() as session:
            rows = mappings.list_host_mappings(session, cell_id=cell_id)
    say(manage_table.format_table(
        ['Cell Name', 'Cell UUID', 'Hostname'],
        [[row.cell_name or '', row.cell_uuid, row.host] for row in rows]))
    return 0


def verify_instance(uuid, quiet):
    require_api('verify_instance')
    tell = (lambda message: None) if quiet else say
    with api_errors('reading the mapping of instance %s' % uuid):
        with db_api.api_reader() as session:
            mapping = mappings.get_instance_mapping(session, uuid)
    if mapping is None:
        tell('Instance %s is not mapped to a cell (upgrade is incomplete) '
             'or instance does not exist' % uuid)
        return 1
    if mapping.cell_id is None:
        tell('Instance %s is not mapped to a cell' % uuid)
        return 2
    with in_cell(mapping):
        with db_api.reader() as session:
            row = session.execute(sa.select(_INSTANCE.c.deleted).where(
                _INSTANCE.c.uuid == uuid)).first()
    if row is None:
        tell('The instance with uuid %s has been archived.' % uuid)
        tell('However its instance_mapping remains.')
        return 4
    if row.deleted:
        tell('The instance with uuid %s has been deleted.' % uuid)
        return 3
    tell('Instance %s is in cell: %s (%s)' % (uuid, mapping.cell_name,
                                               mapping.cell_uuid))
    return 0


_arg = manage_args.arg
_CELL_UUID = _arg('cell_uuid', '--cell_uuid', required=True,
                  help='The uuid of the cell.')
_DATABASE = _arg('database_connection', '--database_connection',
                 help='The database URL of the cell database.')
_TRANSPORT = _arg('transport_url', '--transport-url',
                  help='The transport URL of the cell message queue.')

CATEGORY = manage_args.Category('Cells v2: cell and host mappings.', {
    'create_cell': manage_args.Command(
        create_cell, 'Add a cell (URLs from the configuration when not '
        'given).', [
            _arg('name', '--name', help='The name of the cell.'),
            _TRANSPORT, _DATABASE,
            _arg('verbose', '--verbose', action='store_true',
                 help='Print the uuid of the new cell.'),
            _arg('disabled', '--disabled', action='store_true',
                 help='Create the cell disabled.')]),
    'list_cells': manage_args.Command(list_cells, 'List the cells.', [
        _arg('verbose', '--verbose', action='store_true',
             help='Show passwords in the URLs.')]),
    'update_cell': manage_args.Command(
        update_cell, 'Change a cell (running services see new URLs only '
        'once restarted).', [
            _CELL_UUID, _arg('name', '--name', help='Its new name.'),
            _TRANSPORT, _DATABASE,
            _arg('disable', '--disable', action='store_true',
                 help='Schedule nothing to the cell.'),
            _arg('enable', '--enable', action='store_true',
                 help='Schedule to the cell again.')]),
    'delete_cell': manage_args.Command(delete_cell, 'Delete an empty '
                                       'cell.', [
        _CELL_UUID, _arg('force', '--force', action='store_true',
                         help='Also unmap its hosts and delete the '
                              'mappings of its deleted instances.')]),
    'discover_hosts': manage_args.Command(
        discover_hosts, 'Map the new compute hosts of every cell.', [
            _arg('cell_uuid', '--cell_uuid', help='Only this cell.'),
            _arg('verbose', '--verbose', action='store_true',
                 help='Say what is done, cell by cell.'),
            _arg('strict', '--strict', action='store_true',
                 help='Exit 1 unless a new host was mapped.'),
            _arg('by_service', '--by-service', action='store_true',
                 help='Map the hosts of the compute services instead of '
                      'those of the unmapped compute nodes.')]),
    'list_hosts': manage_args.Command(list_hosts, 'List the mapped hosts.', [
        _arg('cell_uuid', '--cell_uuid', help='Only this cell\'s.')]),
    'verify_instance': manage_args.Command(
        verify_instance, 'Say which cell an instance is in.', [
            _arg('uuid', '--uuid', required=True,
                 help='The instance UUID.'),
            _arg('quiet', '--quiet', action='store_true',
                 help='Print nothing; the exit code says it.')]),
})
