"""Options of the ``[conductor]`` group."""

from oslo_config import cfg

conductor_group = cfg.OptGroup(
    'conductor',
    title='Conductor options',
    help="How the gantt-conductor service runs.")

conductor_opts = [
    cfg.IntOpt('workers',
               min=1,
               help="""
Number of conductor worker processes.

Possible values:

* unset: one worker per CPU of this host.
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
offloading shelved instances (``[DEFAULT] shelved_offload_time``).
"""),
]


def register_opts(conf):
    conf.register_group(conductor_group)
    conf.register_opts(conductor_opts, group=conductor_group)


def list_opts():
    return {conductor_group: conductor_opts}
