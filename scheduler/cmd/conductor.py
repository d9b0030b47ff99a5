"""gantt-conductor: the computes' conduit to SQL and the build conductor.

Runs ``[conductor] workers`` processes (default: one per CPU).
"""

from conductor import manager
from conductor import rpcapi
from scheduler.cmd import common
from scheduler import conf

CONF = conf.CONF


def main():
    common.run_daemon('gantt-conductor', rpcapi.RPC_TOPIC,
                      manager.ConductorManager,
                      workers=lambda: CONF.conductor.workers)
