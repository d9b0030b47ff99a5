"""Options of the ``[conductor]`` group."""

from oslo_config import cfg

conductor_group = cfg.OptGroup(
    'conductor',
    title='Conductor options',
    help="How the gantt-conductor service runs.")

conductor_opts = [
    cfg.IntOpt('workers',
               min=0,
               help="""
Number of conductor worker processes.

Possible values:

* unset or 0: one worker per CPU of this host (0 as in Nova).
* A positive integer.
"""),
    cfg.IntOpt('migrate_max_retries',
               default=-1,
               min=-1,
               help="""
Number of times to retry a live migration before failing.

Possible values:

* -1: retry as long as there are hosts (the default).
* 0: do not retry.
* A positive integer.
"""),
    cfg.IntOpt('periodic_task_interval',
               default=60,
               min=1,
               help="""
Seconds between two runs of the conductor's periodic tasks: timing out
instances stuck in ``building`` (``[DEFAULT] instance_build_timeout``) and
offloading shelved instances (``[DEFAULT] shelved_offload_time``),
releasing stray claims and finishing interrupted deletes.
"""),
    cfg.IntOpt('stray_allocation_grace_period',
               default=300,
               min=0,
               help="""
Seconds a claim must exist before the conductor may release it as stray.

The conductor's periodic task releases claims that no consumer holds
legitimately: those of an instance in ERROR without a host, deleted or
shelved-offloaded, of a consumer that is neither an instance nor a
migration, of a settled instance on a node other than its own
(superseded), and of a migration that ended. The age is measured from the
claim's creation, so that a claim made a moment ago for a request still
in flight is never touched. ``gantt-manage db check`` lists the same
claims whatever their age.

Possible values:

* 0: release stray claims at the next periodic run.
* A positive integer: seconds; keep it well above
  ``rpc_response_timeout``.

Related options:

* ``[conductor] periodic_task_interval``
* ``[DEFAULT] instance_build_timeout``
"""),
    cfg.IntOpt('delete_retry_interval',
               default=60,
               min=1,
               help="""
Seconds after which the conductor finishes a delete left half-way.

A delete that an outage interrupted (the conductor died, the compute did
not answer, the database went away) leaves its instance in task_state
``deleting``. The conductor's periodic task finishes every delete whose
instance has not changed for this many seconds: it tells the compute if
its service is up, then releases the claims and marks the instance
deleted, as the delete would have.

Possible values:

* A positive integer: seconds.

Related options:

* ``[conductor] periodic_task_interval``
"""),
    cfg.IntOpt('build_request_poll_interval',
               default=10,
               min=1,
               help="""
Seconds between two runs of the super-conductor's build request task.

Only a conductor with ``[api_database] connection`` (a super-conductor)
runs it, once when it starts and then every this many seconds. It renews
the build requests this process is working on (so that no other
super-conductor takes them over), and takes over and schedules again the
build requests nobody works on: those of a super-conductor that died
between accepting a build and creating it in a cell (not renewed for
``build_request_grace_period`` seconds), and those left behind while a
cell's database was away (once that database has answered two runs in a
row). A build request older than ``[DEFAULT] instance_build_timeout`` is
put in cell0 in ERROR instead, with a fault saying why.

Possible values:

* A positive integer: seconds; keep it well below
  ``build_request_grace_period``.

Related options:

* ``[conductor] build_request_grace_period``
* ``[DEFAULT] instance_build_timeout``
"""),
    cfg.IntOpt('build_request_grace_period',
               default=60,
               min=1,
               help="""
Seconds after which another super-conductor takes over a build request
its owner stopped renewing.

Each super-conductor process renews the build requests it works on every
``build_request_poll_interval`` seconds. One that has not been renewed for
this long belongs to a process that died (or hung): another
super-conductor (or this one, restarted) releases the claims and removes
any half-created instance that process left in the cells, and schedules
the build again. Accepting a build is idempotent, so a build is never
built twice; and the process that lost a build request can no longer map
its instance (it undoes its own creation instead). The super-conductors'
clocks must agree to well within this period.

Possible values:

* A positive integer: seconds, more than twice
  ``build_request_poll_interval`` (a conductor refuses to start
  otherwise).

Related options:

* ``[conductor] build_request_poll_interval``
* ``[DEFAULT] instance_build_timeout``
"""),
]


def register_opts(conf):
    conf.register_group(conductor_group)
    conf.register_opts(conductor_opts, group=conductor_group)


def list_opts():
    return {conductor_group: conductor_opts}
