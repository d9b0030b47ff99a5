"""Options of the ``[nova_backend]`` group: the host mirror of Nova mode.

Only read in Nova mode (``[scheduler] backend = nova``), where ``[database]``
and ``[api_database]`` are Nova's own (a nova.conf drop-in). The scheduler
reads Nova's databases and Placement, read only, into a private mirror in
Gantt's schema that its host cache reads (see :mod:`scheduler.nova.mirror`)::

    [nova_backend]
    sync_interval = 5
"""

from oslo_config import cfg

nova_backend_group = cfg.OptGroup(
    'nova_backend',
    title='Nova mode options',
    help="How the scheduler mirrors Nova's hosts in Nova mode.")

NOVA_BACKEND_OPTS = [
    cfg.StrOpt('mirror_connection',
               secret=True,
               help="""
Where the mirror of Nova's hosts lives (an SQLAlchemy URL).

The mirror holds Nova's compute nodes, services, instances and
aggregates and Placement's inventories, usages, traits and aggregates in
Gantt's schema; the scheduler's host cache reads it, and nothing else
does. Unset, each scheduler process keeps it in an SQLite file of its own
in a private temporary directory, removed when the process exits (the
mirror is rebuilt from Nova at each start). An in-memory SQLite database
cannot be used: the host cache and the sync read it from other threads.

Possible values:

* Unset (the default): a private SQLite file per process.
* An SQLAlchemy URL of an empty database this scheduler alone uses; its
  schema is created or upgraded at start-up.

Related options:

* ``[nova_backend] sync_interval``
"""),
    cfg.IntOpt('sync_interval',
               default=5,
               min=1,
               help="""
Seconds between two syncs of the mirror from Nova and Placement.

Each sync reads Nova's compute nodes, services, instances and
aggregates, and lists Placement's providers with their generations; only
the providers whose generation moved (an inventory, trait, aggregate or
allocation change) are read again, and only what changed is written to
the mirror. A scheduler's own claims show in its host cache at once;
this interval bounds how long others' changes (another scheduler's
claims, a disabled service, a deleted server, a new compute) take to
reach its decisions.

Possible values:

* An integer number of seconds, at least 1.

Related options:

* ``[scheduler] host_state_refresh_interval``: how often the host cache
  reads the mirror.
"""),
]


def register_opts(conf):
    conf.register_group(nova_backend_group)
    conf.register_opts(NOVA_BACKEND_OPTS, group=nova_backend_group)


def list_opts():
    return {nova_backend_group: NOVA_BACKEND_OPTS}
