"""gantt-compute: the fake-virt compute agent (one process per host).

It never opens the database: heartbeats and inventory go through the
conductor.
"""

from compute import manager
from compute import rpcapi
from scheduler.cmd import common


def main():
    common.run_daemon(manager.BINARY, rpcapi.RPC_TOPIC,
                      manager.ComputeManager, workers=lambda: 1,
                      uses_database=False,
                      make_reporter=lambda mgr: mgr.heartbeat)
