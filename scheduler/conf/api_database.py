"""Options of the ``[api_database]`` group: the database of the cell
mappings, as Nova's.

With ``[api_database] connection`` set, Gantt runs as cells v2: this
database holds ``cell_mappings``, ``host_mappings`` and
``instance_mappings`` (``gantt-manage api_db sync`` builds it and
``gantt-manage cell_v2`` fills it), and each cell's ``[database]`` holds
that cell's compute nodes, services, instances and claims. Unset (the
default), Gantt is one cell on ``[database]``, exactly as before.

The other options are oslo.db's, copied from the ``[database]`` group
under the same names and defaults (as Nova copies them, so that one
group's options can be deprecated without touching the other's): the
pool of the API database (``max_pool_size``, ``max_overflow``,
``pool_timeout``, ``connection_recycle_time``), its wait at start
(``max_retries``, ``retry_interval``) and the retries of a write that met
a lost connection (``db_max_retries``, ``db_retry_interval``,
``db_inc_retry_interval``, ``db_max_retry_interval``). Example::

    [api_database]
    connection = postgresql+psycopg2://gantt:SECRET@db.example.org/gantt_api
"""

import copy

from oslo_config import cfg
from oslo_db import options as db_options

api_database_group = cfg.OptGroup(
    'api_database',
    title='API database options',
    help="""
The database shared by all cells: cell mappings, host mappings and instance
mappings.

``connection`` unset (the default): no cells, one database (``[database]``)
as before. Set: every scheduler reads the cells from here and each host's
cell from its host mapping.

Related options:

* ``[database] connection``: the database of this service's own cell.
""")


def _api_database_opts():
    opts = copy.deepcopy(db_options.database_opts)
    for opt in opts:
        if opt.name == 'connection':
            opt.help = """
The SQLAlchemy URL of the API database (cell, host and instance mappings).

Possible values:

* Unset (the default): one cell on ``[database] connection``; the
  ``gantt-manage cell_v2`` commands (but ``discover_hosts``) refuse to run.
* A URL, e.g. ``postgresql+psycopg2://gantt:SECRET@db.example.org/gantt_api``
  or ``mysql+pymysql://gantt:SECRET@db.example.org/gantt_api``; build its
  schema with ``gantt-manage api_db sync``.

Related options:

* ``[database] connection``: this service's cell database.
* ``[scheduler] discover_hosts_in_cells_interval``: maps new hosts of every
  cell.
"""
    return opts


api_database_opts = _api_database_opts()


def register_opts(conf):
    conf.register_group(api_database_group)
    conf.register_opts(api_database_opts, group=api_database_group)


def list_opts():
    return {api_database_group: api_database_opts}
