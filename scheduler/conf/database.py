"""Options of the ``[database]`` group: oslo.db's, as Nova registers them.

The names and defaults are oslo.db's own (``connection``,
``max_pool_size``, ``max_overflow``, ``pool_timeout``,
``connection_recycle_time``, ``max_retries``/``retry_interval`` for
connecting at start, ``db_max_retries``/``db_retry_interval``/
``db_inc_retry_interval``/``db_max_retry_interval`` for retrying a write
that met a lost connection, ``mysql_sql_mode``...), so a nova.conf's
``[database]`` section means the same here. ``connection`` has no default:
a service that needs the database and finds it unset stops with an error
saying so. Examples of ``connection``:

* ``sqlite:////var/lib/gantt/gantt.sqlite``
* ``postgresql+psycopg2://gantt:SECRET@db.example.org/gantt``
* ``mysql+pymysql://gantt:SECRET@db.example.org/gantt?charset=utf8mb4``

TLS to the database goes in the URL's driver options, e.g.
``?sslmode=verify-full&sslrootcert=/etc/gantt/db-ca.pem`` for psycopg2 or
``?ssl_ca=/etc/gantt/db-ca.pem`` for PyMySQL.
"""

from oslo_config import cfg
from oslo_db import options as db_options

database_group = cfg.OptGroup(
    'database',
    title='Database options',
    help="The SQL database holding services, compute nodes, aggregates, "
         "instances, server groups and allocations.")


def register_opts(conf):
    conf.register_group(database_group)
    conf.register_opts(db_options.database_opts, group=database_group)


def list_opts():
    return {database_group: db_options.database_opts}
