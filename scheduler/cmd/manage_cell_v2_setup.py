"""``gantt-manage cell_v2``: cell0, and a deployment growing from one cell.

The verbs, options, messages and exit codes of ``nova-manage cell_v2``
(the other verbs are in :mod:`scheduler.cmd.manage_cell_v2`)::

    gantt-manage cell_v2 map_cell0 [--database_connection URL]
    gantt-manage cell_v2 simple_cell_setup [--transport-url URL]
    gantt-manage cell_v2 map_cell_and_hosts [--name N] \\
        [--transport-url URL] [--verbose]
    gantt-manage cell_v2 map_instances --cell_uuid UUID \\
        [--max-count N] [--reset]
    gantt-manage cell_v2 delete_host --cell_uuid UUID --host HOST

``map_cell0`` maps cell0 (by default ``[database] connection`` with
``_cell0`` after the database name) and creates its database when it is
not there and the URL's user may (PostgreSQL, MariaDB; for SQLite the
file); a user who may not gets one line naming the database and what to
do, exit 1, and nothing is mapped. ``gantt-manage db sync`` builds its
schema. ``simple_cell_setup`` does what a deployment of one cell needs:
cell0 (its database and schema), one cell of ``[database]`` with the
hosts of its compute nodes, and its instances' mappings.

Exit codes: ``simple_cell_setup`` 1, no compute host to map (or no
transport URL); ``map_cell_and_hosts`` 1, no transport URL;
``map_instances`` 1, instances are left to map (``--max-count``: run it
again), 127, ``--max-count`` is not a positive integer; ``delete_host``
1, no such cell, 2, the host is not mapped, 3, it is mapped to another
cell, 4, it has instances (not deleted) in the cell.
"""

import uuid as uuid_lib

from oslo_db import exception as db_exc
import sqlalchemy as sa

from scheduler.cmd import manage_args
from scheduler.cmd import manage_cell_v2 as cell_v2
from scheduler import cells
from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler.db import migration
from scheduler.db import models
from scheduler.db import server_databases
from scheduler import exception

CONF = conf.CONF
# Instances mapped per batch when no --max-count is given (Nova's).
MAP_BATCH = 50
EXIT_BAD_MAX_COUNT = 127
_INSTANCE = models.Instance.__table__


# -- map_cell0 --------------------------------------------------------------

def cell0_default_connection():
    """``[database] connection`` with ``_cell0`` after its database name
    (for SQLite, after its file name), as Nova derives it."""
    url = sa.engine.make_url(CONF.database.connection)
    return url.set(database=url.database + '_cell0').render_as_string(
        hide_password=False)


def _existing_cell0():
    try:
        return cell_v2.get_cell(cells.CELL0_UUID)
    except exception.CellMappingNotFound:
        return None


def _ensure_cell0_database(connection):
    """Create cell0's database unless it is there; None, or the exit
    code of a failure (said on stderr)."""
    try:
        if server_databases.ensure_database(connection):
            cell_v2.say('Created the database of cell0 at %s.'
                        % config.redact_database_url(connection))
    except (server_databases.DatabaseCreationRefused,
            server_databases.DatabaseServerError) as error:
        return cell_v2.fail(str(error), 1)
    return None


def _map_cell0(database_connection):
    """Map cell0 and create its database; None, or an exit code."""
    if not database_connection and not CONF.database.connection:
        return cell_v2.fail('Must specify --database_connection if '
                            '[database]/connection is not set in the '
                            'configuration file.', 1)
    existing = _existing_cell0()
    connection = existing.database_connection if existing else (
        database_connection or cell0_default_connection())
    code = _ensure_cell0_database(connection)
    if code is not None:
        return code
    if existing is not None:
        cell_v2.say('Cell0 is already setup')
        return None
    with cell_v2.api_errors('mapping cell0'):
        try:
            with db_api.api_writer() as session:
                mappings.create_cell(session, cells.CELL0_UUID,
                                     cells.CELL0_NAME,
                                     cell_v2.CELL0_TRANSPORT_URL, connection)
        except db_exc.DBDuplicateEntry:
            cell_v2.say('Cell0 is already setup')
    cells.clear_cache()
    return None


def map_cell0(database_connection):
    cell_v2.require_api('map_cell0')
    return _map_cell0(database_connection) or 0


def sync_cell0():
    """What ``gantt-manage db sync`` does first with cells, as Nova's: the
    schema of cell0's database."""
    migration.check_schema(database='api')
    row = _existing_cell0()
    if row is None:
        cell_v2.say('WARNING: cell0 mapping not found - not syncing cell0.')
        return
    with cell_v2.in_cell(row):
        db_api.check_connection()
        migration.db_sync()
        cell_v2.say('cell0 database upgraded to revision %s.'
                    % migration.db_version())


# -- map_cell_and_hosts, simple_cell_setup ----------------------------------

