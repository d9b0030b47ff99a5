"""``gantt-manage db online_data_migrations``: carry a cell's aggregates
and server groups over to the API database.

As ``nova-manage db online_data_migrations``, with Nova's options,
output and exit codes. Run it with the configuration of each cell that
was a one-cell deployment before ``[api_database]`` was set (its
``[database]``), once the API database is synced::

    gantt-manage --config-file /etc/gantt/gantt.conf db online_data_migrations
    gantt-manage ... db online_data_migrations --max-count 100

Without ``--max-count`` it runs batches of 50 until nothing is left.
Exit codes: 0 nothing (further) to move; 1 ``--max-count`` was given
and rows were moved (run it again); 2 rows could not be moved (each is
named on stderr: an aggregate whose name or zone the API database
refuses, say) or a database failed, and (with ``--max-count``) nothing
else moved; 127 a ``--max-count`` that is not a positive integer. See
:mod:`scheduler.db.online_migrations`.
"""

import sys

from scheduler.cmd import manage_api_db
from scheduler.cmd import manage_table
from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler.db import online_migrations

PROG = 'gantt-manage'
BATCH = 50
EXIT_DONE = 0
EXIT_MORE = 1
EXIT_ERRORS = 2
EXIT_BAD_INPUT = 127


def _batch(movers, max_count, totals):
    """One pass of every migration over at most ``max_count`` rows in
    all; the rows moved."""
    moved = 0
    for mover in movers:
        found, done = mover(max_count - moved)
        if found:
            print('%d rows matched query %s, %d migrated'
                  % (found, mover.name, done))
        old = totals.get(mover.name, (0, 0))
        totals[mover.name] = (old[0] + found, old[1] + done)
        moved += done
        if moved >= max_count:
            break
    return moved


def online_data_migrations(max_count=None):
    if max_count is not None:
        try:
            max_count = int(max_count)
        except ValueError:
            max_count = 0
        if max_count < 1:
            print('Must supply a positive value for max_count')
            return EXIT_BAD_INPUT
    manage_api_db.require_api_database('db online_data_migrations')
    migration.check_schema()
    migration.check_schema(database='api')
    unlimited = max_count is None
    if unlimited:
        max_count = BATCH
        print('Running batches of %d until complete' % max_count)
    movers = online_migrations.migrations()
    totals = {}
    failed = None
    try:
        while True:
            moved = _batch(movers, max_count, totals)
            if not unlimited or not moved:
                break
    except Exception as error:
        # The rows moved so far stay moved; a run again goes on.
        failed = db_api.describe_error(error)
    print(manage_table.format_table(
        ['Migration', 'Total Needed', 'Completed'],
        [[name, found, done] for name, (found, done)
         in sorted(totals.items())]))
    errors = [(mover.name, uuid, reason) for mover in movers
              for uuid, reason in mover.errors]
    for name, uuid, reason in errors:
        sys.stderr.write('%s: error: %s: %s not moved: %s\n'
                         % (PROG, name, uuid, reason))
    if failed is not None:
        sys.stderr.write('%s: error: a migration failed: %s\n'
                         % (PROG, failed))
    ran = sum(done for _found, done in totals.values())
    # As Nova's: with --max-count, failures are fatal only when nothing
    # else moved (what moved may be all that stood in their way).
    if (failed is not None or errors) and (unlimited or not ran):
        print('\nSome migrations failed: see the errors on stderr.')
        return EXIT_ERRORS
    return EXIT_MORE if ran and not unlimited else EXIT_DONE
