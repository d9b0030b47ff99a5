"""Host discovery: map the compute hosts of every cell, as Nova's
``discover_hosts``.

A compute node is scheduled onto only once it is mapped. In one cell
(no ``[api_database]``), discovery marks the unmapped nodes of
``[database]`` mapped, as it always did. With cells, for each cell but
cell0 (disabled cells too, as Nova), under ``target_cell``:

1. read the cell's unmapped compute nodes (``by_service``: its compute
   services' hosts instead);
2. create a host mapping in the API database for each host that has
   none;
3. mark mapped the unmapped nodes of the hosts mapped to this cell.

Each step can be run again: a discovery cut short (a database went away
between 2 and 3) is finished by the next one, and two discoveries at
once (the scheduler's periodic one and ``gantt-manage``) map each host
once: the loser of a race for a host mapping reads the winner's. A host
name mapped to another cell is reported and its nodes stay unmapped (a
host is in one cell). A cell whose database cannot be read is reported
in ``failed`` and the others are discovered::

    result = discovery.discover_hosts(status=print)
    result.nodes          # [(CellMapping, node row)] newly mapped
    result.host_mappings  # [(CellMapping, host)] created
    result.failed         # [(CellMapping, error message)]
"""

import dataclasses

from oslo_db import exception as db_exc
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from scheduler import cells
from scheduler.cells import registry
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import mappings
from scheduler.db import services as db_services

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Result:
    nodes: list = dataclasses.field(default_factory=list)
    host_mappings: list = dataclasses.field(default_factory=list)
    conflicts: list = dataclasses.field(default_factory=list)
    failed: list = dataclasses.field(default_factory=list)


def _quiet(message):
    pass


def discover_hosts(cell_uuid=None, by_service=False, service_binary=None,
                   status=None):
    """Map the hosts of every cell (or of cell ``cell_uuid``); return a
    :class:`Result`. ``by_service`` maps the hosts of the services of
    ``service_binary`` instead of those of the unmapped nodes.

    :raises exception.CellMappingNotFound: no cell ``cell_uuid``.
    :raises exception.ApiDatabaseUnavailable: the API database cannot be
        read.
    """
    status = status or _quiet
    result = Result()
    if not db_api.api_database_configured():
        with db_api.target_cell(None):
            with db_api.writer() as session:
                rows = db_compute_nodes.map_unmapped_nodes(session)
        result.nodes.extend((cells.LOCAL, row) for row in rows)
        return result
    with registry.database_errors('reading the cell mappings'):
        with db_api.api_reader() as session:
            found = ([mappings.get_cell(session, cell_uuid)] if cell_uuid
                     else mappings.list_cells(session))
    if not cell_uuid:
        status('Found %d cell mappings.' % len(found))
    for cell in [registry.cell_from_row(row) for row in found]:
        if cell.is_cell0:
            status('Skipping cell0 since it does not contain hosts.')
            continue
        if cell.name:
            status("Getting computes from cell '%s': %s"
                   % (cell.name, cell.uuid))
        else:
            status('Getting computes from cell: %s' % cell.uuid)
        try:
            with db_api.target_cell(cell.database_connection):
                _discover_cell(cell, found, by_service, service_binary,
                               status, result)
        except (sa_exc.SQLAlchemyError, db_exc.DBError) as error:
            with db_api.target_cell(cell.database_connection):
                reason = 'cannot use its database at %s: %s' % (
                    config.redact_database_url(
                        db_api.targeted_connection()),
                    db_api.describe_error(error))
            LOG.error('Host discovery skipped cell %s: %s', cell.label(),
                      reason)
            status('Skipped cell %s: %s' % (cell.uuid, reason))
            result.failed.append((cell, reason))
    registry.clear_cache()
    return result


def _cell_id(rows, cell):
    return next(row.id for row in rows if row.uuid == cell.uuid)


def _mapped_to(hosts):
    """``{host: cell uuid}`` of those of ``hosts`` that are mapped."""
    with registry.database_errors('reading host mappings'):
        with db_api.api_reader() as session:
            return {host: row.cell_uuid for host, row in
                    mappings.host_mappings_of(session, hosts).items()}


@db_api.retry_on_api_db_error
def _create_host_mapping(host, cell_id):
    with db_api.api_writer() as session:
        mappings.create_host_mapping(session, host, cell_id)


def _map_hosts(cell, cell_id, hosts, status, result):
    """Create the host mappings ``hosts`` lack; return ``{host: cell
    uuid}`` of every one of ``hosts``."""
    where = _mapped_to(hosts)
    for host in sorted(set(hosts) - set(where)):
        with registry.database_errors('mapping host %s' % host):
            try:
                _create_host_mapping(host, cell_id)
            except db_exc.DBDuplicateEntry:
                created = False
            else:
                created = True
        if not created:
            # Another discovery mapped it meanwhile: read where to.
            where.update(_mapped_to([host]))
            continue
        status('Creating host mapping for host %s' % host)
        result.host_mappings.append((cell, host))
        where[host] = cell.uuid
    return where


@db_api.retry_on_db_error
def _map_nodes(hosts):
    with db_api.writer() as session:
        return db_compute_nodes.map_unmapped_nodes(session, hosts=hosts)


def _discover_cell(cell, cell_rows, by_service, service_binary, status,
                   result):
    with db_api.reader() as session:
        nodes = db_compute_nodes.unmapped_nodes(session)
        if by_service:
            hosts = {row.host for row in db_services.list_services(
                session, binary=service_binary)}
        else:
            hosts = {node.host for node in nodes}
    for node in nodes:
        status("Checking host mapping for compute host '%s': %s"
               % (node.host, node.uuid))
    before = len(result.host_mappings)
    where = _map_hosts(cell, _cell_id(cell_rows, cell), hosts, status,
                       result)
    if by_service:
        # Nodes of hosts mapped before (by service or by an older run)
        # are mapped too: a mapped host's nodes are scheduled to.
        where.update(_mapped_to({node.host for node in nodes}))
    ours = {host for host, uuid in where.items() if uuid == cell.uuid}
    for host in sorted({node.host for node in nodes} - ours):
        if host in where:
            message = ('host %s of cell %s is mapped to cell %s: its '
                       'nodes stay unmapped' % (host, cell.uuid,
                                                where[host]))
            LOG.warning('Host discovery: %s', message)
            status('Warning: %s' % message)
            result.conflicts.append((cell, host, where[host]))
    if ours:
        result.nodes.extend((cell, row) for row in _map_nodes(ours))
    status('Found %d unmapped computes in cell: %s'
           % (len(result.host_mappings) - before, cell.uuid))