def _hosts_of_nodes():
    """The hosts of ``[database]``'s compute nodes."""
    with db_api.reader() as session:
        return sorted({node.host for node in
                       db_compute_nodes.get_nodes(session)})


def _cell_of_this_database(session, mapped):
    """The id and uuid of the cell to map to: that of an already mapped
    host, else one whose database is ``[database]``'s; (None, None)."""
    for row in mapped.values():
        return row.cell_id, row.cell_uuid
    for row in mappings.list_cells(session):
        if row.database_connection == CONF.database.connection:
            return row.id, row.uuid
    return None, None


def _map_cell_and_hosts(transport_url, name=None, verbose=False):
    """Map ``[database]`` as a cell (once) and its hosts; the cell's uuid,
    or None when it has no compute node."""
    migration.check_schema()
    hosts = _hosts_of_nodes()
    if not hosts:
        cell_v2.say('No hosts found to map to cell, exiting.')
        return None
    with cell_v2.api_errors('mapping the hosts'):
        with db_api.api_writer() as session:
            mapped = mappings.host_mappings_of(session, hosts)
            if verbose:
                for host in sorted(mapped):
                    cell_v2.say('Host %s is already mapped to cell %s'
                                % (host, mapped[host].cell_uuid))
            cell_id, cell_uuid = _cell_of_this_database(session, mapped)
            missing = [host for host in hosts if host not in mapped]
            if not missing:
                cell_v2.say('All hosts are already mapped to cell(s).')
                return cell_uuid
            if cell_id is None:
                cell_uuid = str(uuid_lib.uuid4())
                cell_id = mappings.create_cell(
                    session, cell_uuid, name, transport_url,
                    CONF.database.connection)
            for host in missing:
                mappings.create_host_mapping(session, host, cell_id)
    # Mapped, the nodes are scheduled to (as after discover_hosts).
    with db_api.writer() as session:
        db_compute_nodes.map_unmapped_nodes(session, hosts=missing)
    cells.clear_cache()
    if verbose:
        cell_v2.say(cell_uuid)
    return cell_uuid


def map_cell_and_hosts(transport_url, name, verbose):
    cell_v2.require_api('map_cell_and_hosts')
    transport_url, problem = cell_v2.checked_transport_url(transport_url,
                                                           True)
    if problem is not None:
        return cell_v2.fail(problem, 1)
    _map_cell_and_hosts(transport_url, name, verbose)
    return 0


def simple_cell_setup(transport_url):
    cell_v2.require_api('simple_cell_setup')
    transport_url, problem = cell_v2.checked_transport_url(transport_url,
                                                           True)
    if problem is not None:
        return cell_v2.fail(problem, 1)
    code = _map_cell0(None)
    if code is not None:
        return code
    # Its schema, so that cell0 is usable (a failure is said, as Nova).
    try:
        with cell_v2.in_cell(_existing_cell0()):
            migration.db_sync()
    except (exception.GanttException, db_exc.DBError,
            sa.exc.SQLAlchemyError) as error:
        cell_v2.say('Unable to sync cell0 schema: %s'
                    % config.mask_secrets(str(error)))
    cell_uuid = _map_cell_and_hosts(transport_url)
    if cell_uuid is None:
        return 1
    return _map_all(cell_v2.get_cell(cell_uuid), MAP_BATCH, None, True)


# -- map_instances ----------------------------------------------------------

def _instances_after(cell_row, marker, limit):
    """Up to ``limit`` instances of the cell (deleted ones too), oldest
    first, after instance ``marker``."""
    query = sa.select(_INSTANCE.c.uuid, _INSTANCE.c.project_id,
                      _INSTANCE.c.user_id).order_by(
        _INSTANCE.c.created_at, _INSTANCE.c.id).limit(limit)
    with cell_v2.in_cell(cell_row):
        with db_api.reader() as session:
            if marker is not None:
                after = session.execute(
                    sa.select(_INSTANCE.c.created_at, _INSTANCE.c.id)
                    .where(_INSTANCE.c.uuid == marker)).first()
                if after is not None:
                    query = query.where(sa.or_(
                        _INSTANCE.c.created_at > after.created_at,
                        sa.and_(_INSTANCE.c.created_at == after.created_at,
                                _INSTANCE.c.id > after.id)))
            return session.execute(query).all()


def _map_batch(cell_row, rows):
    with db_api.api_writer() as session:
        known = mappings.mapped_instance_uuids(session,
                                               [row.uuid for row in rows])
        for row in rows:
            if row.uuid not in known:
                mappings.create_instance_mapping(
                    session, row.uuid, row.project_id or '',
                    cell_id=cell_row.id, user_id=row.user_id)


