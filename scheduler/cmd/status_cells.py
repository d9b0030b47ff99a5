"""The cells checks of ``gantt-status upgrade check``.

Cells v2, as Nova's: with ``[api_database] connection`` set, the API
schema is at its newest migration; cell0 and at least one other cell
are mapped; and when no host is mapped yet, no cell has compute nodes (a
fresh install may have none: that passes, with a reminder to run
discovery).

Aggregates and server groups (:func:`groups_check`): where they live.
One cell: ``[database]``. With ``[api_database]``: the API database,
which must be at its newest migration; a cell whose own tables still
hold aggregates or server groups (from before cells) is a warning, as
Gantt does not read them there (``gantt-manage db
online_data_migrations`` moves them).
"""

from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from scheduler.cells import registry
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import api_models
from scheduler.db import mappings
from scheduler.db import migration
from scheduler.db import models

Code = upgradecheck.Code
Result = upgradecheck.Result


def _count_compute_nodes(cell):
    node = models.ComputeNode.__table__
    with db_api.target_cell(cell.database_connection):
        try:
            with db_api.reader() as session:
                return session.execute(sa.select(sa.func.count())
                                       .select_from(node)).scalar_one()
        except Exception as error:
            raise RuntimeError('cell %s: the database at %s: %s' % (
                cell.label(), config.redact_database_url(
                    db_api.targeted_connection()),
                db_api.describe_error(error))) from error


def check():
    """The check's Result; database errors are the caller's."""
    current = migration.db_version('api')
    expected = migration.head_version('api')
    if current != expected:
        return Result(Code.FAILURE, 'The API database is at revision %s, '
                      "this release needs %s: run 'gantt-manage api_db "
                      "sync'." % (current or 'none (no schema)', expected))
    with db_api.api_reader() as session:
        cells = [registry.cell_from_row(row)
                 for row in mappings.list_cells(session)]
        hosts = len(mappings.list_host_mappings(session))
    if len(cells) < 2:
        return Result(Code.FAILURE, 'There needs to be at least two cell '
                      'mappings, one for cell0 and one for your first cell. '
                      "Run 'gantt-manage cell_v2 map_cell0' and "
                      "'gantt-manage cell_v2 create_cell', then retry.")
    if not any(cell.is_cell0 for cell in cells):
        return Result(Code.FAILURE, "No cell0 mapping found. Run "
                      "'gantt-manage cell_v2 map_cell0' and then retry.")
    if hosts:
        return Result(Code.SUCCESS)
    try:
        computes = sum(_count_compute_nodes(cell) for cell in cells
                       if not cell.is_cell0)
    except RuntimeError as error:
        return Result(Code.FAILURE, 'Cannot count the compute nodes of '
                      '%s' % error)
    if computes:
        return Result(Code.FAILURE, 'No host mappings found but there are '
                      "compute nodes. Run 'gantt-manage cell_v2 "
                      "discover_hosts' and then retry.")
    return Result(Code.SUCCESS, 'No host mappings or compute nodes were '
                  "found. Remember to run 'gantt-manage cell_v2 "
                  "discover_hosts' when new compute hosts are deployed.")


def _count_own_records(cell):
    """``(aggregates, server groups)`` in the cell database's own tables."""
    with db_api.target_cell(cell.database_connection):
        try:
            with db_api.reader() as session:
                return tuple(session.execute(sa.select(sa.func.count())
                                             .select_from(model))
                             .scalar_one()
                             for model in (models.Aggregate,
                                           models.InstanceGroup))
        except Exception as error:
            raise RuntimeError('cell %s: the database at %s: %s' % (
                cell.label(), config.redact_database_url(
                    db_api.targeted_connection()),
                db_api.describe_error(error))) from error


def groups_check():
    """The Aggregates and server groups check's Result; API database
    errors are the caller's."""
    current = migration.db_version('api')
    expected = migration.head_version('api')
    if current != expected:
        return Result(Code.FAILURE, 'They live in the API database, which '
                      'is at revision %s; this release needs %s: run '
                      "'gantt-manage api_db sync'."
                      % (current or 'none (no schema)', expected))
    with db_api.api_reader() as session:
        cells = [registry.cell_from_row(row)
                 for row in mappings.list_cells(session)]
        in_api = [session.execute(sa.select(sa.func.count())
                                  .select_from(model)).scalar_one()
                  for model in (api_models.Aggregate,
                                api_models.InstanceGroup)]
    left, unread = [], []
    for cell in cells:
        if cell.is_cell0 or cell.database_connection == \
                db_api.api_connection():
            continue
        try:
            aggregates, groups = _count_own_records(cell)
        except RuntimeError as error:
            unread.append(str(error))
            continue
        if aggregates or groups:
            left.append('cell %s holds %d aggregate(s) and %d server '
                        'group(s)' % (cell.label(), aggregates, groups))
    if left:
        return Result(Code.WARNING, 'Aggregates and server groups are read '
                      'from the API database only; %s in its own tables, '
                      "unused: move them with 'gantt-manage --config-file "
                      "<that cell's> db online_data_migrations'."
                      % '; '.join(left))
    if unread:
        return Result(Code.WARNING, 'Cannot tell whether these cells hold '
                      'aggregates or server groups of their own: %s.'
                      % '; '.join(unread))
    return Result(Code.SUCCESS, 'In the API database: %d aggregate(s), %d '
                  'server group(s).' % tuple(in_api))
