"""Fixtures of the functional suite: RPC from the test process, and logs.

``rpc_transport``
    A function that points this process's transport at a cluster's
    virtual host (``scheduler.rpc.init``) and sets client options through
    the ``config`` fixture; the transport is cleaned up after the test::

        def test_x(cluster, rpc_transport):
            rpc_transport(cluster, rpc_response_timeout=20)
            api = rpcapi.SchedulerAPI()

When a test fails, the last lines of every daemon log of the clusters it
had running are added to its report, so that the reason is next to the
assertion.
"""

import pytest

from scheduler import config as gantt_config
from scheduler import rpc
from tests.functional import cluster as cluster_mod

LOG_TAIL_CHARS = 4000


@pytest.fixture
def rpc_transport(config):
    def init(cluster, **options):
        gantt_config.register_opts()
        # register_opts() sets this default only the first time it runs,
        # and the config fixture's reset after an earlier test unset it.
        config.config(control_exchange='gantt')
        for name, value in options.items():
            config.config(**{name: value})
        rpc.cleanup()
        return rpc.init(config.conf, url=cluster.transport_url)

    yield init
    rpc.cleanup()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and call.when == 'call':
        for running in cluster_mod.ACTIVE:
            for name, log in running.logs().items():
                lines = [line for line in log.splitlines()
                         if ' DEBUG ' not in line]
                report.sections.append((
                    'log of %s (%s, %s), DEBUG lines left out'
                    % (name, running.backend, running.workdir),
                    '\n'.join(lines)[-LOG_TAIL_CHARS:]))
    return report