def _map_all(cell_row, batch, marker, map_all):
    """Map batches from ``marker`` on (one unless ``map_all``); 0 when
    done, 1 when a marker is left for the next run."""
    with cell_v2.api_errors('mapping the instances of cell %s'
                            % cell_row.uuid):
        while True:
            rows = _instances_after(cell_row, marker, batch)
            _map_batch(cell_row, rows)
            marker = rows[-1].uuid if len(rows) == batch else None
            if marker is None or not map_all:
                break
        if marker is None:
            return 0
        with db_api.api_writer() as session:
            mappings.save_marker(session, marker)
    return 1


def map_instances(cell_uuid, max_count, reset):
    cell_v2.require_api('map_instances')
    if max_count is not None:
        try:
            batch = int(max_count)
        except ValueError:
            batch = 0
        if batch < 1:
            return cell_v2.fail('Must supply a positive value for '
                                'max-count', EXIT_BAD_MAX_COUNT)
    try:
        cell_row = cell_v2.get_cell(cell_uuid)
    except exception.CellMappingNotFound as error:
        return cell_v2.fail(str(error), 1)
    with cell_v2.api_errors('reading the marker of map_instances'):
        with db_api.api_writer() as session:
            marker = mappings.pop_marker(session)
    if reset:
        marker = None
    if max_count is None:
        return _map_all(cell_row, MAP_BATCH, marker, True)
    return _map_all(cell_row, batch, marker, False)


# -- delete_host ------------------------------------------------------------

def delete_host(cell_uuid, host):
    cell_v2.require_api('delete_host')
    try:
        cell_row = cell_v2.get_cell(cell_uuid)
    except exception.CellMappingNotFound:
        return cell_v2.fail('Cell with uuid %s was not found.' % cell_uuid,
                            1)
    with cell_v2.api_errors('reading the mapping of host %s' % host):
        with db_api.api_reader() as session:
            mapping = mappings.host_mappings_of(session, [host]).get(host)
    if mapping is None:
        return cell_v2.fail('The host %s was not found.' % host, 2)
    if mapping.cell_uuid != cell_row.uuid:
        return cell_v2.fail('The host %s was not found in the cell %s.'
                            % (host, cell_uuid), 3)
    with cell_v2.in_cell(cell_row):
        with db_api.reader() as session:
            instances = db_instances.list_instances(
                session, host=host, include_deleted=False)
    if instances:
        return cell_v2.fail('There are instances on the host %s.' % host, 4)
    # The nodes first: a failure leaves the mapping, and the command can
    # run again; a node unmapped is found again by a later discovery.
    with cell_v2.in_cell(cell_row):
        with db_api.writer() as session:
            db_compute_nodes.unmap_all_nodes(session, host=host)
    with cell_v2.api_errors('deleting the mapping of host %s' % host):
        with db_api.api_writer() as session:
            mappings.delete_host_mapping(session, host)
    cells.clear_cache()
    return 0


_arg = manage_args.arg
_TRANSPORT = _arg('transport_url', '--transport-url',
                  help='The transport URL of the cell message queue '
                       '(default: [DEFAULT] transport_url).')

ACTIONS = {
    'map_cell0': manage_args.Command(
        map_cell0, 'Map cell0, the cell of instances that never got a '
        'host, creating its database if the user may.', [_arg(
            'database_connection', '--database_connection',
            help='The database URL of cell0 (default: [database] '
                 'connection with _cell0 after the database name).')]),
    'simple_cell_setup': manage_args.Command(
        simple_cell_setup, 'Set up cells for a deployment of one cell: '
        'cell0, the cell of [database] with its hosts, its instances.',
        [_TRANSPORT]),
    'map_cell_and_hosts': manage_args.Command(
        map_cell_and_hosts, 'Map [database] as a cell (once) and the hosts '
        'of its compute nodes.', [
            _arg('name', '--name', help='The name of the cell.'),
            _TRANSPORT,
            _arg('verbose', '--verbose', action='store_true',
                 help='Say which hosts were mapped already, and print the '
                      'cell uuid.')]),
    'map_instances': manage_args.Command(
        map_instances, 'Map the instances of a cell\'s database to it.', [
            _arg('cell_uuid', '--cell_uuid', required=True,
                 help='The cell whose instances are mapped to it.'),
            _arg('max_count', '--max-count',
                 help='Map at most this many, then exit 1 if more are left '
                      '(the next run goes on from there); default: all, '
                      'in batches of %d.' % MAP_BATCH),
            _arg('reset', '--reset', action='store_true',
                 help='Start from the first instance, not from where the '
                      'last run stopped.')]),
    'delete_host': manage_args.Command(
        delete_host, 'Unmap a host without instances from its cell.', [
            _arg('cell_uuid', '--cell_uuid', required=True,
                 help='The cell of the host.'),
            _arg('host', '--host', required=True,
                 help='The host to unmap.')]),
}

CATEGORY = manage_args.Category(cell_v2.CATEGORY.help, {
    'map_cell0': ACTIONS['map_cell0'], **cell_v2.CATEGORY.actions,
    **ACTIONS})
