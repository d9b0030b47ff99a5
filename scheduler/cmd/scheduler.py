"""gantt-scheduler: answers select_destinations on topic ``scheduler``.

Runs ``[scheduler] workers`` processes (default: one per CPU).
"""

from scheduler.cmd import common
from scheduler import conf
from scheduler import manager
from scheduler import rpcapi

CONF = conf.CONF


def main():
    common.run_daemon('gantt-scheduler', rpcapi.RPC_TOPIC,
                      manager.SchedulerManager,
                      workers=lambda: CONF.scheduler.workers)
