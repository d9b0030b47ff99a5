"""An instance is ACTIVE only once its compute said its spawn succeeded.

In-process, through the real conductor, scheduler and computes (fake://
transport, the test's SQLite database): the instance syncs that repair
lost spawn reports never take a spawn under way for one that runs, a
failed spawn moves to its alternate, and a build whose message never
reached its compute moves to its alternate too.
"""

import threading
import time

import pytest
import sqlalchemy as sa

from compute import manager as compute_manager
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler import rpc
from tests.unit.conductor import sql_state
from tests.unit import inprocess

SMALL = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}
BIG = {'vcpus': 16, 'memory_mb': 65536, 'local_gb': 1000}


@pytest.fixture
def cluster_config(database, config):
    config = inprocess.configure(config, exact_ratios=True)
    # Syncs with the conductor every second: several during one spawn.
    config.config(sync_power_state_interval=1)
    config.config(max_attempts=3, group='scheduler')
    return config


class _Watch:
    """Every (vm_state, host) an instance goes through, polled."""

    def __init__(self, uuid):
        self.uuid = uuid
        self.seen = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            with db_api.reader() as session:
                row = session.execute(sa.select(
                    models.Instance.vm_state, models.Instance.host).where(
                    models.Instance.uuid == self.uuid)).first()
            if row is not None:
                self.seen.add((row.vm_state, row.host))
            time.sleep(0.02)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()


def test_a_spawn_that_fails_after_syncs_is_never_active(cluster_config):
    # Three syncs run while the broken host spawns; then its spawn fails.
    broken = dict(BIG, build_failure_rate=1.0, spawn_time=3.0)
    with inprocess.Cluster({'broken': broken, 'h2': SMALL}) as cluster:
        uuid = cluster.boot(vcpus=1, memory_mb=1024, root_gb=10)[0]
        with _Watch(uuid) as watch:
            row = cluster.wait_built([uuid], timeout=30)[uuid]
    assert ('building', 'broken') in watch.seen
    assert ('active', 'broken') not in watch.seen
    assert row.vm_state == 'active' and row.host == 'h2'
    assert row.build_alternates is None
    assert sql_state.allocations() == {uuid: 'h2'}


def test_a_build_message_lost_on_the_way_moves_to_its_alternate(
        cluster_config, monkeypatch):
    real = compute_manager.ComputeManager.build_and_run_instance
    dropped = []

    @rpc.expose
    def lossy(self, ctxt, instance_uuid, node, request_spec, host_list):
        if self.host == 'lossy':
            dropped.append(instance_uuid)   # as a broker that restarted
            return None
        return real(self, ctxt, instance_uuid, node, request_spec,
                    host_list)

    monkeypatch.setattr(compute_manager.ComputeManager,
                        'build_and_run_instance', lossy)
    with inprocess.Cluster({'lossy': BIG, 'h2': SMALL}) as cluster:
        uuid = cluster.boot(vcpus=1, memory_mb=1024, root_gb=10)[0]
        row = cluster.wait_built([uuid], timeout=30)[uuid]
    assert dropped == [uuid]
    assert row.vm_state == 'active' and row.host == 'h2'
    assert sql_state.allocations() == {uuid: 'h2'}


def test_a_lost_build_without_alternates_ends_in_error(cluster_config,
                                                       monkeypatch):
    cluster_config.config(max_attempts=1, group='scheduler')

    @rpc.expose
    def lost(self, ctxt, instance_uuid, node, request_spec, host_list):
        return None

    monkeypatch.setattr(compute_manager.ComputeManager,
                        'build_and_run_instance', lost)
    with inprocess.Cluster({'h1': SMALL}) as cluster:
        uuid = cluster.boot(vcpus=1, memory_mb=1024, root_gb=10)[0]
        row = cluster.wait_built([uuid], timeout=30)[uuid]
    assert row.vm_state == 'error'
    assert 'never reached compute h1' in row.fault
    assert 'Exceeded maximum number of retries' in row.fault
    assert sql_state.allocations() == {}


def test_a_build_message_that_comes_after_the_move_never_runs_there(
        cluster_config, monkeypatch):
    # 'late' gets the build first (the most free RAM), but its message
    # arrives only once the conductor took the build back and moved it
    # to h2, as a cast that waited out a broker outage does; h2 spawns
    # slowly, so late's spawn ends while h2 still builds.
    real = compute_manager.ComputeManager.build_and_run_instance
    delivered = []

    def rows():
        with db_api.reader() as session:
            return session.execute(sa.select(
                models.Instance.uuid, models.Instance.host)).all()

    def deliver_late(agent, args):
        inprocess.Cluster.wait_until(
            lambda: any(row.host == 'h2' for row in rows()), 30,
            'the build to move to h2')
        real(agent, *args)
        delivered.append(args[1])

    @rpc.expose
    def held(self, ctxt, instance_uuid, node, request_spec, host_list):
        args = (ctxt, instance_uuid, node, request_spec, host_list)
        if self.host != 'late':
            return real(self, *args)
        thread = threading.Thread(target=deliver_late, args=(self, args),
                                  daemon=True)
        thread.start()
        return None

    monkeypatch.setattr(compute_manager.ComputeManager,
                        'build_and_run_instance', held)
    with inprocess.Cluster({'late': BIG,
                            'h2': dict(SMALL, spawn_time=2.0)}) as cluster:
        late = next(server.manager for server in cluster.services
                    if getattr(server.manager, 'host', None) == 'late')
        uuid = cluster.boot(vcpus=1, memory_mb=1024, root_gb=10)[0]
        with _Watch(uuid) as watch:
            cluster.wait_until(lambda: delivered == [uuid], 30,
                               'the late build message to be handled')
            row = cluster.wait_built([uuid], timeout=30)[uuid]
            late_runs = dict(late._instances)
    assert ('active', 'late') not in watch.seen
    assert row.vm_state == 'active' and row.host == 'h2'
    # Spawned on late, refused there, forgotten: it runs only on h2.
    assert uuid not in late_runs
    assert sql_state.allocations() == {uuid: 'h2'}
