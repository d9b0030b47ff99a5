"""``gantt-manage db archive_deleted_rows`` and ``gantt-manage db purge``:
deleted instances to the shadow tables, and out of them.

As nova-manage's, with its options, output and exit codes::

    gantt-manage db archive_deleted_rows --max_rows 1000 --verbose
    gantt-manage db archive_deleted_rows --until-complete --before 2026-01-01
    gantt-manage db archive_deleted_rows --all-cells --until-complete --purge
    gantt-manage db purge --before "Thu Mar  5 14:03:00 UTC 2026" --verbose
    gantt-manage db purge --all --all-cells

``archive_deleted_rows`` moves deleted instances, and the migrations that
were theirs, to ``shadow_instances`` and ``shadow_migrations`` (see
:mod:`scheduler.db.archive`: never a live instance, nor a deleted one
still holding a claim), at most ``--max_rows`` rows (default 1000; a
soft limit, an instance moves with all its migrations), or with
``--until-complete`` in batches of that many until none is left
(``--sleep`` seconds between them). ``--before`` keeps the instances
deleted since then. ``--all-cells`` goes over every cell database of the
API database's cell mappings, cell0 included; ``--max_rows`` is then a
limit over all of them, unless ``--until-complete``. ``--verbose``
prints the rows moved per table (``cell1.instances`` with
``--all-cells``), or ``Nothing was archived.``; ``--purge`` purges the
shadow tables afterwards if rows were moved. Exit codes: 0 nothing was
archived; 1 rows were archived (run it again until 0); 2 an invalid
``--max_rows``; 3 the API database (``--all-cells``) cannot be read; 4
an invalid ``--before``.

``purge`` deletes the shadow tables' rows: all (``--all``) or those
older than ``--before`` (by ``deleted_at``, else ``updated_at``), in
``[database]`` or every cell. ``--verbose`` says how many rows left
which table. Exit codes: 0 rows were deleted; 1 neither ``--before``
nor ``--all`` was given; 2 an invalid ``--before``; 3 nothing was
deleted; 4 the API database (``--all-cells``) cannot be read.

``--before`` takes ISO 8601 (``2026-03-05``, ``2026-03-05 14:03:00``,
``2026-03-05T14:03:00+01:00``) or what ``date`` prints; a date without
a zone is UTC.
"""

import sys
import time

from scheduler import cells
from scheduler.cmd import manage_args
from scheduler.cmd import manage_table
from scheduler.db import archive
from scheduler.db import migration
from scheduler import exception

DEFAULT_MAX_ROWS = 1000
# The largest --max_rows (a signed 32-bit integer, as Nova's).
MAX_INT = 0x7FFFFFFF

# archive_deleted_rows
EXIT_NOTHING_ARCHIVED = 0
EXIT_ARCHIVED = 1
EXIT_INVALID_MAX_ROWS = 2
EXIT_NO_API_DATABASE = 3
EXIT_INVALID_BEFORE = 4

# purge
EXIT_PURGED = 0
EXIT_PURGE_USAGE = 1
EXIT_PURGE_INVALID_BEFORE = 2
EXIT_NOTHING_PURGED = 3
EXIT_PURGE_NO_API_DATABASE = 4


def _parse_before(before):
    """``(datetime or None, error message or None)``."""
    if not before:
        return None, None
    try:
        return manage_args.parse_date(before), None
    except ValueError as error:
        return None, 'Invalid value for --before: %s' % error


def _cells(all_cells):
    """``[None]`` (``[database]``), or every cell mapping; raises
    ApiDatabaseUnavailable."""
    if not all_cells:
        return [None]
    return cells.get_cells()


def _archive_cell(totals, max_rows, until_complete, verbose, before,
                  cell_name, sleep):
    """Archive one database (the targeted one) in batches; the rows
    moved. ``totals`` gathers ``{[cell.]table: rows}``."""
    migration.check_schema()
    moved_here = 0
    while True:
        moved = archive.archive_deleted_rows(max_rows, before=before)
        for table, rows in moved.items():
            name = '%s.%s' % (cell_name, table) if cell_name else table
            totals[name] = totals.get(name, 0) + rows
        moved_here += sum(moved.values())
        if not until_complete or not moved:
            return moved_here
        if verbose:
            sys.stdout.write('.')
            sys.stdout.flush()
        time.sleep(sleep)


def _archive_cells(cell_list, totals, max_rows, until_complete, verbose,
                   before, sleep):
    """Archive each cell in turn; False if interrupted (Ctrl-C)."""
    total = 0
    for cell in cell_list:
        # Without --until-complete, --max_rows is a limit over all cells.
        limit = max_rows if until_complete else max_rows - total
        if limit <= 0:
            break
        try:
            with cells.target(cell):
                total += _archive_cell(
                    totals, limit, until_complete, verbose, before,
                    cell.label() if cell else None, sleep)
        except KeyboardInterrupt:
            return False
    return True


def _sort_key(item):
    cell, _dot, table = item[0].rpartition('.')
    return cell, table


