"""``[upgrade_levels] conductor = 1.0`` and ``compute = 1.0``, as while
old conductors and computes still run: the computes' reports (API 1.0), a
1.0 build and its ``build_and_run_instance`` (compute API 1.0) still go
through, in-process (fake:// transport, SQLite)."""

from oslo_utils import uuidutils
import pytest

from conductor import rpcapi as conductor_rpcapi
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import services as db_services
from scheduler import version
from tests.unit import inprocess


def _versions():
    with db_api.reader() as session:
        return {(row.binary, row.host): row.version
                for row in db_services.list_services(session)}


@pytest.fixture
def capped(database, config):
    inprocess.configure(config, exact_ratios=True)
    config.config(conductor='1.0', compute='1.0', group='upgrade_levels')
    return config


def test_a_conductor_capped_at_1_0_still_hears_computes_and_builds(capped):
    # The cluster waits for each compute's inventory report (1.0).
    with inprocess.Cluster({'h1': {'vcpus': 4, 'memory_mb': 4096,
                                   'local_gb': 100}}) as cluster:
        api = conductor_rpcapi.ComputeTaskAPI()
        assert not api.client.can_send_version('1.1')
        uuids = [uuidutils.generate_uuid()]
        api.build_instances(gantt_context.get_admin_context(), uuids,
                            cluster.spec(1, 512, 1))
        rows = cluster.wait_built(uuids)
        assert (rows[uuids[0]].vm_state, rows[uuids[0]].host) == (
            'active', 'h1')
    # Capped below 1.2, the compute's heartbeat says no version; the
    # daemons that write their own heartbeat record theirs.
    assert _versions() == {
        ('gantt-compute', 'h1'): None,
        ('gantt-conductor', 'conductor'): version.SERVICE_VERSION,
        ('gantt-scheduler', 'scheduler'): version.SERVICE_VERSION}


def test_uncapped_every_service_records_its_version(database, config):
    inprocess.configure(config)
    with inprocess.Cluster({'h1': {'vcpus': 4, 'memory_mb': 4096,
                                   'local_gb': 100}}) as cluster:
        cluster.wait_until(
            lambda: _versions().get(('gantt-compute', 'h1')) is not None,
            10, 'the compute heartbeat')
    assert set(_versions().values()) == {version.SERVICE_VERSION}
