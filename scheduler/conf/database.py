"""Options of the ``[database]`` group: where the scheduler's SQL lives."""

from oslo_config import cfg

database_group = cfg.OptGroup(
    'database',
    title='Database options',
    help="The SQL database holding services, compute nodes, aggregates, "
         "instances, server groups and allocations.")

database_opts = [
    cfg.StrOpt('connection',
               secret=True,
               help="""
SQLAlchemy URL of the database.

The scheduler, the conductor and gantt-manage open it; compute agents never
do. The same schema and queries run on SQLite, PostgreSQL and
MariaDB/MySQL. There is no default: a service that needs the database and
finds this unset stops with an error saying so.

Possible values:

* ``sqlite:////var/lib/gantt/gantt.sqlite``
* ``postgresql+psycopg2://gantt:SECRET@db.example.org/gantt``
* ``mysql+pymysql://gantt:SECRET@db.example.org/gantt?charset=utf8mb4``

Related options:

* ``max_pool_size``
"""),
    cfg.IntOpt('max_pool_size',
               default=5,
               min=1,
               help="""
Maximum number of SQL connections kept open in the pool of each process.

Ignored for SQLite.
"""),
    cfg.IntOpt('connection_recycle_time',
               default=3600,
               min=1,
               help="""
Connections unused for longer than this many seconds are re-established.
"""),
]


def register_opts(conf):
    conf.register_group(database_group)
    conf.register_opts(database_opts, group=database_group)


def list_opts():
    return {database_group: database_opts}
