"""``gantt-manage api_db sync|version``: the API database's schema.

As ``nova-manage api_db``: ``sync`` runs the migrations of
``scheduler/db/api_migrations`` on ``[api_database] connection``;
``version`` prints the current and the head revision, as ``gantt-manage
db version`` does for ``[database]``. Both refuse to run without
``[api_database] connection`` (one cell has no API database)::

    gantt-manage --config-file /etc/gantt/gantt.conf api_db sync
"""

from scheduler.cmd import manage_args
from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler import exception

PROG = 'gantt-manage'


def require_api_database(what):
    if not db_api.api_database_configured():
        raise exception.ApiDatabaseRequired(what="'%s %s'" % (PROG, what))


def print_version(database):
    """Print the current and head revision of ``database`` ('main' or
    'api'), and what to run when they differ."""
    if database == 'api':
        require_api_database('api_db version')
        db_api.check_api_connection()
    else:
        db_api.check_connection()
    current = migration.db_version(database)
    head = migration.head_version(database)
    print('Current revision: %s' % (current or 'none (empty database)'))
    print('Head revision:    %s' % head)
    if current != head:
        print("The database is not at head: run '%s %s sync'."
              % (PROG, 'api_db' if database == 'api' else 'db'))
    return 0


def sync():
    require_api_database('api_db sync')
    db_api.check_api_connection()
    migration.db_sync(database='api')
    print('API database upgraded to revision %s.'
          % migration.db_version('api'))
    return 0


CATEGORY = manage_args.Category(
    'Schema of the API database ([api_database]).', {
        'sync': manage_args.Command(sync, 'Upgrade the API schema to the '
                                    'newest revision.', []),
        'version': manage_args.Command(
            lambda: print_version('api'), 'Print the current and the head '
            'revision of the API database.', []),
    })