def archive_deleted_rows(max_rows=DEFAULT_MAX_ROWS, verbose=False,
                         until_complete=False, purge=False, before=None,
                         all_cells=False, sleep=0):
    """Move deleted rows to the shadow tables; see the module's doc."""
    if max_rows is None:
        max_rows = DEFAULT_MAX_ROWS
    if max_rows < 0:
        print('Must supply a positive value for max_rows')
        return EXIT_INVALID_MAX_ROWS
    if max_rows > MAX_INT:
        print('max rows must be <= %d' % MAX_INT)
        return EXIT_INVALID_MAX_ROWS
    try:
        cell_list = _cells(all_cells)
    except exception.ApiDatabaseUnavailable as error:
        print('Failed to connect to API DB so aborting this archival '
              'attempt. Please check your config file to make sure that '
              '[api_database]/connection is set and run this command '
              'again. (%s)' % error)
        return EXIT_NO_API_DATABASE
    before_date, error = _parse_before(before)
    if error:
        print(error)
        return EXIT_INVALID_BEFORE
    totals = {}
    if until_complete and verbose:
        sys.stdout.write('Archiving..')
        sys.stdout.flush()
    finished = _archive_cells(cell_list, totals, max_rows, until_complete,
                              verbose, before_date, sleep or 0)
    if until_complete and verbose:
        print('.complete' if finished else '.stopped')
    if verbose:
        if totals:
            print(manage_table.format_table(
                ['Table', 'Number of Rows Archived'],
                sorted(totals.items(), key=_sort_key)))
        else:
            print('Nothing was archived.')
    if totals and purge:
        if verbose:
            print('Rows were archived, running purge...')
        run_purge(purge_all=True, verbose=verbose, all_cells=all_cells)
    return EXIT_ARCHIVED if totals else EXIT_NOTHING_ARCHIVED


def _identity(cell):
    """How purge --verbose names a cell (Nova's ``CellMapping.identity``:
    ``uuid(name)``)."""
    if cell.name:
        return '%s(%s)' % (cell.uuid, cell.name)
    return cell.uuid or '-'


def _purge_one(identity, before_date, verbose):
    """Purge the targeted database's shadow tables; the rows deleted."""
    migration.check_schema()
    deleted = 0
    for table, rows, column in archive.purge_shadow_tables(before_date):
        if rows is None:
            if verbose:
                print('%s: Unable to purge table %s because it has no '
                      'timestamp column' % (identity, table))
            continue
        if verbose:
            print('%s: Deleted %d rows from %s based on timestamp column '
                  '%s' % (identity, rows, table, column or '(n/a)'))
        deleted += rows
    return deleted


def run_purge(before=None, purge_all=False, verbose=False, all_cells=False):
    """Delete rows of the shadow tables; see the module's doc."""
    if before is None and not purge_all:
        print('Either --before or --all is required')
        return EXIT_PURGE_USAGE
    before_date, error = _parse_before(before)
    if error:
        print(error)
        return EXIT_PURGE_INVALID_BEFORE
    try:
        cell_list = _cells(all_cells)
    except exception.ApiDatabaseUnavailable:
        print('Unable to get cell list from API DB. Is it configured?')
        return EXIT_PURGE_NO_API_DATABASE
    deleted = 0
    for cell in cell_list:
        identity = 'Cell %s' % _identity(cell) if cell else 'DB'
        with cells.target(cell):
            deleted += _purge_one(identity, before_date, verbose)
    return EXIT_PURGED if deleted else EXIT_NOTHING_PURGED


_arg = manage_args.arg
_BEFORE_HELP = ('Accepts ISO 8601 dates (YYYY-MM-DD [HH:MM[:SS]][+HH:MM]) '
                'and what the date command prints; UTC unless a zone is '
                'given.')

# The db category's actions of this module (manage.COMMANDS['db']).
DB_ACTIONS = {
    'archive_deleted_rows': manage_args.Command(
        archive_deleted_rows, 'Move deleted rows from production tables '
        'to shadow tables. Exit 0 if nothing was archived, 1 if rows were '
        '(run it again until 0), 2 for an invalid --max_rows, 3 if the '
        'API database cannot be read, 4 for an invalid --before.', [
            _arg('max_rows', '--max_rows', type=int, metavar='<number>',
                 default=DEFAULT_MAX_ROWS,
                 help='Maximum number of deleted rows to archive '
                      '(default: %(default)s). A soft limit: an instance '
                      'is archived with all of its migrations.'),
            _arg('before', '--before', metavar='<date>',
                 help='Archive rows that were deleted before this date. '
                      + _BEFORE_HELP),
            _arg('verbose', '--verbose', action='store_true',
                 help='Print how many rows were archived per table.'),
            _arg('until_complete', '--until-complete', action='store_true',
                 help='Run continuously until all deleted rows are '
                      'archived, using max_rows as the batch size.'),
            _arg('purge', '--purge', action='store_true',
                 help='Purge all data from shadow tables after archive '
                      'completes.'),
            _arg('all_cells', '--all-cells', action='store_true',
                 help='Run command across all cells.'),
            _arg('sleep', '--sleep', type=int, metavar='<seconds>',
                 default=0,
                 help='Seconds to sleep between batches with '
                      '--until-complete (default: %(default)s).'),
        ]),
    'purge': manage_args.Command(
        run_purge, 'Delete rows from the shadow tables. Exit 0 if rows '
        'were deleted, 1 without --before or --all, 2 for an invalid '
        '--before, 3 if nothing was deleted, 4 if the API database '
        'cannot be read.', [
            _arg('before', '--before', metavar='<before>',
                 help='Purge rows from shadow tables that are older than '
                      'this. ' + _BEFORE_HELP),
            _arg('purge_all', '--all', action='store_true',
                 help='Purge all rows in the shadow tables.'),
            _arg('verbose', '--verbose', action='store_true',
                 help='Print information about purged records.'),
            _arg('all_cells', '--all-cells', action='store_true',
                 help='Run against all cell databases.'),
        ]),
}
